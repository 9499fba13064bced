"""Boundaries of the HTTP/1.1 message parsers (coxswain.http1.parser; RFC 9112 §2.2, §9).

The head limit is pinned on both paths a head takes (all in one receive, or gathered over
several), the empty lines allowed before a start line are counted against it for every
message on a connection, and the caller errors carry their exact sentences.
"""

from __future__ import annotations

import pytest

from coxswain.http1 import (
    CONNECTION_CLOSED,
    NEED_DATA,
    PAUSED,
    Data,
    HeadMemo,
    Limits,
    ProtocolError,
    RequestHead,
    RequestParser,
    ResponseParser,
    codec_named,
)
from coxswain.http1.events import END_OF_MESSAGE

LLHTTP = codec_named("llhttp")
LIMIT = 64


def head_of(size: int) -> bytes:
    """A GET head of exactly ``size`` bytes."""
    return b"GET / HTTP/1.1\r\nHost: " + b"a" * (size - 26) + b"\r\n\r\n"


def parser(limit: int = LIMIT) -> RequestParser:
    return RequestParser(LLHTTP, limits=Limits(max_head_bytes=limit))


def test_head_over_the_limit_in_one_receive() -> None:
    p = parser()
    p.receive_data(head_of(LIMIT + 1))
    assert p.next_event() == ProtocolError(431, "header section over the limit")


def test_head_at_the_limit_in_two_receives() -> None:
    head = head_of(LIMIT)
    p = parser()
    p.receive_data(head[:20])
    assert p.next_event() is NEED_DATA
    p.receive_data(head[20:])
    event = p.next_event()
    assert isinstance(event, RequestHead)
    assert event.host == b"a" * (LIMIT - 26)


def test_unfinished_head_at_the_limit_waits() -> None:
    p = parser()
    p.receive_data(head_of(LIMIT + 2)[:LIMIT])
    assert p.next_event() is NEED_DATA
    p.receive_data(b"a")
    assert p.next_event() == ProtocolError(431, "header section over the limit")


def test_response_head_over_the_limit() -> None:
    p = ResponseParser(LLHTTP, limits=Limits(max_head_bytes=LIMIT))
    p.expect_response(b"GET")
    p.receive_data(b"HTTP/1.1 200 OK\r\nA: " + b"b" * LIMIT + b"\r\n\r\n")
    assert p.next_event() == ProtocolError(502, "upstream: header section over the limit")


def finish(p: RequestParser) -> None:
    event = p.next_event()
    assert isinstance(event, RequestHead)
    assert p.next_event() is END_OF_MESSAGE


@pytest.mark.parametrize("split", [False, True])
def test_empty_lines_up_to_the_limit_before_each_message(split: bool) -> None:
    p = parser()
    head = head_of(40)
    if split:  # the head gathered in the buffer
        p.receive_data(head[:10])
        assert p.next_event() is NEED_DATA
        p.receive_data(head[10:])
    else:  # the head parsed as received
        p.receive_data(head)
    finish(p)
    p.receive_data(b"\r\n" * (LIMIT // 2))
    assert p.next_event() is NEED_DATA
    p.receive_data(head)
    finish(p)


def test_empty_lines_up_to_the_limit_before_the_first_message() -> None:
    p = parser()
    p.receive_data(b"\r\n" * (LIMIT // 2))
    assert p.next_event() is NEED_DATA
    p.receive_data(b"\r\n")
    assert p.next_event() == ProtocolError(
        400, "empty lines before the start line over the head limit"
    )


def test_bare_line_feed_first_while_waiting() -> None:
    p = parser()
    p.receive_data(b"\nGET / HTTP/1.1\r\n")
    assert p.next_event() == ProtocolError(400, "line ending is not CRLF")


def test_bare_cr_across_two_receives_while_waiting() -> None:
    p = parser()
    p.receive_data(b"GET / HTTP/1.1\r")
    assert p.next_event() is NEED_DATA
    p.receive_data(b"X")
    assert p.next_event() == ProtocolError(400, "line ending is not CRLF")


def test_connection_closed_in_head() -> None:
    p = parser()
    p.receive_data(b"GET / HTTP/1.1\r\n")
    p.receive_data(b"")
    assert p.next_event() == ProtocolError(400, "connection closed in head")


def test_response_without_a_request() -> None:
    p = ResponseParser(LLHTTP)
    p.receive_data(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    assert p.next_event() == ProtocolError(502, "upstream: response without a request")


def test_resume_after_a_refused_upgrade_that_closes() -> None:
    p = parser(1024)
    p.receive_data(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, close\r\nUpgrade: x\r\n\r\n")
    finish(p)
    assert p.next_event() is PAUSED
    p.resume()
    assert p.next_event() is CONNECTION_CLOSED


def test_caller_errors() -> None:
    p = parser()
    with pytest.raises(RuntimeError) as detach:
        p.detach()
    assert str(detach.value) == "detach() outside PAUSED"
    with pytest.raises(RuntimeError) as resume:
        p.resume()
    assert str(resume.value) == "resume() outside PAUSED"
    p.receive_data(b"")
    with pytest.raises(RuntimeError) as after_eof:
        p.receive_data(b"x")
    assert str(after_eof.value) == "receive_data after EOF"


def test_head_memo_starts_empty() -> None:
    memo = HeadMemo()
    assert (memo.head, memo.method, memo.event) == (b"", b"", None)


def test_body_bytes_received_alone_are_the_piece_uncopied() -> None:
    p = parser(1024)
    p.receive_data(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n")
    assert isinstance(p.next_event(), RequestHead)
    sent = b"abcd"
    p.receive_data(sent)
    piece = p.next_event()
    assert isinstance(piece, Data)
    assert piece.data is sent  # not a copy (coxswain.http1.body, "take")
