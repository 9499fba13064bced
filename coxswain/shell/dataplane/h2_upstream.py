"""An HTTP/2 connection to one backend endpoint (RFC 9113), carrying many requests at once.

Design:

- **Streams.** Each forwarded request opens a stream (:meth:`H2Upstream.open`): HEADERS at
  once, the body as DATA within the backend's windows (:func:`.h2_stream.send_data`), its
  response read from an :class:`UpstreamStream`: the head, then the body as codec events
  (:class:`.h2_stream.H2Body`) that the relay (:mod:`.downstream`) takes as it takes an
  HTTP/1.1 backend's. A connection carries at most :attr:`H2Upstream.limit` streams: the
  backend's ``SETTINGS_MAX_CONCURRENT_STREAMS`` (RFC 9113 §6.5.2), capped at
  :data:`STREAM_LIMIT`; :mod:`.h2_pool` opens another connection past it.
- **One reader.** :meth:`H2Upstream.run`, a task of the proxy's long-lived nursery, reads the
  backend's frames and hands each stream its own; the protocol is the proxy's own sans-IO
  client (:mod:`coxswain.http2.client`), and frames go out through the connection's one
  writer (:mod:`.h2_writer`), those its streams make in one turn of the scheduler in one
  send, in the order they were made.
- **Flow control both ways** (RFC 9113 §5.2). Response DATA is given back to the backend's
  windows only as the relay takes it, so a client that reads slowly slows its stream's
  backend down and the proxy holds at most a stream window (:data:`STREAM_WINDOW`) per
  stream; the connection window is as large as all of them, so one stalled stream never
  stalls the others. The request body goes out only as the backend's windows open.
- **Checked once.** The codec checks frames only; the response head and trailers are
  checked field by field (:mod:`coxswain.http2.backend`), as a client's request is.
- **Ends.** A GOAWAY from the backend (RFC 9113 §6.8) closes the connection to new streams:
  those it did not process (above its last stream id) are refused, and may be sent again on
  another connection, since the backend never saw them; the others finish. A stream reset by
  the backend fails alone (``REFUSED_STREAM`` counts as refused, RFC 9113 §8.7). A broken
  connection, or one that broke HTTP/2, fails every stream it carries. A connection without
  a stream for ``idle_timeout`` is closed with GOAWAY ``NO_ERROR``. Sends are bounded by the
  transport's send timeout (:meth:`.Connection.bound_sends`), every wait of a stream by its
  exchange's timer; a stream the relay leaves before it ended is reset (``CANCEL``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import trio

from coxswain.http1 import DEFAULT_LIMITS
from coxswain.http2.client import ClientConnection, ResponseReceived
from coxswain.http2.events import (
    ConnectionTerminated,
    DataReceived,
    GoAwayReceived,
    SettingsReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from coxswain.http2.frames import CANCEL, NO_ERROR, PROTOCOL_ERROR, REFUSED_STREAM
from coxswain.http2.request import trailer_fields
from coxswain.route.grpc_status import status_label
from coxswain.shell.dataplane.h2_sender import H2Sender
from coxswain.shell.dataplane.h2_stream import H2Body
from coxswain.shell.dataplane.h2_writer import FrameWriter
from coxswain.shell.dataplane.wire import RECEIVE_SIZE

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from coxswain.http2.events import Event
    from coxswain.shell.dataplane.pool import Upstream
    from coxswain.shell.dataplane.wire import Timer

__all__ = ["STREAM_LIMIT", "H2Upstream", "StreamFailed", "UpstreamStream"]

STREAM_LIMIT: Final = 100
"""Streams on one connection at most, whatever the backend allows (RFC 9113 §6.5.2 suggests no
fewer than 100; Envoy's default per connection is 100 as well)."""

STREAM_WINDOW: Final = 64 * 1024


class StreamFailed(Exception):
    """A stream ended before its response head; ``refused`` when the backend never processed
    it (GOAWAY past it, ``REFUSED_STREAM``), so that it may be sent again elsewhere."""

    def __init__(self, reason: str, *, refused: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.refused = refused


class UpstreamStream:
    """One request's stream: its response head, then its body (:attr:`body`)."""

    __slots__ = (
        "_failure",
        "_head",
        "_waiter",
        "body",
        "connection",
        "grpc_status",
        "sent_end",
        "stream_id",
    )

    def __init__(self, connection: H2Upstream, stream_id: int, read_timeout: float) -> None:
        self.connection = connection
        self.stream_id = stream_id
        self.body = H2Body(connection, stream_id, None, ended=False, read_timeout=read_timeout)
        self.sent_end = False  # the request's END_STREAM went out
        self.grpc_status = ""  # from the trailers, or a Trailers-Only head (status_label)
        self._head: tuple[Sequence[tuple[bytes, bytes]], bool] | None = None
        self._failure: StreamFailed | None = None
        self._waiter: trio.lowlevel.Task | None = None  # the relay, parked until the head

    async def head(self, timer: Timer) -> tuple[Sequence[tuple[bytes, bytes]], bool]:
        """The final response's header list, and whether it ended the stream; each wait
        bounded by the body's read timeout through ``timer``.

        Raises:
            StreamFailed: the stream or its connection broke first.
        """
        self.body.timer = timer
        if self._head is None and self._failure is None:  # its frames were handed over already
            timer.arm(self, self.body.read_timeout)
            while self._head is None and self._failure is None:
                # parked without an Event: one wait per call, woken by :meth:`_wake` only
                self._waiter = trio.lowlevel.current_task()
                await trio.lowlevel.wait_task_rescheduled(self._abort)
            timer.disarm()
        if self._head is None:
            assert self._failure is not None
            raise self._failure
        return self._head

    # --- what the connection's reader does ----------------------------------------------------

    def received_head(self, headers: Sequence[tuple[bytes, bytes]], ended: bool) -> None:
        self._head = (headers, ended)
        if ended:
            self.grpc_status = status_label(headers)  # a gRPC "Trailers-Only" answer's
            self.body.end()
        self._wake()

    def failed(self, reason: str, *, refused: bool = False) -> None:
        """The stream broke: before its head, :meth:`head` raises; after, its body does."""
        if self._failure is None:
            self._failure = StreamFailed(reason, refused=refused)
        self.body.fail(reason)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            trio.lowlevel.reschedule(waiter)

    def _abort(self, _: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        """The relay's wait was cancelled (its exchange's scope): no wake is due any more."""
        self._waiter = None
        return trio.lowlevel.Abort.SUCCEEDED


class H2Upstream(H2Sender):
    """One HTTP/2 connection to a backend endpoint; see the module's design."""

    conn: ClientConnection

    def __init__(
        self,
        transport: Upstream,
        name: str,
        *,
        read_timeout: float,
        idle_timeout: float,
        closed: Callable[[H2Upstream], None],
        record: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.conn = ClientConnection(
            initial_window=STREAM_WINDOW,
            connection_window=STREAM_LIMIT * STREAM_WINDOW,
            max_header_list_size=DEFAULT_LIMITS.max_head_bytes,
        )
        self.writer = FrameWriter(self.conn, transport)
        self.transport = transport
        self.name = name  # address:port, for the access log
        self.read_timeout = read_timeout
        self.idle_timeout = idle_timeout
        self.streams: dict[int, UpstreamStream] = {}
        self.closing = False  # no new stream: GOAWAY either way, or the connection broke
        self.settled = trio.Event()  # the backend's first SETTINGS arrived (or it ended first)
        self._windows: dict[int, trio.Event] = {}
        self._closed = closed
        self._record = record  # "goaway" received, a stream "refused"
        self._receiving: trio.CancelScope | None = None
        self.conn.initiate()

    @property
    def limit(self) -> int:
        """How many streams the connection may carry at once."""
        return min(self.conn.peer_max_concurrent_streams, STREAM_LIMIT)

    def room(self) -> bool:
        """Whether the connection takes one more stream."""
        return (
            not self.closing
            and not self.writer.broken
            and len(self.streams) < min(self.conn.peer_max_concurrent_streams, STREAM_LIMIT)
        )  # the limit inlined: asked on every request

    # --- streams --------------------------------------------------------------------------------

    def open(self, fields: Sequence[tuple[bytes, bytes]], *, end_stream: bool) -> UpstreamStream:
        """A new stream carrying the request's HEADERS (sent with the next flush).

        Raises:
            StreamFailed: the connection can take no new stream (refused: try another).
        """
        if self.closing or self.writer.broken:
            raise StreamFailed("the connection is closing", refused=True)
        stream_id = self.conn.send_request(
            fields if isinstance(fields, list) else list(fields), end_stream
        )
        if not stream_id:  # the backend's limit lowered meanwhile, or identifiers spent
            raise StreamFailed("the backend takes no more streams here", refused=True)
        stream = UpstreamStream(self, stream_id, self.read_timeout)
        stream.sent_end = end_stream
        streams = self.streams
        streams[stream_id] = stream
        if len(streams) == 1 and self._receiving is not None:
            self._receiving.deadline = math.inf  # not idle any more (only the first stream)
        return stream

    def forget(self, stream: UpstreamStream) -> bool:
        """The relay is done with ``stream``: give back the window of DATA nobody read, and
        reset the stream if it is still open either way (``CANCEL``, RFC 9113 §8.1: the
        client went, or the response ended before the request). Whether that made frames
        to send (:meth:`send_soon`)."""
        stream_id = stream.stream_id
        if self.streams.pop(stream_id, None) is None:
            return False
        self._windows.pop(stream_id, None)
        if not self.streams and self._receiving is not None:
            self._receiving.deadline = trio.current_time() + self.idle_timeout
        if self.conn.terminated:  # broken: its GOAWAY is its last frame (RFC 9113 §5.4.1)
            return False
        unread = stream.body.unread()
        if unread:
            self.acknowledge(stream_id, unread)
        if not self.conn.is_open(stream_id):
            return bool(unread)
        self.reset(stream_id)
        return True

    def acknowledge(self, stream_id: int, flow: int) -> None:
        """Body bytes were taken (or dropped): open the backend's windows again by as much."""
        if flow:
            self.conn.acknowledge_received_data(flow, stream_id)

    def reset(self, stream_id: int, code: int = CANCEL) -> None:
        """Reset the stream (``CANCEL``: the client went, or the response ended first, RFC 9113
        §8.1); a closed one stays closed."""
        self.conn.reset_stream(stream_id, code)

    async def flush(self) -> None:
        """Hand the frames made so far to the writer and wait while it is inside a send
        (:meth:`.FrameWriter.flush`); with none made, return at once, without a trip through
        the scheduler: a relay waits or sends right after each flush.

        Raises:
            trio.BrokenResourceError: the connection broke.
        """
        if self.conn.has_data_to_send:
            await self.writer.flush()

    # --- the reader -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Read the backend's frames until the connection ends; then fail what is left and
        close the transport."""
        reason = "the backend closed the connection"
        writer = self.writer
        try:
            async with trio.open_nursery() as sending:
                sending.start_soon(writer.run)  # the preface first, which a backend may await
                try:
                    while True:
                        data = await self._receive()
                        if not data:
                            break
                        for event in self.conn.receive_data(data):
                            if type(event) is ConnectionTerminated:
                                reason = f"the backend broke HTTP/2: {event.reason}"
                            self._dispatch(event)
                        if self.conn.terminated:
                            break
                        # the answers (acknowledgements, window updates) go out; a backend
                        # whose socket is full is not read further meanwhile; and frames that
                        # ask for no answer must not hog the loop: this yields
                        await writer.flush()
                        if self.closing and not self.streams:
                            break
                except (trio.BrokenResourceError, trio.ClosedResourceError) as err:
                    reason = f"the backend connection broke: {err}"
                finally:
                    self.closing = True
                    self.settled.set()
                    self._closed(self)
                    for stream in list(self.streams.values()):
                        stream.failed(reason)
                    self.open_window(0)
                    writer.close()  # what is left (a GOAWAY) goes out first
        finally:
            self.transport.close()

    async def _receive(self) -> bytes:
        """The next bytes; empty when the backend closed, or when the connection stayed
        without a stream for ``idle_timeout`` (then it says GOAWAY first)."""
        while True:
            idle = not self.streams
            scope = trio.CancelScope(
                deadline=trio.current_time() + self.idle_timeout if idle else math.inf
            )
            self._receiving = scope
            try:
                with scope:
                    return bytes(await self.transport.receive_some(RECEIVE_SIZE))
            finally:
                self._receiving = None
            if not self.streams:  # idle for idle_timeout
                self.closing = True
                self.conn.close_connection(NO_ERROR)  # sent by the writer as it stops
                return b""

    def _dispatch(self, event: Event) -> None:
        kind = type(event)
        if kind is DataReceived:
            assert isinstance(event, DataReceived)
            stream = self.streams.get(event.stream_id)
            if stream is not None:
                stream.body.feed(event.data, event.flow)
            else:
                self.acknowledge(event.stream_id, event.flow)
        elif kind is ResponseReceived:
            assert isinstance(event, ResponseReceived)
            stream = self.streams.get(event.stream_id)
            if stream is not None:
                stream.received_head(event.headers, event.ended)
        elif kind is TrailersReceived:
            assert isinstance(event, TrailersReceived)
            self._trailers(event)
        elif kind is StreamEnded:
            assert isinstance(event, StreamEnded)
            stream = self.streams.get(event.stream_id)
            if stream is not None:
                stream.body.end()
        elif kind is WindowUpdated:
            assert isinstance(event, WindowUpdated)
            self.open_window(event.stream_id)
        elif kind is StreamReset:
            assert isinstance(event, StreamReset)
            self._reset(event)
        elif kind is SettingsReceived:
            self.open_window(0)  # the initial window may have grown
            self.settled.set()
        elif kind is GoAwayReceived:
            assert isinstance(event, GoAwayReceived)
            self._goaway(event)

    def _reset(self, event: StreamReset) -> None:
        """A stream the backend reset (or the connection reset, for a rule it broke) fails
        alone; one refused was never processed (RFC 9113 §8.7)."""
        stream = self.streams.get(event.stream_id)
        if stream is None:
            return
        code = event.error_code
        refused = code == REFUSED_STREAM and event.remote
        if refused:
            self._record("refused")
        who = "the backend reset the stream" if event.remote else "the backend broke the stream"
        stream.failed(f"{who} (error code {code})", refused=refused)

    def _trailers(self, event: TrailersReceived) -> None:
        stream_id = event.stream_id
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        trailers = trailer_fields(event.headers)
        if isinstance(trailers, str):
            self.reset(stream_id, PROTOCOL_ERROR)
            stream.failed(f"malformed trailers from the backend: {trailers}")
            return
        stream.grpc_status = status_label(trailers)
        stream.body.end(trailers)

    def _goaway(self, event: GoAwayReceived) -> None:
        """New streams go elsewhere; those the backend did not process are refused."""
        self.closing = True
        self._closed(self)
        self._record("goaway")
        last = event.last_stream_id
        for stream_id, stream in list(self.streams.items()):
            if stream_id > last:
                self._record("refused")
                stream.failed("the backend sent GOAWAY before this stream", refused=True)
            elif event.error_code != NO_ERROR:
                stream.failed(f"the backend sent GOAWAY (error code {event.error_code})")
