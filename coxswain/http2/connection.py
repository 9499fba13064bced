"""What both ends of an HTTP/2 connection (RFC 9113) do alike, sans I/O: framing, the control
frames, flow control both ways, stream and connection errors. Pure; the client side
(:mod:`.client`, the proxy towards a backend) and the server side (:mod:`.server`, the proxy
towards a client) are built on it.

- **Framing.** Frames of at most the default 16,384 bytes (the proxy advertises no more,
  §4.2); a header block of at most ``max_header_frames`` CONTINUATION frames and twice the
  header list size, never interrupted (§6.10); a header list decoded within
  ``max_header_list_size`` (:mod:`.hpack`).
- **Errors.** A frame that breaks a rule of the connection queues GOAWAY with the code RFC 9113
  names, ends reading and yields :class:`~.events.ConnectionTerminated`; one that breaks a
  stream's rule resets that stream (§5.4). Frames on a stream that was reset or has ended are
  dropped as §5.4.2 allows, their DATA still counted and given back to the connection's window.
- **Flow control both ways** (§5.2, §6.9). Towards the proxy: the windows are opened again by as
  much as the proxy has read (:meth:`Connection.acknowledge_received_data`), in updates of half
  a window, so a peer sends as fast as the other side takes, never faster. Towards the peer:
  the windows it gives (its initial window size, its WINDOW_UPDATE frames); the caller sends
  within :meth:`Connection.local_flow_control_window`.
- SETTINGS and PING are acknowledged, PRIORITY ignored (§5.3.2 deprecates the scheme).
- Header blocks are written without HPACK's dynamic table (:class:`~.hpack.Encoder`).
- **Sending on a stream that has ended** (reset meanwhile) does nothing: the caller learns of the
  reset from its event.

What differs between the ends (which streams are idle, what a header block means, GOAWAY) is the
subclass's: :meth:`Connection._opened`, :meth:`Connection._block_done`,
:meth:`Connection._goaway`, and :meth:`Connection._data_refused` for DATA a stream may not
take yet.
"""

from __future__ import annotations

from typing import Final

from coxswain.http2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    PingAcked,
    PingReceived,
    SettingsReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from coxswain.http2.frames import (
    ACK,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_SIZE_ERROR,
    GOAWAY,
    HEADERS,
    MAX_WINDOW,
    PING,
    PRIORITY,
    PRIORITY_FLAG,
    PROTOCOL_ERROR,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_FRAME_SIZE,
    STREAM_CLOSED,
    WINDOW_UPDATE,
    frame,
    goaway,
    header_frames,
    ping,
    rst_stream,
    settings,
    settings_fields,
    u31,
    unpadded,
    window_update,
)
from coxswain.http2.hpack import Decoder, Encoder

__all__ = ["DEFAULT_WINDOW", "Connection", "Stream"]

DEFAULT_WINDOW: Final = 65535
"""Every window's size until SETTINGS say otherwise (§6.9.2)."""
_DEFAULT_FRAME: Final = 16384  # the largest frame either side may send first (§6.5.2)
_MAX_FRAME: Final = 16777215
_UNLIMITED: Final = 2**32 - 1  # SETTINGS_MAX_CONCURRENT_STREAMS until the peer sets it


class Stream:
    """One open stream: the windows both ways, which halves are still open, and (on the client
    side) whether its response head came."""

    __slots__ = (
        "answered",
        "local_open",
        "pending",
        "receive_window",
        "remote_open",
        "send_window",
    )

    def __init__(
        self, send_window: int, receive_window: int, *, local_open: bool, remote_open: bool
    ) -> None:
        self.send_window = send_window
        self.receive_window = receive_window
        self.pending = 0  # read by the proxy, not yet given back in a WINDOW_UPDATE
        self.local_open = local_open
        self.remote_open = remote_open
        self.answered = False


