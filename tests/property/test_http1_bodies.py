"""Bodies read back whole: whatever the boundaries the bytes arrive at, the Data pieces of each
message join to exactly the body that was sent, and the next message parses after it.

The differential test (test_http1_differential.py) compares the two codecs, which share the
body readers, so it cannot see a body reader's own mistake; this compares with the payload.
Pieces are parsed as they arrive, so bytes often land in an empty buffer and take the readers'
no-copy path (``take``), and just as often not.
"""

from __future__ import annotations

from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.http1 import (
    CONNECTION_CLOSED,
    NEED_DATA,
    Data,
    EndOfMessage,
    RequestHead,
    RequestParser,
    ResponseHead,
    ResponseParser,
    codec_named,
    frame_chunk,
    frame_last_chunk,
)

pytestmark = pytest.mark.property

CODEC: Final = codec_named("llhttp")


@st.composite
def encoded(draw: st.DrawFn) -> tuple[bytes, bytes, bytes, list[int]]:
    """(framing header line, body on the wire, payload, where chunk data ends in the body):
    sized or chunked."""
    payload = draw(st.binary(max_size=300))
    if draw(st.booleans()):
        return b"Content-Length: %d\r\n" % len(payload), payload, payload, []
    sizes = draw(st.lists(st.integers(1, 80), max_size=6))
    pieces, at = [], 0
    for size in [*sizes, len(payload)]:
        if payload[at : at + size]:
            pieces.append(frame_chunk(payload[at : at + size]))
        at += size
    ends = [sum(map(len, pieces[: i + 1])) - 2 for i in range(len(pieces))]  # before each CRLF
    return b"Transfer-Encoding: chunked\r\n", b"".join(pieces) + frame_last_chunk(()), payload, ends


@st.composite
def arrivals(draw: st.DrawFn, start_line: bytes) -> tuple[list[bytes], list[bytes]]:
    """(the bytes of 1-3 pipelined messages as they arrive, their payloads). Cuts fall
    anywhere, and near where heads, chunks and bodies end: a piece that starts a body, or that
    holds the end of one and a byte or two of what follows, is where ``take`` must decide."""
    messages = draw(st.lists(encoded(), min_size=1, max_size=3))
    wire, ends = b"", []
    for framing, body, _, chunk_ends in messages:
        wire += start_line + b"%s\r\n" % framing
        ends += [len(wire), *(len(wire) + end for end in chunk_ends)]
        wire += body
        ends.append(len(wire))
    near = st.tuples(st.sampled_from(ends), st.integers(-2, 2)).map(lambda e: e[0] + e[1])
    cuts = draw(st.lists(st.one_of(st.integers(0, len(wire)), near), max_size=12))
    points = sorted({min(max(cut, 0), len(wire)) for cut in cuts})
    pieces = [wire[a:b] for a, b in zip([0, *points], [*points, len(wire)], strict=True)]
    return [piece for piece in pieces if piece], [payload for _, _, payload, _ in messages]


def read_back(parser: RequestParser | ResponseParser, pieces: list[bytes]) -> list[bytes]:
    """Feed each piece (``b""``: the end of the stream) and parse what it allows: the body of
    every message, in order."""
    bodies: list[bytes] = []
    body = bytearray()
    for piece in pieces:
        parser.receive_data(piece)
        while (event := parser.next_event()) is not NEED_DATA:
            if type(event) is Data:
                body += event.data
            elif type(event) is EndOfMessage:
                bodies.append(bytes(body))
                body.clear()
            elif event is CONNECTION_CLOSED:
                return bodies
            else:
                assert type(event) in (RequestHead, ResponseHead), event
    return bodies


@given(arrivals(b"POST /p HTTP/1.1\r\nHost: x.test\r\n"))
def test_request_bodies_join_to_what_was_sent(sent: tuple[list[bytes], list[bytes]]) -> None:
    pieces, payloads = sent
    assert read_back(RequestParser(CODEC), pieces) == payloads


@given(arrivals(b"HTTP/1.1 200 OK\r\n"))
def test_response_bodies_join_to_what_was_sent(sent: tuple[list[bytes], list[bytes]]) -> None:
    pieces, payloads = sent
    parser = ResponseParser(CODEC)
    for _ in payloads:
        parser.expect_response(b"GET")
    assert read_back(parser, pieces) == payloads


@given(st.binary(min_size=1, max_size=300), st.lists(st.integers(1, 300), max_size=8))
def test_a_body_until_close_joins_to_what_was_sent(payload: bytes, cuts: list[int]) -> None:
    parser = ResponseParser(CODEC)
    parser.expect_response(b"GET")
    head = b"HTTP/1.1 200 OK\r\n\r\n"
    wire = head + payload
    points = sorted({len(head), *(min(len(head) + cut, len(wire)) for cut in cuts)})
    pieces = [wire[a:b] for a, b in zip([0, *points], [*points, len(wire)], strict=True)]
    assert read_back(parser, [*(piece for piece in pieces if piece), b""]) == [payload]
