"""Shared body framing: sized, chunked and close-delimited bodies (RFC 9112 §6.3, §7.1).

Both implementations share these readers, so they cannot disagree about where a body ends:
that disagreement is request smuggling. Bodies are streamed: each call hands out what is
buffered as one :class:`~.events.Data` piece and never waits to collect a whole body.

Chunked rules (RFC 9112 §7.1), as strict as llhttp's defaults and stricter than h11's:

- chunk-size is 1-16 hex digits (so it always fits in 64 bits; h11 takes 20 and overflows
  nothing, llhttp counts overflow instead; both become "at most 16 digits").
- chunk-ext is ``*( ";" token [ "=" ( token / quoted-string ) ] )``. POLICY: no BWS around
  ``;`` and ``=`` although §7.1.1 allows it (llhttp refuses it by default; h11 accepts any
  bytes after ``;``); a chunk line is at most 4096 bytes.
- chunk data must be followed by exactly CRLF; the trailer section is field lines as in the
  head (:mod:`.syntax`), bounded by the head limit (431 past it), names lower-cased.
- A streamed total over ``max_body_bytes`` is 413.

Linear on client bytes, as :mod:`.syntax` says: the chunk-line pattern alternates only between
disjoint classes and every quantified class is followed by a byte outside it; trailer lines
are checked by :func:`.syntax.field_line` (``partition``, one-class patterns, ``strip``).

Pure: a reader consumes from the caller's buffer and returns one event. ``take`` is the same
step for bytes that arrived while nothing was buffered: when they all belong to the body, they
are the piece as they are, with no copy into the buffer and none out of it (a 1 MB body is
sixteen 64 KiB receives; each copy of each piece was a ``malloc`` and a ``memcpy``).
"""

from __future__ import annotations

import re
from typing import Final

from coxswain.http1.events import (
    END_OF_MESSAGE,
    NEED_DATA,
    Data,
    EndOfMessage,
    Event,
    Headers,
    ProtocolError,
)
from coxswain.http1.syntax import field_line, find_bare_line_break

__all__ = ["BodyReader", "ChunkedBody", "CloseDelimitedBody", "SizedBody"]

# Precedent: nginx reads a chunk line into a fixed buffer; 4 KiB leaves room for extensions.
MAX_CHUNK_LINE: Final = 4096

_TOKEN: Final = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED: Final = rb'"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"'
_CHUNK_LINE: Final = re.compile(
    rb"([0-9A-Fa-f]{1,16})(?:;" + _TOKEN + rb"(?:=(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*\r\n"
)


class SizedBody:
    """A Content-Length body (RFC 9112 §6.2)."""

    __slots__ = ("_error_status", "_remaining")

    def __init__(self, length: int, *, error_status: int) -> None:
        self._remaining = length
        self._error_status = error_status

    def read(self, buf: bytearray, *, eof: bool) -> Event:
        """Consume body bytes from ``buf``; one Data piece, EndOfMessage, or NEED_DATA."""
        if self._remaining == 0:
            return END_OF_MESSAGE
        if not buf:
            if eof:
                return ProtocolError(self._error_status, "connection closed inside the body")
            return NEED_DATA
        n = len(buf)
        if n <= self._remaining:  # all of it: one copy rather than a slice and a copy
            piece = bytes(buf)
            buf.clear()
        else:
            n = self._remaining
            piece = bytes(buf[:n])
            del buf[:n]
        self._remaining -= n
        return Data(piece)

    def take(self, data: bytes) -> Data | None:
        """``data`` as the next piece when it lies inside the body, else None."""
        if len(data) > self._remaining:
            return None
        self._remaining -= len(data)
        return Data(data)


class CloseDelimitedBody:
    """A response body that runs until the connection closes (RFC 9112 §6.3 rule 8)."""

    __slots__ = ()

    def read(self, buf: bytearray, *, eof: bool) -> Event:
        """Everything buffered is body; EOF ends it."""
        if buf:
            piece = bytes(buf)
            buf.clear()
            return Data(piece)
        return END_OF_MESSAGE if eof else NEED_DATA

    def take(self, data: bytes) -> Data:
        """``data`` as the next piece: everything is body."""
        return Data(data)


