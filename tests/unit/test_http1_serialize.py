"""Serializing HTTP/1.1 heads and chunks, and the round trip through both parsers."""

from __future__ import annotations

import pytest

from coxswain.http1 import (
    CODEC_NAMES,
    NEED_DATA,
    Data,
    EndOfMessage,
    RequestFramer,
    RequestHead,
    RequestParser,
    ResponseHead,
    ResponseParser,
    codec_named,
    frame_chunk,
    frame_last_chunk,
    frame_request_head,
    frame_response_head,
)


def test_request_head_bytes_when_headers_given() -> None:
    head = frame_request_head(
        method=b"POST", target=b"/a", headers=((b"Host", b"x"), (b"content-length", b"2"))
    )
    assert head == b"POST /a HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\n\r\n"


def test_response_head_uses_standard_reason_when_none() -> None:
    assert frame_response_head(status=404, headers=()) == b"HTTP/1.1 404 Not Found\r\n\r\n"
    assert frame_response_head(status=599, headers=()) == b"HTTP/1.1 599 \r\n\r\n"
    assert frame_response_head(status=200, headers=(), reason=b"Fine", http_version=b"1.0") == (
        b"HTTP/1.0 200 Fine\r\n\r\n"
    )


def test_chunk_framing_when_streaming() -> None:
    assert frame_chunk(b"hello world!!!!!") == b"10\r\nhello world!!!!!\r\n"
    assert frame_chunk(b"") == b""
    assert frame_last_chunk() == b"0\r\n\r\n"
    assert frame_last_chunk(((b"x-sum", b"1"),)) == b"0\r\nx-sum: 1\r\n\r\n"


@pytest.mark.parametrize(
    "headers",
    [((b"X", b"a\r\nInjected: 1"),), ((b"X", b"a\nb"),), ((b"X Y", b"a"),), ((b"X", b"\x00"),)],
)
def test_value_error_when_header_would_inject(headers: tuple[tuple[bytes, bytes], ...]) -> None:
    with pytest.raises(ValueError, match="invalid header"):
        frame_response_head(status=200, headers=headers)


def test_value_error_when_request_line_invalid() -> None:
    with pytest.raises(ValueError, match="request line"):
        frame_request_head(method=b"GET", target=b"/a b", headers=())
    with pytest.raises(ValueError, match="status"):
        frame_response_head(status=42, headers=())


@pytest.mark.parametrize("name", CODEC_NAMES)
def test_round_trip_when_serialized_then_parsed(name: str) -> None:
    codec = codec_named(name)  # type: ignore[arg-type]
    wire = frame_request_head(
        method=b"PUT",
        target=b"/up",
        headers=((b"Host", b"x"), (b"Transfer-Encoding", b"chunked")),
    )
    wire += frame_chunk(b"abc") + frame_chunk(b"def") + frame_last_chunk(((b"t", b"v"),))
    server = RequestParser(codec)
    server.receive_data(wire)
    head = server.next_event()
    assert isinstance(head, RequestHead)
    assert (head.method, head.target, head.chunked) == (b"PUT", b"/up", True)
    assert [server.next_event() for _ in range(4)] == [
        Data(b"abc"),
        Data(b"def"),
        EndOfMessage(((b"t", b"v"),)),
        NEED_DATA,
    ]
    client = ResponseParser(codec)
    client.expect_response(b"PUT")
    client.receive_data(frame_response_head(status=201, headers=((b"Content-Length", b"1"),)))
    client.receive_data(b"!")
    response = client.next_event()
    assert isinstance(response, ResponseHead)
    assert response.status == 201
    assert client.next_event() == Data(b"!")
    assert client.next_event() == EndOfMessage()


def test_a_request_framer_writes_what_frame_request_head_writes() -> None:
    framer = RequestFramer()
    fields = [(b"host", b"a.example"), (b"x-forwarded-for", b"10.0.0.1")]
    first = framer.frame(b"GET", b"/a", fields)
    assert first == frame_request_head(method=b"GET", target=b"/a", headers=fields)
    assert framer.frame(b"GET", b"/a", list(fields)) is first
    fields[1] = (b"x-forwarded-for", b"10.0.0.2")  # the caller's own list
    assert framer.frame(b"GET", b"/a", fields) == frame_request_head(
        method=b"GET", target=b"/a", headers=fields
    )
    for method, target in ((b"HEAD", b"/a"), (b"GET", b"/b")):
        assert framer.frame(method, target, fields) == frame_request_head(
            method=method, target=target, headers=fields
        )
    for _ in range(2):
        with pytest.raises(ValueError, match="request line"):
            framer.frame(b"GET", b"/a b", fields)
