"""Sans-IO HTTP/1.1 message parsers for both sides of the proxy (RFC 9112 §2, §6, §9).

:class:`RequestParser` is the server side (bytes from a client in, request events out);
:class:`ResponseParser` is the client side (bytes from an upstream in, response events out).
Either takes a :class:`~.interface.HeadCodec` (h11 or llhttp) for the one step that differs,
parsing a complete head; everything else lives here and in :mod:`.syntax` and :mod:`.body`:

- **Heads.** Leading empty lines before a start line are skipped (RFC 9112 §2.2), up to
  ``Limits.max_head_bytes`` of them (then 400: a peer must not keep a task reading forever).
  The head ends at the first CRLFCRLF; more than ``Limits.max_head_bytes`` before it is 431
  (a response: 502).
  A bare CR or LF seen while waiting is 400 at once rather than at the limit.
- **Keep-alive** (§9.3). After EndOfMessage the next message starts on the same bytes; after a
  message that is not keep-alive (HTTP/1.0 without ``keep-alive``, ``Connection: close``, a
  close-delimited response) the parser returns CONNECTION_CLOSED and ignores further bytes.
- **Upgrade** (RFC 9110 §7.8). After a request carrying ``Connection: upgrade`` and after a 101
  response, the parser returns PAUSED: :meth:`detach` hands back the unparsed bytes raw for a
  tunnel, :meth:`resume` carries on with HTTP (the upstream refused the upgrade).
- **Errors.** A ProtocolError is terminal and repeated by every later call.

Usage mirrors h11: ``receive_data(chunk)`` (``b""`` for EOF), then ``next_event()`` until it
returns NEED_DATA. No sockets, no trio, no clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

from coxswain.http1.body import BodyReader, ChunkedBody, CloseDelimitedBody, SizedBody
from coxswain.http1.events import (
    CONNECTION_CLOSED,
    NEED_DATA,
    PAUSED,
    EndOfMessage,
    Event,
    ProtocolError,
    ResponseHead,
)
from coxswain.http1.interface import HeadCodec, HeadRejected
from coxswain.http1.syntax import (
    check_request_syntax,
    check_response_syntax,
    find_bare_line_break,
    frame_request,
    frame_response,
)

__all__ = ["DEFAULT_LIMITS", "HeadMemo", "Limits", "RequestParser", "ResponseParser"]

# Precedent: Envoy's max_request_headers_kb defaults to 60 KiB.
DEFAULT_MAX_HEAD_BYTES: Final = 60 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Size limits: the head (and trailer section) in bytes, and the body (None: unlimited)."""

    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES
    max_body_bytes: int | None = None


DEFAULT_LIMITS: Final = Limits()

_HEAD, _BODY, _PAUSED, _CLOSED, _ERROR = range(5)
# The body of a message without one: a zero-length body never changes state, so one serves all
# (its error status is never used: reading it cannot fail).
_NO_BODY: Final = SizedBody(0, error_status=400)


