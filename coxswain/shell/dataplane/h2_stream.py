"""One HTTP/2 stream's two halves for the forwarder (:mod:`.downstream`).

- :class:`H2Body` hands a body received on a stream to the forwarder as codec events: a
  client's request body, or a backend's response body (:mod:`.h2_upstream`), whose events the
  relay takes as it takes an HTTP/1.1 parser's (:class:`~.downstream.ResponseSource`). The
  connection's loop feeds it the DATA it receives; the bytes are given back to the sender's
  flow-control windows (stream and connection, RFC 9113 §5.2) only when the forwarder takes
  them, so a peer that reads slowly slows the other down and the proxy holds at most one
  window of body per stream — never a whole body.
- :class:`H2Downstream` writes the response as HEADERS, DATA within the client's windows, and
  trailers or an empty DATA ending the stream, through the connection's one writer
  (:mod:`.h2_writer`): a piece of body waits while the writer is inside a send, the frames that
  end the stream are handed over without waiting. A stream whose window stays shut for
  ``timeouts.client_send`` is cut as an HTTP/1.1 client that stops reading is.
  :func:`send_data`, the DATA within a peer's windows, and :func:`send_end`, a stream's last
  DATA and trailers, serve requests to backends too.

Both wait on the exchange's :class:`~.wire.Timer`, whose scope bounds the whole exchange and
which the connection cancels when the client resets the stream.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

import trio

from coxswain.http1 import NEED_DATA, Data, EndOfMessage, ProtocolError
from coxswain.http2.backend import trailer_list
from coxswain.http2.response import stream_fields

if TYPE_CHECKING:
    from coxswain.http1 import Event, Headers, NeedData, RequestHead, ResponseHead
    from coxswain.route.forward import Fields
    from coxswain.shell.dataplane.downstream import Exchange, ResponseSource
    from coxswain.shell.dataplane.wire import Timer

__all__ = [
    "ClientSession",
    "H2Body",
    "H2Downstream",
    "Sender",
    "Session",
    "send_data",
    "send_end",
]


class Sender(Protocol):
    """What a stream's halves send through: the proxy's own server connection towards a client
    (:class:`coxswain.http2.server.ServerConnection`), or its client connection towards a
    backend (:class:`coxswain.http2.client.ClientConnection`), which has the same methods."""

    @property
    def max_outbound_frame_size(self) -> int: ...

    def local_flow_control_window(self, stream_id: int) -> int: ...

    def send_headers(
        self, stream_id: int, headers: list[tuple[bytes, bytes]], end_stream: bool = False
    ) -> None: ...

    def send_data(self, stream_id: int, data: bytes, end_stream: bool = False) -> None: ...


class Session(Protocol):
    """What a stream's halves use of their connection (:class:`.h2_connection.H2Session`,
    :class:`.h2_upstream.H2Upstream`)."""

    @property
    def conn(self) -> Sender: ...

    async def flush(self) -> None:
        """Send what ``h2`` has made, in order."""

    def acknowledge(self, stream_id: int, flow: int) -> None:
        """Body bytes were taken: open the client's windows again by as much."""

    def reset(self, stream_id: int) -> None:
        """Reset the stream (``INTERNAL_ERROR``)."""

    async def window(self, stream_id: int) -> None:
        """Wait for the client to open the stream's or the connection's window."""


class ClientSession(Session, Protocol):
    """What a response to a client uses of the client's connection
    (:class:`.h2_connection.H2Session`): its one writer besides."""

    def send_soon(self) -> None:
        """Have the frames made so far sent by the connection's writer, without waiting."""


