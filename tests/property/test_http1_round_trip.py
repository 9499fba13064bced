"""What the writers of coxswain.http1.serialize write, the parsers read back (RFC 9112 §3-§7).

A generated request (method, target, fields, a chunked body in pieces, trailers) is written
with :func:`frame_request_head`, :func:`frame_chunk` and :func:`frame_last_chunk`, then parsed
by a :class:`RequestParser` over each implementation: the head's fields, the body and the
trailers come back as written, names lower-cased and values trimmed of OWS (RFC 9110 §5.5).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.http1 import (
    CODEC_NAMES,
    NEED_DATA,
    Data,
    EndOfMessage,
    HeadCodec,
    RequestHead,
    RequestParser,
    codec_named,
    frame_chunk,
    frame_last_chunk,
    frame_request_head,
)
from coxswain.http1.syntax import KNOWN_METHODS

pytestmark = pytest.mark.property

TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Field names outside the ones the shared rules read (Host, framing, Connection, Expect,
# Upgrade), so every generated request is valid.
names = st.text(TCHAR, min_size=1, max_size=8).map(lambda t: b"x-" + t.encode())
values = st.binary(max_size=16).map(
    lambda b: bytes(c for c in b if c == 0x09 or 0x20 <= c <= 0x7E or c >= 0x80)
)
fields = st.lists(st.tuples(names, values), max_size=4)
targets = st.text("abc/%?=&~-_.:@!$'()*+,;0123456789", max_size=12).map(lambda t: b"/" + t.encode())
methods = st.sampled_from(sorted(KNOWN_METHODS - {b"CONNECT"}))


def trimmed(pairs: list[tuple[bytes, bytes]]) -> tuple[tuple[bytes, bytes], ...]:
    return tuple((n.lower(), v.strip(b" \t")) for n, v in pairs)


@pytest.mark.parametrize("codec", [codec_named(n) for n in CODEC_NAMES], ids=CODEC_NAMES)
@given(
    methods,
    targets,
    fields,
    st.lists(st.binary(max_size=40), max_size=3),
    fields,
)
def test_a_written_request_reads_back(
    codec: HeadCodec,
    method: bytes,
    target: bytes,
    extra: list[tuple[bytes, bytes]],
    pieces: list[bytes],
    trailers: list[tuple[bytes, bytes]],
) -> None:
    headers = [(b"Host", b"h.test"), *extra, (b"Transfer-Encoding", b"chunked")]
    wire = frame_request_head(method=method, target=target, headers=headers)
    wire += b"".join(frame_chunk(p) for p in pieces) + frame_last_chunk(trailers)
    parser = RequestParser(codec)
    parser.receive_data(wire)
    head = parser.next_event()
    assert isinstance(head, RequestHead)
    assert (head.method, head.target, head.http_version) == (method, target, b"1.1")
    assert head.headers == trimmed(headers)
    assert head.chunked
    body = b""
    while isinstance(event := parser.next_event(), Data):
        body += event.data
    assert body == b"".join(pieces)
    assert event == EndOfMessage(trimmed(trailers))
    assert parser.next_event() is NEED_DATA
