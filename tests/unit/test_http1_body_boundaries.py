"""Boundaries of the shared body readers (coxswain.http1.body; RFC 9112 §6.2, §7.1).

The readers are driven directly, one buffer at a time, so each case shows where a limit
falls (the 4096-byte chunk line, the trailer section against the head limit, the body limit)
and the exact error an overstep gets.
"""

from __future__ import annotations

import pytest

from coxswain.http1.body import MAX_CHUNK_LINE, ChunkedBody, SizedBody
from coxswain.http1.events import (
    END_OF_MESSAGE,
    NEED_DATA,
    Data,
    EndOfMessage,
    Event,
    ProtocolError,
)


def chunked(max_body: int | None = None, max_trailer: int = 64) -> ChunkedBody:
    return ChunkedBody(error_status=400, max_body=max_body, max_trailer=max_trailer)


def read_all(body: ChunkedBody, data: bytes, *, eof: bool = False) -> list[Event]:
    """Events until NEED_DATA, an error or the end (inclusive)."""
    buf = bytearray(data)
    out: list[Event] = []
    while True:
        event = body.read(buf, eof=eof)
        out.append(event)
        if event is NEED_DATA or isinstance(event, ProtocolError | EndOfMessage):
            return out


def test_chunk_size_is_hexadecimal() -> None:
    body = chunked()
    assert read_all(body, b"10\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n") == [
        Data(b"x" * 16),
        END_OF_MESSAGE,
    ]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\n", "invalid chunk size line"),  # a line feed first: an empty, bare-LF line
        (b"\nX", "invalid chunk size line"),
        (b"1\n", "invalid chunk size line"),
        (b"\rX", "chunk line not ended by CRLF"),
        (b"1;a\rb", "chunk line not ended by CRLF"),
        (b"1;a=" + b"b" * (MAX_CHUNK_LINE - 4), "chunk line too long"),
        (b"1;a=" + b"b" * MAX_CHUNK_LINE + b"\r\n", "chunk line too long"),
        (b"1\r\nxy", "chunk data not followed by CRLF"),
        (b"1\r\nx\rX", "chunk data not followed by CRLF"),
        (b"1\r\nxXY", "chunk data not followed by CRLF"),
        (b"0\r\nX\r\n\r\n", "invalid trailer field line"),
    ],
)
def test_chunked_framing_fault(data: bytes, reason: str) -> None:
    assert read_all(chunked(), data)[-1] == ProtocolError(400, reason)


def test_chunk_line_one_short_of_the_limit_waits() -> None:
    assert read_all(chunked(), b"1;a=" + b"b" * (MAX_CHUNK_LINE - 5)) == [NEED_DATA]


def test_chunk_data_crlf_may_arrive_a_byte_at_a_time() -> None:
    body = chunked()
    buf = bytearray(b"1\r\nx\r")
    assert body.read(buf, eof=False) == Data(b"x")
    assert body.read(buf, eof=False) is NEED_DATA
    buf += b"\n0\r\n\r\n"
    assert body.read(buf, eof=False) is END_OF_MESSAGE


def test_eof_inside_a_chunked_body() -> None:
    assert read_all(chunked(), b"1\r\n", eof=True) == [
        ProtocolError(400, "connection closed inside a chunked body")
    ]


def test_chunked_body_limit() -> None:
    assert read_all(chunked(max_body=3), b"3\r\nabc\r\n") == [Data(b"abc"), NEED_DATA]
    assert read_all(chunked(max_body=3), b"2\r\nab\r\n2\r\n") == [
        Data(b"ab"),
        ProtocolError(413, "chunked body over the body limit"),
    ]


def test_limit_keeps_the_lower_limit() -> None:
    body = chunked(max_body=5)
    body.limit(9)
    body.limit(5)
    assert read_all(body, b"6\r\n") == [ProtocolError(413, "chunked body over the body limit")]


def test_trailers_are_parsed() -> None:
    assert read_all(chunked(), b"0\r\nA: 1 \r\nb-c:2\r\n\r\n") == [
        EndOfMessage(((b"a", b"1"), (b"b-c", b"2")))
    ]


def test_trailer_section_at_the_limit() -> None:
    section = b"a: " + b"v" * 57 + b"\r\n\r\n"  # 64 bytes, the limit
    assert read_all(chunked(max_trailer=64), b"0\r\n" + section) == [
        EndOfMessage(((b"a", b"v" * 57),))
    ]
    over = b"a: " + b"v" * 58 + b"\r\n\r\n"
    assert read_all(chunked(max_trailer=64), b"0\r\n" + over) == [
        ProtocolError(431, "trailer section over the head limit")
    ]


def test_unfinished_trailer_section_at_the_limit() -> None:
    assert read_all(chunked(max_trailer=64), b"0\r\n" + b"a: " + b"v" * 61) == [NEED_DATA]
    assert read_all(chunked(max_trailer=64), b"0\r\n" + b"a: " + b"v" * 62) == [
        ProtocolError(431, "trailer section over the head limit")
    ]


@pytest.mark.parametrize("trailer", [b"\nX", b"X\n", b"\rX", b"a: b\r\nc\n"])
def test_bare_line_break_in_trailers(trailer: bytes) -> None:
    assert read_all(chunked(), b"0\r\n" + trailer) == [
        ProtocolError(400, "trailer line not ended by CRLF")
    ]


def test_bare_cr_across_two_reads_of_trailers() -> None:
    body = chunked()
    buf = bytearray(b"0\r\na: b\r")
    assert body.read(buf, eof=False) is NEED_DATA
    buf += b"X"
    assert body.read(buf, eof=False) == ProtocolError(400, "trailer line not ended by CRLF")


def test_take_inside_the_current_chunk() -> None:
    body = chunked()
    assert body.take(b"") is None  # no chunk yet
    buf = bytearray(b"5\r\n")
    assert body.read(buf, eof=False) is NEED_DATA
    assert body.take(b"abcdef") is None  # past the chunk
    assert body.take(b"ab") == Data(b"ab")
    assert body.take(b"cde") == Data(b"cde")  # exactly the rest of the chunk
    assert body.take(b"") is None  # the chunk is done: its CRLF is next
    buf += b"\r\n0\r\n\r\n"
    assert body.read(buf, eof=False) is END_OF_MESSAGE


def test_sized_body_take_exactly_the_rest() -> None:
    body = SizedBody(3, error_status=400)
    assert body.take(b"abcd") is None
    assert body.take(b"abc") == Data(b"abc")
    assert body.read(bytearray(), eof=False) is END_OF_MESSAGE


def test_sized_body_eof_inside() -> None:
    body = SizedBody(3, error_status=502)
    assert body.read(bytearray(), eof=True) == ProtocolError(
        502, "connection closed inside the body"
    )
