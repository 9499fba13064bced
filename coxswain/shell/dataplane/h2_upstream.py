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
  backend's frames and hands each stream its own; frames go out through
  :meth:`H2Upstream.flush`, one sender at a time, in the order ``h2`` made them.
- **Flow control both ways** (RFC 9113 §5.2). Response DATA is given back to the backend's
  windows only as the relay takes it, so a client that reads slowly slows its stream's
  backend down and the proxy holds at most a stream window (:data:`STREAM_WINDOW`) per
  stream; the connection window is as large as all of them, so one stalled stream never
  stalls the others. The request body goes out only as the backend's windows open.
- **Checked once.** ``h2``'s header validation is off; the response head and trailers are
  checked field by field (:mod:`coxswain.http2.backend`), as a client's request is.
- **Ends.** A GOAWAY from the backend (RFC 9113 §6.8) closes the connection to new streams:
  those it did not process (above its last stream id) are refused, and may be sent again on
  another connection, since the backend never saw them; the others finish (``h2`` closes its
  state machine on a GOAWAY and would refuse their frames: :class:`_Connection` keeps it
  open). A stream reset by
  the backend fails alone (``REFUSED_STREAM`` counts as refused, RFC 9113 §8.7). A broken
  connection, or one that broke HTTP/2, fails every stream it carries. A connection without
  a stream for ``idle_timeout`` is closed with GOAWAY ``NO_ERROR``. Sends are bounded by the
  transport's send timeout (:meth:`.Connection.bound_sends`), every wait of a stream by its
  exchange's timer; a stream the relay leaves before it ended is reset (``CANCEL``).
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Final

import trio
from h2.connection import ConnectionState, H2Connection, _decode_headers
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RemoteSettingsChanged,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes

from coxswain.http1 import DEFAULT_LIMITS
from coxswain.http2.request import trailer_fields
from coxswain.route.grpc_status import status_label
from coxswain.shell.dataplane.h2_peer import H2Peer
from coxswain.shell.dataplane.h2_stream import H2Body
from coxswain.shell.dataplane.wire import RECEIVE_SIZE

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from h2.events import Event as H2Event
    from hyperframe.frame import Frame, GoAwayFrame, HeadersFrame

    from coxswain.shell.dataplane.pool import Upstream
    from coxswain.shell.dataplane.wire import Timer

__all__ = ["STREAM_LIMIT", "H2Upstream", "StreamFailed", "UpstreamStream"]

STREAM_LIMIT: Final = 100
"""Streams on one connection at most, whatever the backend allows (RFC 9113 §6.5.2 suggests no
fewer than 100; Envoy's default per connection is 100 as well)."""

STREAM_WINDOW: Final = 64 * 1024
SETTINGS: Final[dict[SettingCodes | int, int]] = {
    SettingCodes.ENABLE_PUSH: 0,
    SettingCodes.MAX_CONCURRENT_STREAMS: 0,  # the backend opens no stream towards the proxy
    SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
    SettingCodes.MAX_HEADER_LIST_SIZE: DEFAULT_LIMITS.max_head_bytes,
}


