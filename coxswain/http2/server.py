"""The server side of an HTTP/2 connection (RFC 9113), sans I/O: bytes in, events out, frames
to send. Pure; the proxy's loop (:mod:`coxswain.shell.dataplane.h2_connection`) feeds it what it
reads and writes what it makes.

What it does, and deliberately not:

- **Framing and states only.** It checks frames (sizes, stream identifiers, the order of
  HEADERS and CONTINUATION, stream states, RFC 9113 §5.1, §6) and decodes HPACK (:mod:`.hpack`);
  the fields of a request are checked once, by the proxy's own rules
  (:mod:`coxswain.http2.request`), not here.
- **Errors.** A frame that breaks a rule of the connection queues GOAWAY with the code RFC 9113
  names, ends reading and yields :class:`~.events.ConnectionTerminated`; one that breaks a
  stream's rule resets that stream (§5.4). Frames on a stream that was reset or has ended are
  dropped as §5.4.2 allows, their DATA still counted and given back to the connection's window.
- **Bounds.** At most ``max_concurrent_streams`` streams open (more are refused with
  ``REFUSED_STREAM``), a header block of at most ``max_header_frames`` CONTINUATION frames and
  twice the header list size, a header list decoded within ``max_header_list_size``, the
  client's DATA within the windows the proxy gave (else ``FLOW_CONTROL_ERROR``).
- **Flow control both ways** (§5.2, §6.9). Towards the proxy: the windows are opened again by as
  much as the proxy has read (:meth:`acknowledge_received_data`), in updates of half a window, so
  a client sends as fast as the backend takes, never faster. Towards the client: the windows the
  client gives (its initial window size, its WINDOW_UPDATE frames); the caller sends within
  :meth:`local_flow_control_window`.
- SETTINGS and PING are acknowledged, PRIORITY ignored (§5.3.2 deprecates the scheme); server
  push is never used.
- Header blocks are written without HPACK's dynamic table (:func:`~.hpack.encode`), the fields
  a connection repeats remembered encoded (:class:`~.hpack.Encoder`).
- **Sending on a stream that has ended** (reset by the client meanwhile) does nothing: the stream's
  task learns of the reset from its event.
"""

from __future__ import annotations

from typing import Final

from coxswain.http2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    GoAwayReceived,
    PingAcked,
    PingReceived,
    RequestReceived,
    SettingsReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
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
    PREFACE,
    PRIORITY,
    PRIORITY_FLAG,
    PROTOCOL_ERROR,
    PUSH_PROMISE,
    REFUSED_STREAM,
    RST_STREAM,
    SETTINGS,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_FRAME_SIZE,
    SETTINGS_MAX_HEADER_LIST_SIZE,
    STREAM_CLOSED,
    WINDOW_UPDATE,
    frame,
    goaway,
    goaway_fields,
    header_frames,
    ping,
    rst_stream,
    settings,
    settings_fields,
    u31,
    unpadded,
    window_update,
)
from coxswain.http2.hpack import DecodeError, Decoder, Encoder

__all__ = ["ServerConnection"]

_DEFAULT_WINDOW: Final = 65535  # every window's size until SETTINGS say otherwise (§6.9.2)
_DEFAULT_FRAME: Final = 16384  # the largest frame either side may send first (§6.5.2)
_MAX_FRAME: Final = 16777215


class _Stream:
    """One open stream: the windows both ways, and which halves are still open."""

    __slots__ = ("local_open", "pending", "receive_window", "remote_open", "send_window")

    def __init__(self, send_window: int, receive_window: int, *, remote_open: bool) -> None:
        self.send_window = send_window
        self.receive_window = receive_window
        self.pending = 0  # read by the proxy, not yet given back in a WINDOW_UPDATE
        self.remote_open = remote_open
        self.local_open = True