class H2Body:
    """The request body of one stream, as ``Data`` then ``EndOfMessage`` events."""

    __slots__ = (
        "_arrived",
        "_chunks",
        "_ended",
        "_failed",
        "_limit",
        "_over",
        "_session",
        "_total",
        "_trailers",
        "read_timeout",
        "stream_id",
        "timer",
    )

    def __init__(
        self,
        session: Session,
        stream_id: int,
        timer: Timer | None,
        *,
        ended: bool,
        read_timeout: float,
        limit: int | None = None,
    ) -> None:
        self._session = session
        self.stream_id = stream_id
        self.timer: Timer | None = timer
        self.read_timeout = read_timeout
        self._chunks: deque[tuple[bytes, int]] = deque()
        self._ended = ended
        self._trailers: Headers = ()
        self._failed: ProtocolError | None = None
        self._arrived: trio.Event | None = None
        self._limit = limit
        self._total = 0
        self._over = False

    def limit(self, max_body: int) -> None:
        """Lower the body limit to ``max_body`` bytes (a limit already lower stays): the
        proxy's ``--max-body-bytes``, or a path's own (ingress-nginx's ``proxy-body-size``).
        A body may come without ``content-length`` (RFC 9113 §8.1.1), so its DATA are counted."""
        if self._limit is None or max_body < self._limit:
            self._limit = max_body
            self._check()  # DATA may have come before the request was routed

    def feed(self, data: bytes, flow: int) -> None:
        """DATA received: ``data`` and the window it took (padding included). Past the limit
        the body is 413 at once; what came and what still comes is dropped, its window given
        back, so that the connection's other streams go on."""
        if self._over:
            self._session.acknowledge(self.stream_id, flow)
            return
        self._total += len(data)
        self._chunks.append((data, flow))
        if self._limit is not None:  # a backend's response body has none
            self._check()
        if self._arrived is not None:
            self._wake()

    def _check(self) -> None:
        if not self._over and self._limit is not None and self._total > self._limit:
            self._over = True
            self._failed = ProtocolError(413, "request body over the body limit")
            self._session.acknowledge(self.stream_id, self.unread())
            self._chunks.clear()
            self._wake()

    def end(self, trailers: Headers = ()) -> None:
        """The peer ended the stream, with ``trailers`` if it sent some (``h2`` tells the
        trailers, then the end: the second call keeps them)."""
        if self._ended:
            return
        self._ended = True
        self._trailers = trailers
        self._wake()

    def fail(self, reason: str) -> None:
        """The stream broke (reset, or its connection lost) before it ended: what was received
        is still read, then a ``ProtocolError`` with ``reason``."""
        if not self._ended and self._failed is None:
            self._failed = ProtocolError(502, reason)
            self._wake()

    def unread(self) -> int:
        """The window taken by DATA not read: the connection gives it back when the stream
        ends before the forwarder read it all."""
        chunks = self._chunks
        return sum(flow for _, flow in chunks) if chunks else 0

    @property
    def ended(self) -> bool:
        return self._ended

    def take_whole(self, limit: int) -> tuple[bytes, Headers] | None:
        """The whole body and its trailers at once, its window given back in one call, when
        the stream has ended unbroken with at most ``limit`` bytes of DATA (a gRPC unary
        call's, :mod:`.relay_h2`); else None, nothing taken."""
        if not self._ended or self._failed is not None:
            return None
        chunks = self._chunks
        if len(chunks) == 1:
            data, flow = chunks[0]
        else:
            data = b"".join([piece for piece, _ in chunks])
            flow = sum([taken for _, taken in chunks])
        if len(data) > limit:
            return None
        chunks.clear()
        if flow:
            self._session.acknowledge(self.stream_id, flow)
        return data, self._trailers

    @property
    def parser(self) -> H2Body:
        """What the relay takes events from without waiting (:meth:`next_event`): the body
        itself, as an :class:`~.wire.EventReader`'s parser is for HTTP/1.1."""
        return self

    def next_event(self) -> Event | NeedData:
        """The next event if one is there, else ``NEED_DATA``. Taking ``Data`` gives its
        window back (sent with the next flush)."""
        failed = self._failed
        if self._over and failed is not None:
            return failed
        if self._chunks:
            data, flow = self._chunks.popleft()
            self._session.acknowledge(self.stream_id, flow)
            return Data(data)
        if self._ended:
            return EndOfMessage(self._trailers)
        if self._failed is not None:
            return self._failed
        return NEED_DATA

    async def next(self, read_timeout: float | None = None) -> Event:
        event = self.next_event()
        if event is NEED_DATA:
            timeout = self.read_timeout if read_timeout is None else read_timeout
            await self._session.flush()  # the windows given back by what was taken
            event = self.next_event()  # what arrived while the flush waited
            while event is NEED_DATA:
                arrived = self._arrived = trio.Event()
                timer = self.timer
                assert timer is not None
                timer.arm(self, timeout)
                await arrived.wait()
                timer.disarm()
                event = self.next_event()
        if type(event) is Data:
            await self._session.flush()  # a WINDOW_UPDATE, once half a window is taken
        return event

    def skip_end(self) -> None:
        """A request without a body: its HEADERS ended the stream; nothing to take."""

    def _wake(self) -> None:
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None