class _Connection(H2Connection):
    """``h2``'s protocol machine, for a connection to a backend, with two of its reactions
    changed: to a late answer on a stream the proxy reset, and to a GOAWAY while streams are
    in flight (each method says why)."""

    def _receive_headers_frame(self, frame: HeadersFrame) -> tuple[list[Frame], list[H2Event]]:
        """A header block on a stream the proxy opened and ``h2`` has forgotten since it
        closed (reset by the proxy while its answer was on the way) is decoded, so that the
        connection's HPACK state moves on (RFC 7541 §2.2), and dropped (RFC 9113 §5.1,
        "closed"). ``h2`` would take it for a stream the backend opens, past the proxy's
        ``SETTINGS_MAX_CONCURRENT_STREAMS`` of 0, and end the whole connection."""
        stream_id = frame.stream_id
        ours = stream_id % 2 and stream_id <= self.highest_outbound_stream_id
        if ours and stream_id not in self.streams:
            _decode_headers(self.decoder, frame.data)
            return [], []
        return super()._receive_headers_frame(frame)

    def _receive_goaway_frame(self, frame: GoAwayFrame) -> tuple[list[Frame], list[H2Event]]:
        """``h2`` closes the connection's state machine on a GOAWAY and drops the frames it
        had made and not yet sent; RFC 9113 §6.8 has the streams up to the GOAWAY's last
        stream id complete. So the machine stays open, its frames kept (a request body's
        DATA, a window given back); :attr:`H2Upstream.closing` keeps new streams off."""
        state = self.state_machine.state
        pending = self.data_to_send()
        frames, events = super()._receive_goaway_frame(frame)
        if state is ConnectionState.CLIENT_OPEN:
            self.state_machine.state = state
        self._data_to_send[:0] = pending
        return frames, events


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
        "_arrived",
        "_failure",
        "_head",
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
        self._arrived: trio.Event | None = None

    async def head(self, timer: Timer) -> tuple[Sequence[tuple[bytes, bytes]], bool]:
        """The final response's header list, and whether it ended the stream; each wait
        bounded by the body's read timeout through ``timer``.

        Raises:
            StreamFailed: the stream or its connection broke first.
        """
        self.body.timer = timer
        if self._head is None and self._failure is None:
            await self.connection.flush()
            while self._head is None and self._failure is None:
                arrived = self._arrived = trio.Event()
                timer.arm(self, self.body.read_timeout)
                await arrived.wait()
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
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None