class ServerConnection:
    """One client's connection, from the proxy's side."""

    def __init__(
        self,
        *,
        max_concurrent_streams: int,
        initial_window: int,
        connection_window: int,
        max_header_list_size: int,
        max_header_frames: int = 64,
    ) -> None:
        self.max_concurrent_streams = max_concurrent_streams
        self.initial_window = initial_window
        self.connection_window = connection_window
        self.max_header_list_size = max_header_list_size
        self.max_header_frames = max_header_frames
        self.max_outbound_frame_size = _DEFAULT_FRAME
        """The largest frame the client takes (its ``SETTINGS_MAX_FRAME_SIZE``)."""
        self.highest_stream_id = 0
        """The highest stream the client opened: the last one a GOAWAY names as processed."""
        self.terminated = False
        self._decoder = Decoder(max_list_size=max_header_list_size)
        self._encoder = Encoder()
        self._streams: dict[int, _Stream] = {}
        self._buffer = b""
        self._preface = False
        self._settings = False  # the client's first SETTINGS seen (§3.4)
        self._out: list[bytes] = []
        self._peer_initial = _DEFAULT_WINDOW
        self._send_window = _DEFAULT_WINDOW
        self._receive_window = connection_window
        self._pending = 0
        self._goaway_last = MAX_WINDOW
        self._block_stream = 0  # the stream whose header block is being assembled
        self._block: list[bytes] = []
        self._block_size = 0
        self._block_frames = 0
        self._block_ended = False

    # --- what the proxy does ------------------------------------------------------------------

    def initiate(self) -> None:
        """Queue the server's preface: its SETTINGS (§3.4), and the connection window beyond
        the default one (§6.9.2: only WINDOW_UPDATE changes it)."""
        self._out.append(
            settings(
                [
                    (SETTINGS_MAX_CONCURRENT_STREAMS, self.max_concurrent_streams),
                    (SETTINGS_INITIAL_WINDOW_SIZE, self.initial_window),
                    (SETTINGS_MAX_HEADER_LIST_SIZE, self.max_header_list_size),
                    (SETTINGS_ENABLE_PUSH, 0),
                ]
            )
        )
        if self.connection_window > _DEFAULT_WINDOW:
            self._out.append(window_update(0, self.connection_window - _DEFAULT_WINDOW))

    def data_to_send(self) -> bytes:
        """The frames made since the last call, in order."""
        out = self._out
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        return data

    @property
    def has_data_to_send(self) -> bool:
        """Frames were made since the last :meth:`data_to_send`."""
        return bool(self._out)

    def send_headers(
        self, stream_id: int, headers: list[tuple[bytes, bytes]], end_stream: bool = False
    ) -> None:
        """A header section on the stream (response, informational, or trailers)."""
        stream = self._streams.get(stream_id)
        if stream is None or not stream.local_open:
            return
        self._out.append(
            header_frames(
                stream_id,
                self._encoder.encode(headers),
                end_stream=end_stream,
                max_size=self.max_outbound_frame_size,
            )
        )
        if end_stream:
            self._end_local(stream_id, stream)

    def send_data(self, stream_id: int, data: bytes, end_stream: bool = False) -> None:
        """DATA on the stream, within the windows the caller checked
        (:meth:`local_flow_control_window`), in frames the client takes."""
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
        """How much DATA the client takes on the stream now (stream and connection windows);
        on a stream closed meanwhile, a frame's worth, since sending on it does nothing."""
        stream = self._streams.get(stream_id)
        if stream is None or not stream.local_open:
            return self.max_outbound_frame_size
        return min(self._send_window, stream.send_window)

    def acknowledge_received_data(self, flow: int, stream_id: int) -> None:
        """The proxy read ``flow`` bytes of the stream's DATA: give them back to the client's
        windows, in updates of at least half a window (the connection's always; the stream's
        while the client may still send on it)."""
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

    def close_connection(self, error_code: int, last_stream_id: int | None = None) -> None:
        """GOAWAY naming ``last_stream_id`` (by default the highest stream the client opened):
        streams the client opens above it are ignored from now on (§6.8)."""
        last = self.highest_stream_id if last_stream_id is None else last_stream_id
        self._goaway_last = min(self._goaway_last, last)
        self._out.append(goaway(last, error_code))

    @property
    def open_streams(self) -> int:
        """Streams open in either direction."""
        return len(self._streams)

    # --- what the client sends ----------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """The events of the bytes received (the complete frames among them)."""
        events: list[Event] = []
        if self.terminated:
            return events
        buffer = self._buffer + data if self._buffer else data
        if not self._preface:
            if len(buffer) < len(PREFACE):
                if not PREFACE.startswith(buffer):
                    self._fail(PROTOCOL_ERROR, "not the HTTP/2 connection preface", events)
                self._buffer = buffer
                return events
            if not buffer.startswith(PREFACE):
                self._fail(PROTOCOL_ERROR, "not the HTTP/2 connection preface", events)
                return events
            self._preface = True
            buffer = buffer[len(PREFACE) :]
        at = 0
        end = len(buffer)
        while end - at >= 9:
            length = buffer[at] << 16 | buffer[at + 1] << 8 | buffer[at + 2]
            if length > _DEFAULT_FRAME:
                self._fail(FRAME_SIZE_ERROR, "frame larger than SETTINGS_MAX_FRAME_SIZE", events)
                return events
            if end - at - 9 < length:
                break
            kind = buffer[at + 3]
            flags = buffer[at + 4]
            stream_id = u31(buffer, at + 5)
            payload = buffer[at + 9 : at + 9 + length]
            at += 9 + length
            self._frame(kind, flags, stream_id, payload, events)
            if self.terminated:
                return events
        self._buffer = buffer[at:] if at else buffer
        return events

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
                last, code = goaway_fields(payload)
                events.append(GoAwayReceived(last, code))
        elif kind == WINDOW_UPDATE:
            self._window_update(stream_id, payload, events)
        elif kind in (PUSH_PROMISE, CONTINUATION):
            self._fail(PROTOCOL_ERROR, "PUSH_PROMISE or CONTINUATION out of place", events)
        # frames of unknown types are ignored (§4.1, §5.5)

    def _data(self, flags: int, stream_id: int, payload: bytes, events: list[Event]) -> None:
        if not stream_id:
            self._fail(PROTOCOL_ERROR, "DATA on stream 0", events)
            return
        if stream_id > self.highest_stream_id:
            self._fail(PROTOCOL_ERROR, "DATA on an idle stream", events)
            return
        size = len(payload)
        self._receive_window -= size
        if self._receive_window < 0:
            self._fail(FLOW_CONTROL_ERROR, "DATA beyond the connection's window", events)
            return
        stream = self._streams.get(stream_id)
        if stream is None or not stream.remote_open:
            self.acknowledge_received_data(size, 0)  # nobody reads it
            if stream is not None:
                self._reset(stream_id, STREAM_CLOSED, events)
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
        if not stream_id or not stream_id & 1:
            self._fail(PROTOCOL_ERROR, "HEADERS on stream 0 or an even stream", events)
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

    def _block_done(self, stream_id: int, block: bytes, ended: bool, events: list[Event]) -> None:
        """A complete header block: decoded whatever becomes of it, since HPACK's table is the
        connection's (RFC 7541 §2.2)."""
        headers = self._decoder.decode(block)
        if isinstance(headers, DecodeError):
            self._fail(headers.code, headers.reason, events)
            return
        stream = self._streams.get(stream_id)
        if stream is not None:
            if not stream.remote_open:
                self._reset(stream_id, STREAM_CLOSED, events)
            elif not ended:  # trailers end the stream (§8.1)
                self._reset(stream_id, PROTOCOL_ERROR, events)
            else:
                stream.remote_open = False
                events.append(TrailersReceived(stream_id, headers))
                if not stream.local_open:
                    del self._streams[stream_id]
            return
        if stream_id <= self.highest_stream_id:
            return  # a stream reset or ended meanwhile (§5.4.2)
        self.highest_stream_id = stream_id
        if stream_id > self._goaway_last:
            return  # opened after GOAWAY: ignored (§6.8)
        if len(self._streams) >= self.max_concurrent_streams:
            self._out.append(rst_stream(stream_id, REFUSED_STREAM))
            return
        self._streams[stream_id] = _Stream(
            self._peer_initial, self.initial_window, remote_open=not ended
        )
        events.append(RequestReceived(stream_id, headers, ended))

    def _rst_stream(self, stream_id: int, payload: bytes, events: list[Event]) -> None:
        if not stream_id or stream_id > self.highest_stream_id:
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
            if key == SETTINGS_ENABLE_PUSH and value > 1:
                self._fail(PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH other than 0 or 1", events)
                return
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    self._fail(FLOW_CONTROL_ERROR, "initial window too large", events)
                    return
                initial = value
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if value < _DEFAULT_FRAME or value > _MAX_FRAME:
                    self._fail(PROTOCOL_ERROR, "SETTINGS_MAX_FRAME_SIZE out of range", events)
                    return
                self.max_outbound_frame_size = value
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
        if stream_id > self.highest_stream_id:
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

    def _end_local(self, stream_id: int, stream: _Stream) -> None:
        stream.local_open = False
        if not stream.remote_open:
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