class ChunkedBody:
    """A chunked body (RFC 9112 §7.1) with the strict rules in the module docstring."""

    __slots__ = (
        "_error_status",
        "_in_chunk",
        "_max_body",
        "_max_trailer",
        "_scanned",
        "_state",
        "_total",
    )

    _SIZE: Final = 0
    _DATA: Final = 1
    _DATA_CRLF: Final = 2
    _TRAILERS: Final = 3

    def __init__(self, *, error_status: int, max_body: int | None, max_trailer: int) -> None:
        self._error_status = error_status
        self._max_body = max_body
        self._max_trailer = max_trailer
        self._state = self._SIZE
        self._in_chunk = 0
        self._total = 0
        self._scanned = 0  # trailer bytes already searched for the end and for bare CR or LF

    def _fail(self, reason: str) -> ProtocolError:
        return ProtocolError(self._error_status, reason)

    def read(self, buf: bytearray, *, eof: bool) -> Event:
        """Consume from ``buf`` until one event is ready: Data, EndOfMessage or NEED_DATA."""
        while True:
            if self._state == self._SIZE:
                event = self._read_size_line(buf)
            elif self._state == self._DATA:
                if not buf:
                    event = NEED_DATA
                else:
                    n = min(self._in_chunk, len(buf))
                    piece = bytes(buf[:n])
                    del buf[:n]
                    self._in_chunk -= n
                    if self._in_chunk == 0:
                        self._state = self._DATA_CRLF
                    return Data(piece)
            elif self._state == self._DATA_CRLF:
                if len(buf) < 2:
                    if buf and buf[0] != 0x0D:  # not CR
                        return self._fail("chunk data not followed by CRLF")
                    event = NEED_DATA
                elif buf[:2] != b"\r\n":
                    return self._fail("chunk data not followed by CRLF")
                else:
                    del buf[:2]
                    self._state = self._SIZE
                    continue
            else:
                event = self._read_trailers(buf)
            if event is NEED_DATA and eof:
                return self._fail("connection closed inside a chunked body")
            if event is not None:
                return event

    def limit(self, max_body: int) -> None:
        """Lower the body limit to ``max_body`` bytes (a limit already lower stays)."""
        if self._max_body is None or max_body < self._max_body:
            self._max_body = max_body

    def take(self, data: bytes) -> Data | None:
        """``data`` as the next piece when it lies inside the current chunk, else None."""
        if self._state != self._DATA or len(data) > self._in_chunk:
            return None
        self._in_chunk -= len(data)
        if self._in_chunk == 0:
            self._state = self._DATA_CRLF
        return Data(data)

    def _read_size_line(self, buf: bytearray) -> Event | None:
        """Parse one chunk-size line; None means continue the loop in the new state."""
        end = buf.find(b"\n", 0, MAX_CHUNK_LINE)
        if end < 0:
            if len(buf) >= MAX_CHUNK_LINE:
                return self._fail("chunk line too long")
            if find_bare_line_break(buf) >= 0:
                return self._fail("chunk line not ended by CRLF")
            return NEED_DATA
        matched = _CHUNK_LINE.fullmatch(buf, 0, end + 1)
        if matched is None:
            return self._fail("invalid chunk size line")
        size = int(matched.group(1), 16)
        del buf[: end + 1]
        if size == 0:
            self._state = self._TRAILERS
            return None
        self._total += size
        if self._max_body is not None and self._total > self._max_body:
            return ProtocolError(413, "chunked body over the body limit")
        self._in_chunk = size
        self._state = self._DATA
        return None

    def _read_trailers(self, buf: bytearray) -> Event:
        if buf.startswith(b"\r\n"):
            del buf[:2]
            return END_OF_MESSAGE
        # Search only what arrived since the last call (and the bytes a match could straddle),
        # so a trailer section sent a byte at a time costs linear time, not quadratic.
        end = buf.find(b"\r\n\r\n", max(0, self._scanned - 3))
        if end < 0:
            if len(buf) > self._max_trailer:
                return ProtocolError(431, "trailer section over the head limit")
            if len(buf) >= 2 and find_bare_line_break(buf, max(0, self._scanned - 1)) >= 0:
                return self._fail("trailer line not ended by CRLF")
            self._scanned = len(buf)
            return NEED_DATA
        if end + 4 > self._max_trailer:
            return ProtocolError(431, "trailer section over the head limit")
        block = bytes(buf[:end])
        del buf[: end + 4]
        trailers: list[tuple[bytes, bytes]] = []
        for line in block.split(b"\r\n"):
            field = field_line(line)  # no CR or LF in it: the value check refuses both
            if field is None:
                return self._fail("invalid trailer field line")
            trailers.append(field)
        trailer_section: Headers = tuple(trailers)
        return EndOfMessage(trailer_section)


BodyReader = SizedBody | ChunkedBody | CloseDelimitedBody