class H2Upstream(H2Peer):
    """One HTTP/2 connection to a backend endpoint; see the module's design."""

    RESET = ErrorCodes.CANCEL  # the client went, or the response ended first (RFC 9113 §8.1)

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
        super().__init__(transport, client_side=True)
        self.conn = _Connection(self.conn.config)
        self.transport = transport
        self.name = name  # address:port, for the access log
        self.read_timeout = read_timeout
        self.idle_timeout = idle_timeout
        self.streams: dict[int, UpstreamStream] = {}
        self.closing = False  # no new stream: GOAWAY either way, or the connection broke
        self.settled = trio.Event()  # the backend's first SETTINGS arrived (or it ended first)
        self._closed = closed
        self._record = record  # "goaway" received, a stream "refused"
        self._receiving: trio.CancelScope | None = None
        self.start(SETTINGS, STREAM_LIMIT * STREAM_WINDOW)

    @property
    def limit(self) -> int:
        """How many streams the connection may carry at once."""
        return min(self.conn.remote_settings.max_concurrent_streams, STREAM_LIMIT)

    def room(self) -> bool:
        """Whether the connection takes one more stream."""
        return not self.closing and len(self.streams) < self.limit

    # --- streams --------------------------------------------------------------------------------

    def open(self, fields: Sequence[tuple[bytes, bytes]], *, end_stream: bool) -> UpstreamStream:
        """A new stream carrying the request's HEADERS (sent with the next flush).

        Raises:
            StreamFailed: the connection can take no new stream (refused: try another).
        """
        if self.closing:
            raise StreamFailed("the connection is closing", refused=True)
        try:
            stream_id = self.conn.get_next_available_stream_id()
            self.conn.send_headers(stream_id, fields, end_stream=end_stream)
        except H2Error as err:  # too many streams since the backend's settings changed
            raise StreamFailed(f"the backend refused a stream: {err}", refused=True) from err
        stream = UpstreamStream(self, stream_id, self.read_timeout)
        stream.sent_end = end_stream
        self.streams[stream_id] = stream
        if self._receiving is not None:
            self._receiving.deadline = math.inf  # not idle any more
        return stream

    def forget(self, stream: UpstreamStream) -> bool:
        """The relay is done with ``stream``: give back the window of DATA nobody read, and
        reset the stream if it is still open either way (``CANCEL``, RFC 9113 §8.1: the
        client went, or the response ended before the request). Whether that made frames
        to send (:meth:`flush_quietly`)."""
        stream_id = stream.stream_id
        if self.streams.pop(stream_id, None) is None:
            return False
        self._windows.pop(stream_id, None)
        if not self.streams and self._receiving is not None:
            self._receiving.deadline = trio.current_time() + self.idle_timeout
        unread = stream.body.unread()
        if unread:
            self.acknowledge(stream_id, unread)
        if stream.sent_end and stream.body.ended:
            return bool(unread)
        self.reset(stream_id)
        return True

    async def flush_quietly(self) -> None:
        """:meth:`flush`, for a task of its own: a connection that broke meanwhile has
        nothing left to say."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.flush()

    # --- the reader -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Read the backend's frames until the connection ends; then fail what is left and
        close the transport."""
        reason = "the backend closed the connection"
        try:
            await self.flush()  # the preface: a backend may wait for it before its SETTINGS
            while True:
                data = await self._receive()
                if not data:
                    break
                try:
                    events = self.conn.receive_data(data)
                except H2Error as err:
                    reason = f"the backend broke HTTP/2: {err}"
                    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                        await self.flush()  # the GOAWAY h2 made
                    break
                for event in events:
                    self._dispatch(event)
                await self.flush()
                await trio.lowlevel.checkpoint()  # frames that ask for no answer must not hog
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
                with contextlib.suppress(H2Error):
                    self.conn.close_connection(ErrorCodes.NO_ERROR)
                await self.flush()
                return b""

    def _dispatch(self, event: H2Event) -> None:
        if type(event) is DataReceived:
            stream = self.streams.get(event.stream_id or 0)
            flow = event.flow_controlled_length or 0
            if stream is not None:
                stream.body.feed(event.data or b"", flow)
            else:
                self.acknowledge(event.stream_id or 0, flow)
        elif type(event) is ResponseReceived:
            stream = self.streams.get(event.stream_id or 0)
            if stream is not None:
                stream.received_head(event.headers or (), event.stream_ended is not None)
        elif type(event) is TrailersReceived:
            self._trailers(event)
        elif type(event) is StreamEnded:
            stream = self.streams.get(event.stream_id or 0)
            if stream is not None:
                stream.body.end()
        elif type(event) is WindowUpdated:
            self.open_window(event.stream_id or 0)
        elif type(event) is StreamReset:
            stream = self.streams.get(event.stream_id or 0)
            if stream is not None:
                code = event.error_code
                refused = code == ErrorCodes.REFUSED_STREAM
                if refused:
                    self._record("refused")
                stream.failed(f"the backend reset the stream ({code!s})", refused=refused)
        elif type(event) is RemoteSettingsChanged:
            self.open_window(0)  # the initial window may have grown
            self.settled.set()
        elif type(event) is ConnectionTerminated:
            self._goaway(event)

    def _trailers(self, event: TrailersReceived) -> None:
        stream_id = event.stream_id or 0
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        trailers = trailer_fields(event.headers or ())
        if isinstance(trailers, str):
            self.reset(stream_id, ErrorCodes.PROTOCOL_ERROR)
            stream.failed(f"malformed trailers from the backend: {trailers}")
            return
        stream.grpc_status = status_label(trailers)
        stream.body.end(trailers)

    def _goaway(self, event: ConnectionTerminated) -> None:
        """New streams go elsewhere; those the backend did not process are refused."""
        self.closing = True
        self._closed(self)
        self._record("goaway")
        last = event.last_stream_id or 0
        for stream_id, stream in list(self.streams.items()):
            if stream_id > last:
                self._record("refused")
                stream.failed("the backend sent GOAWAY before this stream", refused=True)
            elif event.error_code != ErrorCodes.NO_ERROR:
                stream.failed(f"the backend sent GOAWAY ({event.error_code!s})")