class _MessageParser:
    """The shared state machine: head, body, then next head, pause, or close."""

    __slots__ = (
        "_body",
        "_buf",
        "_codec",
        "_eof",
        "_error",
        "_error_status",
        "_fresh",
        "_keep_alive",
        "_limits",
        "_pause_after",
        "_raw_lengths",
        "_scanned",
        "_skipped",
        "_state",
    )

    def __init__(self, codec: HeadCodec, limits: Limits, error_status: int) -> None:
        self._codec = codec
        self._raw_lengths = codec.folds_content_length  # see .syntax
        self._limits = limits
        self._error_status = error_status
        self._buf = bytearray()
        self._fresh: bytes | None = None  # received while nothing was buffered, not yet parsed
        self._eof = False
        self._state = _HEAD
        self._scanned = 0
        self._skipped = 0  # bytes of empty lines skipped before the head being read
        self._body: BodyReader = _NO_BODY
        self._keep_alive = True
        self._pause_after = False
        self._error = ProtocolError(error_status, "")

    def receive_data(self, data: bytes) -> None:
        """Add bytes from the peer; ``b""`` means the peer closed its side.

        Raises:
            RuntimeError: data after EOF (a caller bug, not a peer error).
        """
        if self._eof and data:
            raise RuntimeError("receive_data after EOF")
        if not data:
            self._eof = True
        elif self._buf or self._fresh is not None:
            self._merge()
            self._buf += data
        else:
            self._fresh = data

    @property
    def buffered(self) -> bool:
        """Bytes were received that no event has consumed yet (between messages: the start of
        the next one, or bytes the peer should not have sent)."""
        return bool(self._buf) or self._fresh is not None

    @property
    def mid_message(self) -> bool:
        """A body is being read, or the input broke HTTP/1.1: the peer may still be sending
        bytes of this message (a server that closes now should linger, RFC 9112 §9.6)."""
        return self._state == _BODY or self._state == _ERROR

    def _merge(self) -> None:
        """Into the buffer with the fresh bytes: they are not one whole body piece."""
        if (fresh := self._fresh) is not None:
            self._fresh = None
            self._buf += fresh

    def next_event(self) -> Event:
        """The next event, or NEED_DATA when the buffered bytes do not make one yet."""
        state = self._state
        if state == _BODY:
            if (fresh := self._fresh) is not None:
                if (piece := self._body.take(fresh)) is not None:
                    self._fresh = None
                    return piece  # the bytes as received, not copied (see .body)
                self._merge()
            event = self._body.read(self._buf, eof=self._eof)
            if type(event) is EndOfMessage:
                self._state = self._after_message()
            elif type(event) is ProtocolError:
                return self._fail(event)
            return event
        if state == _HEAD:
            return self._read_head()
        if state == _PAUSED:
            return PAUSED
        if state == _CLOSED:
            return CONNECTION_CLOSED
        return self._error

    def detach(self) -> bytes:
        """While PAUSED: stop parsing and return the bytes received after the message."""
        if self._state != _PAUSED:
            raise RuntimeError("detach() outside PAUSED")
        self._merge()
        rest = bytes(self._buf)
        self._buf.clear()
        self._state = _CLOSED
        return rest

    def resume(self) -> None:
        """While PAUSED: the upgrade did not happen; parse the next message as HTTP/1.1."""
        if self._state != _PAUSED:
            raise RuntimeError("resume() outside PAUSED")
        self._state = _HEAD if self._keep_alive else _CLOSED

    def _after_message(self) -> int:
        if self._pause_after:
            return _PAUSED
        return _HEAD if self._keep_alive else _CLOSED

    def _fail(self, error: ProtocolError) -> ProtocolError:
        self._state = _ERROR
        self._error = error
        self._buf.clear()
        self._fresh = None
        return error

    def _read_head(self) -> Event:
        limit = self._limits.max_head_bytes
        if (fresh := self._fresh) is not None:  # the buffer is empty: parse the bytes as they are
            self._fresh = None
            end = fresh.find(b"\r\n\r\n")
            if end >= 0 and end + 4 <= limit and fresh[:2] != b"\r\n":
                self._skipped = 0
                if end + 4 == len(fresh):
                    return self._on_head(fresh)
                self._fresh = fresh[end + 4 :]  # a body, or the next message
                return self._on_head(fresh[: end + 4])
            self._buf += fresh
        buf = self._buf
        if not buf and not self._eof:  # between messages: the common case, checked first
            return NEED_DATA
        while buf.startswith(b"\r\n"):  # empty lines before a start line (RFC 9112 §2.2)
            del buf[:2]
            self._scanned = 0
            self._skipped += 2
        if self._skipped > limit:  # they count against the head's size: no endless stream
            reason = "empty lines before the start line over the head limit"
            return self._fail(ProtocolError(self._error_status, reason))
        end = buf.find(b"\r\n\r\n", max(0, self._scanned - 3))
        if end < 0:
            if len(buf) > limit:
                return self._fail(self._too_large())
            if self._eof:
                if not buf:
                    self._state = _CLOSED
                    return CONNECTION_CLOSED
                return self._fail(ProtocolError(self._error_status, "connection closed in head"))
            if find_bare_line_break(buf, max(0, self._scanned - 1)) >= 0:
                return self._fail(ProtocolError(self._error_status, "line ending is not CRLF"))
            self._scanned = len(buf)
            return NEED_DATA
        self._scanned = self._skipped = 0
        if end + 4 > limit:
            return self._fail(self._too_large())
        if end + 4 == len(buf):  # the common case for requests: one copy, not two
            head = bytes(buf)
            buf.clear()
        else:
            head = bytes(buf[: end + 4])
            del buf[: end + 4]
        return self._on_head(head)

    def _too_large(self) -> ProtocolError:
        return ProtocolError(431, "header section over the limit")

    def _on_head(self, head: bytes) -> Event:
        raise NotImplementedError

    def _start_body(self, *, content_length: int | None, chunked: bool, until_close: bool) -> None:
        status = self._error_status
        if chunked:
            self._body = ChunkedBody(
                error_status=status,
                max_body=self._limits.max_body_bytes,
                max_trailer=self._limits.max_head_bytes,
            )
        elif until_close:
            self._body = CloseDelimitedBody()
        elif content_length:
            self._body = SizedBody(content_length, error_status=status)
        else:
            self._body = _NO_BODY
        self._state = _BODY


