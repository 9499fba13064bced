"""A gRPC call's deadline as the proxy reads it and passes it on (gRPC over HTTP/2,
PROTOCOL-HTTP2.md: ``grpc-timeout``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.route.grpc_timeout import forwarded_fields, grpc_timeout, timeout_value

GRPC = [(b"content-type", b"application/grpc+proto")]


@pytest.mark.parametrize(
    ("seconds", "value"),
    [
        (0.0, b"1n"),  # passed already: the least there is
        (0.0003, b"300000n"),
        (0.25, b"250000u"),
        (2.5, b"2500000u"),
        (1000.0, b"1000000m"),
        (200_000.0, b"200000S"),
        (1e9, b"16666666M"),
        (1e12, b"99999999H"),  # the longest there is,
    ],
)
def test_a_timeout_is_written_in_the_finest_unit_that_fits_rounded_down(
    seconds: float, value: bytes
) -> None:
    assert timeout_value(seconds) == value


@given(st.floats(min_value=1e-9, max_value=1e11, allow_nan=False))
def test_a_written_timeout_reads_back_never_longer_and_within_its_unit(seconds: float) -> None:
    written = timeout_value(seconds)
    back = grpc_timeout([(b"grpc-timeout", written)])
    assert len(written) <= 9
    assert back <= seconds * (1 + 1e-9) or written[:-1] == b"1"
    assert back > seconds / 2  # never less than half: the unit is the finest that fits


def test_the_remaining_time_replaces_the_clients_timeout_in_place() -> None:
    fields = [(b":path", b"/s/m"), (b"grpc-timeout", b"10S"), (b"x", b"y")]
    assert forwarded_fields(fields, 2.5) == [
        (b":path", b"/s/m"),
        (b"grpc-timeout", b"2500000u"),
        (b"x", b"y"),
    ]
    unreadable = [(b"grpc-timeout", b"soon")]
    assert forwarded_fields(unreadable, 1.0) == [(b"grpc-timeout", b"1000000u")]


def test_a_grpc_call_without_a_timeout_gets_the_routes_and_other_requests_none() -> None:
    assert forwarded_fields(GRPC, 3.0) == [*GRPC, (b"grpc-timeout", b"3000000u")]
    plain = [(b"content-type", b"application/grpc-web")]  # another media type
    assert forwarded_fields(plain, 3.0) is plain
    assert forwarded_fields(GRPC, math.inf) is GRPC  # no deadline: nothing to say
