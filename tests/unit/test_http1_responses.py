"""Client side of the HTTP/1.1 codec: responses in, events out, over both implementations."""

from __future__ import annotations

import pytest

from coxswain.http1 import (
    CODEC_NAMES,
    CONNECTION_CLOSED,
    NEED_DATA,
    PAUSED,
    Data,
    EndOfMessage,
    Event,
    HeadCodec,
    HeadMemo,
    Limits,
    ProtocolError,
    ResponseHead,
    ResponseParser,
    codec_named,
)


@pytest.fixture(params=CODEC_NAMES)
def codec(request: pytest.FixtureRequest) -> HeadCodec:
    return codec_named(request.param)


def parse(
    codec: HeadCodec, data: bytes, *methods: bytes, eof: bool = False, **limits: int
) -> list[Event]:
    parser = ResponseParser(codec, limits=Limits(**limits))
    for method in methods or (b"GET",):
        parser.expect_response(method)
    parser.receive_data(data)
    if eof:
        parser.receive_data(b"")
    out: list[Event] = []
    while True:
        event = parser.next_event()
        if event is NEED_DATA:
            return out
        if out and isinstance(event, Data) and isinstance(out[-1], Data):
            out[-1] = Data(out[-1].data + event.data)
        else:
            out.append(event)
        if event is PAUSED or event is CONNECTION_CLOSED or isinstance(event, ProtocolError):
            return out


def test_head_fields_when_sized_response(codec: HeadCodec) -> None:
    [head, body, end] = parse(codec, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nA: b \r\n\r\nhi")
    assert head == ResponseHead(
        status=200,
        reason=b"OK",
        http_version=b"1.1",
        headers=((b"content-length", b"2"), (b"a", b"b")),
        connection=(),
        keep_alive=True,
        content_length=2,
        chunked=False,
        has_body=True,
    )
    assert body == Data(b"hi")
    assert end == EndOfMessage()


@pytest.mark.parametrize("status_line", [b"HTTP/1.1 204 No Content", b"HTTP/1.1 304 "])
def test_no_body_when_204_or_304(codec: HeadCodec, status_line: bytes) -> None:
    data = (
        status_line + b"\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    )
    events = parse(codec, data, b"GET", b"GET")
    assert [type(e) for e in events] == [ResponseHead, EndOfMessage, ResponseHead, EndOfMessage]
    assert isinstance(events[0], ResponseHead)
    assert not events[0].has_body


def test_no_body_when_response_to_head(codec: HeadCodec) -> None:
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
    data += b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
    events = parse(codec, data, b"HEAD", b"GET")
    assert [type(e) for e in events] == [
        ResponseHead,
        EndOfMessage,
        ResponseHead,
        Data,
        EndOfMessage,
    ]


def test_informational_then_final_when_100_continue(codec: HeadCodec) -> None:
    data = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    data += b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
    events = parse(codec, data)
    assert [e.status for e in events if isinstance(e, ResponseHead)] == [100, 103, 201]
    assert events[-1] == EndOfMessage()


def test_chunked_with_trailers_when_transfer_encoding(codec: HeadCodec) -> None:
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"
    [_, body, end] = parse(codec, data)
    assert body == Data(b"abc")
    assert end == EndOfMessage(((b"x-t", b"1"),))


def test_body_until_close_when_no_framing(codec: HeadCodec) -> None:
    events = parse(codec, b"HTTP/1.1 200 OK\r\n\r\nall of it", eof=True)
    head = events[0]
    assert isinstance(head, ResponseHead)
    assert not head.keep_alive
    assert events[1:] == [Data(b"all of it"), EndOfMessage(), CONNECTION_CLOSED]


def test_closed_when_http10_response_without_keep_alive(codec: HeadCodec) -> None:
    events = parse(codec, b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1", b"GET", b"GET")
    assert events[-1] is CONNECTION_CLOSED


def test_paused_and_raw_bytes_when_101(codec: HeadCodec) -> None:
    parser = ResponseParser(codec)
    parser.expect_response(b"GET")
    parser.receive_data(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x00")
    head = parser.next_event()
    assert isinstance(head, ResponseHead)
    assert (head.status, head.reason, head.headers, head.has_body) == (
        101,
        b"Switching Protocols",
        ((b"upgrade", b"websocket"),),
        False,
    )
    assert parser.next_event() == EndOfMessage()
    assert parser.next_event() is PAUSED
    assert parser.detach() == b"\x81\x00"


def test_reason_may_be_empty_when_status_line_short(codec: HeadCodec) -> None:
    head = parse(codec, b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")[0]
    assert isinstance(head, ResponseHead)
    assert head.reason == b""


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
        b"HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
        b"garbage\r\n\r\n",
    ],
)
def test_502_when_response_is_malformed(codec: HeadCodec, data: bytes) -> None:
    last = parse(codec, data, eof=True)[-1]
    assert isinstance(last, ProtocolError)
    assert last.status == 502


def test_502_when_response_head_over_limit(codec: HeadCodec) -> None:
    data = b"HTTP/1.1 200 OK\r\nX: " + b"a" * 600 + b"\r\n\r\n"
    last = parse(codec, data, max_head_bytes=512)[-1]
    assert last == ProtocolError(502, "upstream: header section over the limit")


def test_502_when_response_without_request(codec: HeadCodec) -> None:
    parser = ResponseParser(codec)
    parser.receive_data(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    event = parser.next_event()
    assert isinstance(event, ProtocolError)
    assert event.status == 502


def _first_event(codec: HeadCodec, memo: HeadMemo, data: bytes, method: bytes) -> Event:
    parser = ResponseParser(codec, memo=memo)
    parser.expect_response(method)
    parser.receive_data(data)
    return parser.next_event()


def test_parsers_sharing_a_memo_parse_an_identical_head_once(codec: HeadCodec) -> None:
    memo = HeadMemo()
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    first = _first_event(codec, memo, data, b"GET")
    again = _first_event(codec, memo, data, b"GET")
    assert again is first
    other = _first_event(codec, memo, data.replace(b"OK", b"Ok"), b"GET")
    assert isinstance(other, ResponseHead)
    assert other.reason == b"Ok"


def test_a_memo_tells_a_head_response_from_a_get_response(codec: HeadCodec) -> None:
    memo = HeadMemo()
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
    to_get = _first_event(codec, memo, data, b"GET")
    to_head = _first_event(codec, memo, data, b"HEAD")
    assert isinstance(to_get, ResponseHead)
    assert isinstance(to_head, ResponseHead)
    assert (to_get.has_body, to_head.has_body) == (True, False)
    assert to_head.content_length is None


def test_a_memo_keeps_no_malformed_head(codec: HeadCodec) -> None:
    memo = HeadMemo()
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n"
    for _ in range(2):
        event = _first_event(codec, memo, data, b"GET")
        assert isinstance(event, ProtocolError)
    assert memo.event is None