class RequestParser(_MessageParser):
    """Server side: parses requests from a client (RFC 9112 §3).

    Args:
        codec: the head implementation (see :func:`~.codec.codec_named`).
        limits: head and body limits; a body over ``max_body_bytes`` is 413.
    """

    __slots__ = ()

    def __init__(self, codec: HeadCodec, *, limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(codec, limits, 400)

    def limit_body(self, max_body: int) -> None:
        """Lower the limit of the chunked body of the request just parsed to ``max_body`` bytes
        (a route's own, as ingress-nginx's ``proxy-body-size``): the chunk that passes it is a
        413 error. A declared Content-Length is the router's to check."""
        if isinstance(self._body, ChunkedBody):
            self._body.limit(max_body)

    def _on_head(self, head: bytes) -> Event:
        error = check_request_syntax(head, raw_lengths=self._raw_lengths)
        if error is not None:
            return self._fail(error)
        try:
            method, target, version, headers = self._codec.parse_request_head(head)
        except HeadRejected as exc:
            return self._fail(ProtocolError(400, f"{self._codec.name}: {exc}"))
        event = frame_request(
            method=method,
            target=target,
            http_version=version,
            headers=headers,
            max_body_bytes=self._limits.max_body_bytes,
        )
        if isinstance(event, ProtocolError):
            return self._fail(event)
        self._keep_alive = event.keep_alive
        self._pause_after = event.upgrade is not None
        self._start_body(
            content_length=event.content_length, chunked=event.chunked, until_close=False
        )
        return event


class HeadMemo:
    """The last final response head that :class:`ResponseParser` objects sharing this memo
    parsed: its bytes, the method of the request it answered, and its event.

    Why: a backend answers the same resource with the same head, byte for byte, until its
    ``Date`` moves on (RFC 9110 §6.6.1, once a second), and the lexical check, the codec's
    parse and the framing rules cost more than the rest of a small exchange's relay. They are a
    pure function of the head and the method (HEAD decides whether a body follows, RFC 9112
    §6.3), so the next identical head gets the same event without them: events are never
    changed once made (:mod:`.events`). One entry, the head's bytes kept once: a head that
    differs costs one comparison. Share a memo only between parsers of the same codec and
    limits (a forwarder's).
    """

    __slots__ = ("event", "head", "method")

    def __init__(self) -> None:
        self.head = b""
        self.method = b""
        self.event: ResponseHead | None = None


class ResponseParser(_MessageParser):
    """Client side: parses responses from an upstream (RFC 9112 §4); every error is 502.

    Call :meth:`expect_response` with the method of each request sent (in order, pipelining
    allowed) so HEAD responses are read without a body (RFC 9112 §6.3 rule 1). ``memo``: the
    last final head parsed by this parser or others sharing it (:class:`HeadMemo`).
    """

    __slots__ = ("_memo", "_methods")

    def __init__(
        self, codec: HeadCodec, *, limits: Limits = DEFAULT_LIMITS, memo: HeadMemo | None = None
    ) -> None:
        super().__init__(codec, limits, 502)
        self._methods: deque[bytes] = deque()
        self._memo = memo

    def expect_response(self, method: bytes) -> None:
        """Record that a request with ``method`` was sent and its response is due."""
        self._methods.append(method)

    def _too_large(self) -> ProtocolError:
        return ProtocolError(502, "upstream: header section over the limit")

    def _on_head(self, head: bytes) -> Event:
        if not self._methods:
            return self._fail(ProtocolError(502, "upstream: response without a request"))
        method = self._methods[0]
        memo = self._memo
        event: ResponseHead | ProtocolError | None = None
        if memo is not None and memo.head == head and memo.method == method:
            event = memo.event  # None before the first head
        if event is None:
            event = self._parse_head(head, method)
            if memo is not None and isinstance(event, ResponseHead) and event.status >= 200:
                memo.head, memo.method, memo.event = head, method, event
        if isinstance(event, ResponseHead):
            status = event.status
            if status < 200 and status != 101:
                return event  # informational: the final response follows
            self._methods.popleft()
            self._keep_alive = event.keep_alive
            self._pause_after = status == 101
            self._start_body(
                content_length=event.content_length,
                chunked=event.chunked,
                until_close=event.has_body and event.content_length is None and not event.chunked,
            )
            return event
        return self._fail(event)

    def _parse_head(self, head: bytes, method: bytes) -> ResponseHead | ProtocolError:
        error = check_response_syntax(head, raw_lengths=self._raw_lengths)
        if error is not None:
            return error
        try:
            status, reason, version, headers = self._codec.parse_response_head(head)
        except HeadRejected as exc:
            return ProtocolError(502, f"upstream: {self._codec.name}: {exc}")
        return frame_response(
            status=status,
            reason=reason,
            http_version=version,
            headers=headers,
            request_method=method,
        )