class H2Downstream:
    """Where one stream's response goes."""

    __slots__ = ("_session", "send_timeout", "stream_id", "timer")

    def __init__(
        self, session: ClientSession, stream_id: int, timer: Timer, *, send_timeout: float
    ) -> None:
        self._session = session
        self.stream_id = stream_id
        self.timer = timer
        self.send_timeout = send_timeout

    async def send_continue(self) -> None:
        self._session.conn.send_headers(self.stream_id, [(b":status", b"100")])
        await self._session.flush()

    async def respond(
        self,
        reader: ResponseSource,
        head: RequestHead,
        response: ResponseHead,
        headers: Fields,
        exchange: Exchange,
    ) -> bool:
        session = self._session
        conn = session.conn
        fields = stream_fields(response.status, headers)
        exchange.status = response.status
        exchange.response_started = True
        try:
            if not response.has_body:
                conn.send_headers(self.stream_id, fields, end_stream=True)
                session.send_soon()
                return response.keep_alive
            conn.send_headers(self.stream_id, fields)
            parser = reader.parser
            if type(parser) is H2Body:  # an HTTP/2 backend's: a body all here goes at once
                whole = parser.take_whole(
                    min(
                        conn.local_flow_control_window(self.stream_id), conn.max_outbound_frame_size
                    )
                )
                if whole is not None:  # with its trailers (a gRPC answer's), in one send
                    send_end(conn, self.stream_id, *whole)
                    session.send_soon()
                    return response.keep_alive
            event = parser.next_event()
            while True:
                if event is NEED_DATA:
                    session.send_soon()
                    event = await reader.next()
                if type(event) is Data:
                    data = event.data
                    event = parser.next_event()
                    if (
                        type(event) is EndOfMessage
                        and len(data) <= conn.local_flow_control_window(self.stream_id)
                        and len(data) <= conn.max_outbound_frame_size
                    ):  # the whole body is here: it and the trailers (a gRPC answer's) end the
                        # stream, in one send with the head
                        if event.trailers:
                            send_end(conn, self.stream_id, data, event.trailers)
                        else:
                            conn.send_data(self.stream_id, data, end_stream=True)
                        session.send_soon()
                        return response.keep_alive
                    await self.send_data(data)
                    continue
                if type(event) is EndOfMessage:
                    send_end(conn, self.stream_id, b"", event.trailers)
                    session.send_soon()
                    return response.keep_alive
                else:  # a broken body: the client learns it from the stream's reset
                    session.reset(self.stream_id)
                    session.send_soon()
                    return False
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False

    async def send_data(self, data: bytes) -> None:
        """Send ``data`` within the client's windows (:func:`send_data`)."""
        await send_data(self._session, self.stream_id, data, self.timer, self.send_timeout, self)


def send_end(conn: Sender, stream_id: int, data: bytes, trailers: Headers) -> None:
    """End the stream: its last piece of body (within the peer's windows), then the trailers if
    there are some (RFC 9113 §8.1), else END_STREAM on that DATA."""
    if not trailers:
        conn.send_data(stream_id, data, end_stream=True)
        return
    if data:
        conn.send_data(stream_id, data)
    conn.send_headers(stream_id, trailer_list(trailers), end_stream=True)


async def send_data(
    session: Session, stream_id: int, data: bytes, timer: Timer, wait_limit: float, waiter: object
) -> None:
    """Send ``data`` on the stream as DATA frames within the peer's windows (stream and
    connection, RFC 9113 §5.2), waiting for them to open; each wait is bounded by ``wait_limit``
    through ``timer``, ``waiter`` named as the one who stalled."""
    conn = session.conn
    view = memoryview(data)
    if not view:
        await trio.lowlevel.checkpoint()  # the relay loop yields here too
    while view:
        window = min(conn.local_flow_control_window(stream_id), conn.max_outbound_frame_size)
        if window <= 0:
            await session.flush()
            if conn.local_flow_control_window(stream_id) <= 0:  # not opened meanwhile
                timer.arm(waiter, wait_limit)
                await session.window(stream_id)
                timer.disarm()
            continue
        conn.send_data(stream_id, bytes(view[:window]))
        view = view[window:]
        await session.flush()  # a send per piece: the relay loop yields through it
