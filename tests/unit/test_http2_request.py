"""An HTTP/2 request's header list as a request head, with a connection's memo of the last."""

from __future__ import annotations

from coxswain.http2.request import RequestHeads, request_head

FIELDS = [
    (b":method", b"GET"),
    (b":scheme", b"http"),
    (b":path", b"/a"),
    (b":authority", b"example.com"),
    (b"accept", b"*/*"),
]


def test_an_equal_header_list_gets_an_equal_head_of_its_own() -> None:
    heads = RequestHeads()
    first = heads.head(FIELDS, ended=True)
    second = heads.head(list(FIELDS), ended=True)
    assert first == second == request_head(FIELDS, ended=True)
    assert first is not second
    assert not isinstance(first, str)
    first.headers = ()  # the proxy sets a request's fields on its own head
    third = heads.head(FIELDS, ended=True)
    assert third == second


def test_the_end_of_the_stream_and_a_changed_field_are_heard() -> None:
    heads = RequestHeads()
    assert heads.head(FIELDS, ended=True) == request_head(FIELDS, ended=True)
    with_body = heads.head(FIELDS, ended=False)
    assert not isinstance(with_body, str)
    assert with_body.chunked
    other = [*FIELDS[:2], (b":path", b"/b"), *FIELDS[3:]]
    moved = heads.head(other, ended=False)
    assert not isinstance(moved, str)
    assert moved.target == b"/b"


def test_a_malformed_list_is_refused_every_time() -> None:
    heads = RequestHeads()
    bad = [*FIELDS, (b"Upper", b"x")]
    assert heads.head(FIELDS, ended=True) == request_head(FIELDS, ended=True)
    for _ in range(2):
        assert isinstance(heads.head(bad, ended=True), str)
    assert heads.head(FIELDS, ended=True) == request_head(FIELDS, ended=True)
