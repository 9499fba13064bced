"""The client's side of a forwarded exchange, whatever protocol the client speaks.

The forwarder (:mod:`.upstream`) hands the client's side two things: a :class:`BodySource`,
from which it reads the request body as codec events, and a :class:`Downstream`, to which it
gives the response, whose body it reads from a :class:`ResponseSource`: an
:class:`~.wire.EventReader` over an HTTP/1.1 backend, or the body of an HTTP/2 backend's stream
(:class:`~.h2_stream.H2Body`, DATA then trailers, never through the HTTP/1.1 parser). Both
HTTP versions route and forward the same way towards either kind of backend; only the framing
towards the client differs:

- :class:`Http1Downstream`: the client's HTTP/1.1 connection (RFC 9112). A sized response keeps
  its ``Content-Length``; chunked stays chunked; a close-delimited body is chunked for an
  HTTP/1.1 client, or close-delimited for an HTTP/1.0 one (RFC 9112 §6.3 rule 8). The head and
  what the parser already holds of the body go out in one send. Trailers go in the last chunk
  when the request said ``TE: trailers``, else they are dropped (:mod:`coxswain.route.relay`,
  rule 4). An HTTP/2 response without a body and without a length (its HEADERS ended the
  stream) gets ``Content-Length: 0``, which an HTTP/1.1 client needs to see where it ends.
- one HTTP/2 stream (:mod:`.h2_stream`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

import trio

from coxswain.http1 import (
    NEED_DATA,
    Data,
    EndOfMessage,
    frame_chunk,
    frame_last_chunk,
    frame_response_head,
)
from coxswain.route.relay import accepts_trailers
from coxswain.shell.dataplane.wire import RECEIVE_SIZE

if TYPE_CHECKING:
    from coxswain.http1 import Event, NeedData, RequestHead, ResponseHead
    from coxswain.route.forward import Fields
    from coxswain.shell.dataplane.wire import Timer

__all__ = ["BodySource", "Downstream", "Exchange", "Http1Downstream", "ResponseSource"]

_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


@dataclass(slots=True)
class Exchange:
    """What one forwarded exchange did: for the access log and the connection loop."""

    status: int = 0
    upstream: str = ""
    keep_alive: bool = True
    response_started: bool = False
    grpc_status: str = ""  # a relayed gRPC response's (route.grpc_status.status_label)


class BodySource(Protocol):
    """Where the request body comes from: ``Data`` events, then ``EndOfMessage`` (or a
    ``ProtocolError``). ``timer`` is the client's timer, whose scope the route's timeout bounds
    (:class:`~.wire.Timer`)."""

    timer: Timer | None

    async def next(self, read_timeout: float | None = None) -> Event: ...

    def skip_end(self) -> None:
        """Take the ``EndOfMessage`` of a request without a body, which is there already."""


class PendingEvents(Protocol):
    def next_event(self) -> Event | NeedData:
        """The next event if it is there already, else ``NEED_DATA``."""


class ResponseSource(Protocol):
    """Where a response body comes from: events taken without waiting from ``parser`` while
    it has them, then from :meth:`next`, which waits (bounded by the exchange's timer)."""

    @property
    def parser(self) -> PendingEvents: ...

    async def next(self, read_timeout: float | None = None) -> Event: ...


class Downstream(Protocol):
    """Where the response goes."""

    async def send_continue(self) -> None:
        """Tell the client to send its body (``Expect: 100-continue``, RFC 9110 §10.1.1)."""

    async def respond(
        self,
        reader: ResponseSource,
        head: RequestHead,
        response: ResponseHead,
        headers: Fields,
        exchange: Exchange,
    ) -> bool:
        """Relay ``response`` with ``headers`` (relayed and edited already), its body read from
        ``reader``; whether the upstream connection ended the exchange cleanly. Sets
        ``exchange.status`` and ``response_started`` once the head is sent, and clears
        ``exchange.keep_alive`` when the client's connection must close after it."""


class Http1Downstream:
    """The client's HTTP/1.1 connection (one per connection, for all its exchanges)."""

    __slots__ = ("stream",)

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self.stream = stream

    async def send_continue(self) -> None:
        await self.stream.send_all(_CONTINUE)

    async def respond(
        self,
        reader: ResponseSource,
        head: RequestHead,
        response: ResponseHead,
        headers: Fields,
        exchange: Exchange,
    ) -> bool:
        client_stream = self.stream
        client_http11 = head.http_version == b"1.1"
        rechunk = False
        if response.has_body and response.content_length is None:
            if client_http11:
                headers.append((b"transfer-encoding", b"chunked"))
                rechunk = True
            else:
                exchange.keep_alive = False
        if not head.keep_alive or not exchange.keep_alive:
            exchange.keep_alive = False
            headers.append((b"connection", b"close"))
        # every field came from the parser or passed Served.edits
        response_head = frame_response_head(
            status=response.status, reason=response.reason, headers=headers, validate=False
        )
        exchange.status = response.status
        exchange.response_started = True
        # what the parser already holds goes out with the head: one send for a small response
        pending = response_head
        parser = reader.parser
        try:
            if not response.has_body:
                if response.http_version == b"2" and _unframed(head, response):
                    pending = _with_empty_length(response_head)
                await client_stream.send_all(pending)
                return response.keep_alive
            while True:
                event = parser.next_event()
                if event is NEED_DATA:
                    if pending:
                        await client_stream.send_all(pending)
                        pending = b""
                    event = await reader.next()
                if type(event) is Data:
                    piece = frame_chunk(event.data) if rechunk else event.data
                    pending = pending + piece if pending else piece
                    if len(pending) >= RECEIVE_SIZE:
                        await client_stream.send_all(pending)
                        pending = b""
                elif type(event) is EndOfMessage:
                    if rechunk:
                        trailers = event.trailers
                        if trailers and not accepts_trailers(head.headers):
                            trailers = ()
                        pending += frame_last_chunk(trailers)
                    await client_stream.send_all(pending)
                    return response.keep_alive
                else:  # a broken body: the client can only learn it from the connection closing
                    if pending:
                        await client_stream.send_all(pending)
                    exchange.keep_alive = False
                    return False
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            exchange.keep_alive = False  # either side broke off; the client must not wait
            return False


_NO_CONTENT: Final = frozenset({204, 304})
_EMPTY_LENGTH: Final = b"content-length: 0\r\n\r\n"


def _unframed(head: RequestHead, response: ResponseHead) -> bool:
    """An HTTP/2 response that ended with its HEADERS may have content an HTTP/1.1 client
    must be told is empty: not to HEAD, not a 204 or 304, and without a length."""
    return (
        response.content_length is None
        and head.method != b"HEAD"
        and response.status not in _NO_CONTENT
    )


def _with_empty_length(response_head: bytes) -> bytes:
    """``response_head`` with ``Content-Length: 0`` before its final empty line."""
    return response_head[:-2] + _EMPTY_LENGTH