class Connection:
    """One connection's state, either end; see the module's rules."""

    def __init__(
        self,
        *,
        initial_window: int,
        connection_window: int,
        max_header_list_size: int,
        max_header_frames: int,
    ) -> None:
        self.initial_window = initial_window
        self.connection_window = connection_window
        self.max_header_list_size = max_header_list_size
        self.max_header_frames = max_header_frames
        self.max_outbound_frame_size = _DEFAULT_FRAME
        """The largest frame the peer takes (its ``SETTINGS_MAX_FRAME_SIZE``)."""
        self.peer_max_concurrent_streams = _UNLIMITED
        """The streams the peer takes at once (its ``SETTINGS_MAX_CONCURRENT_STREAMS``)."""
        self.terminated = False
        """The connection broke a rule: nothing more is read."""
        self._decoder = Decoder(max_list_size=max_header_list_size)
        self._encoder = Encoder()
        self._streams: dict[int, Stream] = {}
        self._buffer = b""
        self._settings = False  # the peer's first SETTINGS seen (§3.4)
        self._out: list[bytes] = []
        self._peer_initial = DEFAULT_WINDOW
        self._send_window = DEFAULT_WINDOW
        self._receive_window = connection_window
        self._pending = 0
        self.highest_stream_id = 0
        """The highest stream the peer opened: the last one a GOAWAY of the proxy's names as
        processed (on the client side always 0: a backend opens none)."""
        self._block_stream = 0  # the stream whose header block is being assembled
        self._block: list[bytes] = []
        self._block_size = 0
        self._block_frames = 0
        self._block_ended = False

    # --- what the proxy does ------------------------------------------------------------------

    def _initiate(self, fields: list[tuple[int, int]]) -> None:
        """Queue the proxy's SETTINGS (§3.4), and the connection window beyond the default one
        (§6.9.2: only WINDOW_UPDATE changes it)."""
        self._out.append(settings(fields))
        if self.connection_window > DEFAULT_WINDOW:
            self._out.append(window_update(0, self.connection_window - DEFAULT_WINDOW))

    @property
    def has_data_to_send(self) -> bool:
        """Whether frames were made since the last :meth:`data_to_send`."""
        return bool(self._out)

    def data_to_send(self) -> bytes:
        """The frames made since the last call, in order."""
        out = self._out
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        return data

    def send_headers(
        self, stream_id: int, headers: list[tuple[bytes, bytes]], end_stream: bool = False
    ) -> None:
        """A header section on an open stream (a head, an interim head, or trailers)."""
        stream = self._streams.get(stream_id)
        if stream is None or not stream.local_open:
            return
        self._send_block(stream_id, headers, end_stream)
        if end_stream:
            self._end_local(stream_id, stream)

    def _send_block(
        self, stream_id: int, headers: list[tuple[bytes, bytes]], end_stream: bool
    ) -> None:
        """A header list as HEADERS and CONTINUATION frames the peer takes."""
        self._out.append(
            header_frames(
                stream_id,
                self._encoder.encode(headers),
                end_stream=end_stream,
                max_size=self.max_outbound_frame_size,
            )
        )

    def send_data(self, stream_id: int, data: bytes, end_stream: bool = False) -> None:
        """DATA on the stream, within the windows the caller checked
        (:meth:`local_flow_control_window`), in frames the peer takes."""
        stream = self._streams.get(stream_id)
        if stream is None or not stream.local_open:
            return
        size = len(data)
        self._send_window -= size
        stream.send_window -= size
        largest = self.max_outbound_frame_size
        out = self._out
        at = 0
        while size - at > largest:
            out.append(frame(DATA, 0, stream_id, data[at : at + largest]))
            at += largest
        out.append(frame(DATA, END_STREAM if end_stream else 0, stream_id, data[at:]))
        if end_stream:
            self._end_local(stream_id, stream)

    def end_stream(self, stream_id: int) -> None:
        """End the proxy's half of the stream with an empty DATA frame."""
        self.send_data(stream_id, b"", end_stream=True)

    def reset_stream(self, stream_id: int, error_code: int) -> None:
        """RST_STREAM; a stream closed already stays closed, and nothing is sent."""
        if self._streams.pop(stream_id, None) is not None:
            self._out.append(rst_stream(stream_id, error_code))

    def local_flow_control_window(self, stream_id: int) -> int:
        """How much DATA the peer takes on the stream now (stream and connection windows); on
        a stream closed meanwhile, a frame's worth, since sending on it does nothing."""
        stream = self._streams.get(stream_id)
        if stream is None or not stream.local_open:
            return self.max_outbound_frame_size
        return min(self._send_window, stream.send_window)

    def acknowledge_received_data(self, flow: int, stream_id: int) -> None:
        """The proxy read ``flow`` bytes of the stream's DATA (or dropped them): give them back
        to the peer's windows, in updates of at least half a window (the connection's always;
        the stream's while the peer may still send on it)."""
        self._pending += flow
        if self._pending >= self.connection_window // 2:
            self._out.append(window_update(0, self._pending))
            self._receive_window += self._pending
            self._pending = 0
        stream = self._streams.get(stream_id)
        if stream is not None and stream.remote_open:
            stream.pending += flow
            if stream.pending >= self.initial_window // 2:
                self._out.append(window_update(stream_id, stream.pending))
                stream.receive_window += stream.pending
                stream.pending = 0

    def ping(self, opaque: bytes) -> None:
        """A PING of eight bytes; its acknowledgement comes as :class:`~.events.PingAcked`."""
        self._out.append(ping(opaque, ack=False))

    @property
    def open_streams(self) -> int:
        """Streams open in either direction."""
        return len(self._streams)

    def is_open(self, stream_id: int) -> bool:
        """Whether the stream is open in either direction."""
        return stream_id in self._streams

    # --- what the peer sends ------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """The events of the bytes received (the complete frames among them)."""
        events: list[Event] = []
        if self.terminated:
            return events
        self._frames(self._buffer + data if self._buffer else data, events)
        return events

    def _frames(self, buffer: bytes, events: list[Event]) -> None:
        """Each complete frame of ``buffer``; the rest kept for the next bytes."""
        at = 0
        end = len(buffer)
        while end - at >= 9:
            length = buffer[at] << 16 | buffer[at + 1] << 8 | buffer[at + 2]
            if length > _DEFAULT_FRAME:
                self._fail(FRAME_SIZE_ERROR, "frame larger than SETTINGS_MAX_FRAME_SIZE", events)
                return
            if end - at - 9 < length:
                break
            kind = buffer[at + 3]
            flags = buffer[at + 4]
            stream_id = u31(buffer, at + 5)
            payload = buffer[at + 9 : at + 9 + length]
            at += 9 + length
            self._frame(kind, flags, stream_id, payload, events)
            if self.terminated:
                return
        self._buffer = buffer[at:] if at else buffer

    def _frame(
        self, kind: int, flags: int, stream_id: int, payload: bytes, events: list[Event]
    ) -> None:
        if not self._settings:
            if kind != SETTINGS or flags & ACK:
                self._fail(PROTOCOL_ERROR, "the preface is not followed by SETTINGS", events)
                return
            self._settings = True
        if self._block_stream:
            if kind != CONTINUATION or stream_id != self._block_stream:
                self._fail(PROTOCOL_ERROR, "a header block interrupted", events)
                return
            self._continuation(flags, payload, events)
        elif kind == DATA:
            self._data(flags, stream_id, payload, events)
        elif kind == HEADERS:
            self._headers(flags, stream_id, payload, events)
        elif kind == PRIORITY:
            if not stream_id:
                self._fail(PROTOCOL_ERROR, "PRIORITY on stream 0", events)
            elif len(payload) != 5:
                self._reset(stream_id, FRAME_SIZE_ERROR, events)
        elif kind == RST_STREAM:
            self._rst_stream(stream_id, payload, events)
        elif kind == SETTINGS:
            self._settings_frame(flags, stream_id, payload, events)
        elif kind == PING:
            if stream_id:
                self._fail(PROTOCOL_ERROR, "PING on a stream", events)
            elif len(payload) != 8:
                self._fail(FRAME_SIZE_ERROR, "PING not of eight bytes", events)
            elif flags & ACK:
                events.append(PingAcked(payload))
            else:
                self._out.append(ping(payload, ack=True))
                events.append(PingReceived())
        elif kind == GOAWAY:
            if stream_id:
                self._fail(PROTOCOL_ERROR, "GOAWAY on a stream", events)
            elif len(payload) < 8:
                self._fail(FRAME_SIZE_ERROR, "GOAWAY shorter than eight bytes", events)
            else:
                self._goaway(payload, events)
        elif kind == WINDOW_UPDATE:
            self._window_update(stream_id, payload, events)
        elif kind in (PUSH_PROMISE, CONTINUATION):
            self._fail(PROTOCOL_ERROR, "PUSH_PROMISE or CONTINUATION out of place", events)
        # frames of unknown types are ignored (§4.1, §5.5)

    # --- what differs between the ends ----------------------------------------------------------

    def _opened(self, stream_id: int) -> bool:
        """Whether the stream was ever opened (§5.1: any other is idle)."""
        raise NotImplementedError

    def _data_refused(self, stream: Stream) -> bool:
        """Whether the open stream may not take DATA yet (a reset follows)."""
        return False

    def _block_done(self, stream_id: int, block: bytes, ended: bool, events: list[Event]) -> None:
        """A complete header block on ``stream_id``, which ``ended`` the stream."""
        raise NotImplementedError

    def _goaway(self, payload: bytes, events: list[Event]) -> None:
        """A GOAWAY of at least eight bytes on stream 0."""
        raise NotImplementedError

    # --- frames ---------------------------------------------------------------------------------

    def _data(self, flags: int, stream_id: int, payload: bytes, events: list[Event]) -> None:
        if not stream_id or not self._opened(stream_id):
            self._fail(PROTOCOL_ERROR, "DATA on stream 0 or an idle stream", events)
            return
        size = len(payload)
        self._receive_window -= size
        if self._receive_window < 0:
            self._fail(FLOW_CONTROL_ERROR, "DATA beyond the connection's window", events)
            return
        stream = self._streams.get(stream_id)
        if stream is None or not stream.remote_open or self._data_refused(stream):
            self.acknowledge_received_data(size, 0)  # nobody reads it
            if stream is not None:
                self._reset(
                    stream_id, PROTOCOL_ERROR if stream.remote_open else STREAM_CLOSED, events
                )
            return
        data = unpadded(payload, flags)
        if data is None:
            self._fail(PROTOCOL_ERROR, "padding longer than the frame", events)
            return
        stream.receive_window -= size
        if stream.receive_window < 0:
            self._fail(FLOW_CONTROL_ERROR, "DATA beyond the stream's window", events)
            return
        if size:
            events.append(DataReceived(stream_id, data, size))
        if flags & END_STREAM:
            stream.remote_open = False
            events.append(StreamEnded(stream_id))
            if not stream.local_open:
                del self._streams[stream_id]

    def _headers(self, flags: int, stream_id: int, payload: bytes, events: list[Event]) -> None:
        if not stream_id:
            self._fail(PROTOCOL_ERROR, "HEADERS on stream 0", events)
            return
        block = unpadded(payload, flags)
        if block is None:
            self._fail(PROTOCOL_ERROR, "padding longer than the frame", events)
            return
        if flags & PRIORITY_FLAG:
            if len(block) < 5:
                self._fail(FRAME_SIZE_ERROR, "HEADERS too short for its priority", events)
                return
            block = block[5:]
        ended = bool(flags & END_STREAM)
        if flags & END_HEADERS:
            self._block_done(stream_id, block, ended, events)
            return
        self._block_stream = stream_id
        self._block = [block]
        self._block_size = len(block)
        self._block_frames = 0
        self._block_ended = ended

    def _continuation(self, flags: int, payload: bytes, events: list[Event]) -> None:
        self._block_frames += 1
        self._block_size += len(payload)
        if self._block_frames > self.max_header_frames:
            self._fail(PROTOCOL_ERROR, "too many CONTINUATION frames", events)
            return
        if self._block_size > 2 * self.max_header_list_size:
            self._fail(ENHANCE_YOUR_CALM, "header block larger than the list allowed", events)
            return
        self._block.append(payload)
        if flags & END_HEADERS:
            stream_id = self._block_stream
            block = b"".join(self._block)
            self._block_stream = 0
            self._block = []
            self._block_done(stream_id, block, self._block_ended, events)

    def _rst_stream(self, stream_id: int, payload: bytes, events: list[Event]) -> None:
        if not stream_id or not self._opened(stream_id):
            self._fail(PROTOCOL_ERROR, "RST_STREAM on stream 0 or an idle stream", events)
        elif len(payload) != 4:
            self._fail(FRAME_SIZE_ERROR, "RST_STREAM not of four bytes", events)
        elif self._streams.pop(stream_id, None) is not None:
            events.append(StreamReset(stream_id, int.from_bytes(payload, "big"), remote=True))

    def _settings_frame(
        self, flags: int, stream_id: int, payload: bytes, events: list[Event]
    ) -> None:
        if stream_id:
            self._fail(PROTOCOL_ERROR, "SETTINGS on a stream", events)
            return
        if flags & ACK:
            if payload:
                self._fail(FRAME_SIZE_ERROR, "SETTINGS acknowledgement with a payload", events)
            return
        if len(payload) % 6:
            self._fail(FRAME_SIZE_ERROR, "SETTINGS not a multiple of six bytes", events)
            return
        initial = self._peer_initial
        for key, value in settings_fields(payload):
            if key == SETTINGS_ENABLE_PUSH:
                if value > 1:
                    self._fail(PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH other than 0 or 1", events)
                    return
            elif key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    self._fail(FLOW_CONTROL_ERROR, "initial window too large", events)
                    return
                initial = value
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if value < _DEFAULT_FRAME or value > _MAX_FRAME:
                    self._fail(PROTOCOL_ERROR, "SETTINGS_MAX_FRAME_SIZE out of range", events)
                    return
                self.max_outbound_frame_size = value
            elif key == SETTINGS_MAX_CONCURRENT_STREAMS:
                self.peer_max_concurrent_streams = value
        if initial != self._peer_initial:  # once per frame, however many times it is repeated
            delta = initial - self._peer_initial
            self._peer_initial = initial
            for stream in self._streams.values():  # §6.9.2
                stream.send_window += delta
                if stream.send_window > MAX_WINDOW:
                    self._fail(FLOW_CONTROL_ERROR, "a stream's window too large", events)
                    return
        self._out.append(frame(SETTINGS, ACK, 0))
        events.append(SettingsReceived())

    def _window_update(self, stream_id: int, payload: bytes, events: list[Event]) -> None:
        if len(payload) != 4:
            self._fail(FRAME_SIZE_ERROR, "WINDOW_UPDATE not of four bytes", events)
            return
        increment = u31(payload, 0)
        if not stream_id:
            if not increment:
                self._fail(PROTOCOL_ERROR, "WINDOW_UPDATE of 0", events)
                return
            self._send_window += increment
            if self._send_window > MAX_WINDOW:
                self._fail(FLOW_CONTROL_ERROR, "connection window too large", events)
                return
            events.append(WindowUpdated(0))
            return
        if not self._opened(stream_id):
            self._fail(PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream", events)
            return
        stream = self._streams.get(stream_id)
        if stream is None:
            return
        if not increment:
            self._reset(stream_id, PROTOCOL_ERROR, events)
            return
        stream.send_window += increment
        if stream.send_window > MAX_WINDOW:
            self._reset(stream_id, FLOW_CONTROL_ERROR, events)
            return
        events.append(WindowUpdated(stream_id))

    # --- endings ------------------------------------------------------------------------------

    def _end_local(self, stream_id: int, stream: Stream) -> None:
        stream.local_open = False
        if not stream.remote_open:
            del self._streams[stream_id]

    def _end_remote(self, stream_id: int, stream: Stream) -> None:
        stream.remote_open = False
        if not stream.local_open:
            del self._streams[stream_id]

    def _reset(self, stream_id: int, code: int, events: list[Event]) -> None:
        """A stream error (§5.4.2): RST_STREAM, and the proxy told if it knew the stream."""
        self._out.append(rst_stream(stream_id, code))
        if self._streams.pop(stream_id, None) is not None:
            events.append(StreamReset(stream_id, code, remote=False))

    def _fail(self, code: int, reason: str, events: list[Event]) -> None:
        """A connection error (§5.4.1): GOAWAY, and nothing more read."""
        self.terminated = True
        self._buffer = b""
        self._out.append(goaway(self.highest_stream_id, code))
        events.append(ConnectionTerminated(code, reason))
