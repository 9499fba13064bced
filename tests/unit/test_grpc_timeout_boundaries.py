"""``grpc-timeout`` at its edges (``route.grpc_timeout``; gRPC over HTTP/2,
PROTOCOL-HTTP2.md, "Requests": at most 8 ASCII digits and a unit): values of 0, 1, 8 and 9
digits, an empty field, the largest value of each unit written back, and a call that is not
gRPC given none."""

from __future__ import annotations

import math

import pytest

from coxswain.route.grpc_timeout import forwarded_fields, grpc_timeout, timeout_value


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (b"1S", 1.0),
        (b"99999999S", 99_999_999.0),
        (b"999999999S", math.inf),
        (b"S", math.inf),
        (b"", math.inf),
        (b"1x", math.inf),
        (b"-1S", math.inf),
        (b"2H", 7200.0),
    ],
)
def test_a_timeout_has_1_to_8_digits_and_a_unit(value: bytes, seconds: float) -> None:
    assert grpc_timeout([(b"grpc-timeout", value)]) == seconds


@pytest.mark.parametrize(
    ("seconds", "written"),
    [
        (0.0, b"1n"),
        (99_999_999e-9, b"99999999n"),
        (0.1, b"100000u"),
        (99_999_999 * 60.0, b"99999999M"),
        (100_000_000 * 60.0, b"1666666H"),
        (1e12, b"99999999H"),
        (3600.0 * 1e8 * 60, b"99999999H"),
    ],
)
def test_a_timeout_is_written_in_the_finest_unit_that_fits(seconds: float, written: bytes) -> None:
    assert timeout_value(seconds) == written


def test_only_a_grpc_call_gets_a_timeout_it_did_not_send() -> None:
    plain = [(b"content-type", b"application/json")]
    assert forwarded_fields(plain, 1.0) == plain
    assert forwarded_fields([(b"te", b"trailers")], 1.0) == [(b"te", b"trailers")]
    grpc = [(b"content-type", b"application/grpc")]
    assert forwarded_fields(grpc, 1.0) == [*grpc, (b"grpc-timeout", b"1000000u")]
