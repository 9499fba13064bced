"""What the proxy exchanges with an HTTP/2 backend (coxswain/http2/backend.py): the request's
header list, the response head checked, the trailers as HTTP/2 sends them."""

from __future__ import annotations

import pytest

from coxswain.http2.backend import request_fields, response_head, trailer_list


def test_the_request_list_has_its_pseudo_fields_first_and_no_connection_fields() -> None:
    fields = request_fields(
        method=b"POST",
        scheme=b"http",
        authority=b"a.example",
        path=b"/svc/Call",
        headers=[(b"Host", b"a.example"), (b"Content-Type", b"application/grpc"), (b"te", b"x")],
    )
    assert fields == [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":authority", b"a.example"),
        (b":path", b"/svc/Call"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ]


@pytest.mark.parametrize(
    ("value", "status"),
    [(b"200", 200), (b"204", 204), (b"404", 404), (b"599", 599), (b"999", 999)],
)
def test_a_three_digit_status_is_read(value: bytes, status: int) -> None:
    head = response_head([(b":status", value)], ended=False, head_request=False)
    assert not isinstance(head, str)
    assert head.status == status


@pytest.mark.parametrize("value", [b"", b"20", b"2000", b"2a0", b" 20", b"-20", b"20 "])
def test_any_other_status_is_malformed(value: bytes) -> None:
    assert response_head([(b":status", value)], ended=False, head_request=False) == (
        "invalid :status"
    )


@pytest.mark.parametrize("value", [b"099", b"100", b"199"])
def test_an_informational_or_lower_status_is_no_final_head(value: bytes) -> None:
    assert response_head([(b":status", value)], ended=True, head_request=False) == (
        "missing or informational :status"
    )


def test_a_head_without_status_or_with_a_second_one_is_malformed() -> None:
    assert response_head([(b"server", b"x")], ended=True, head_request=False) == (
        "missing or informational :status"
    )
    twice = [(b":status", b"200"), (b":status", b"200")]
    assert response_head(twice, ended=True, head_request=False) == (
        "unexpected pseudo-header field ':status'"
    )


def test_trailers_lose_their_connection_fields_and_capitals() -> None:
    assert trailer_list(((b"Grpc-Status", b"0"), (b"connection", b"close"))) == [
        (b"grpc-status", b"0")
    ]
