"""The server side of an HTTP/2 connection (RFC 9113), sans I/O: bytes in, events out, frames
to send. Pure; the proxy's loop (:mod:`coxswain.shell.dataplane.h2_connection`) feeds it what it
reads and writes what it makes.

Framing, flow control both ways, the control frames and the errors are :mod:`.connection`'s, as
on the client side (:mod:`.client`). What is the server's, and deliberately not:

- **Framing and states only.** Frames are checked and HPACK decoded (:mod:`.hpack`); the fields
  of a request are checked once, by the proxy's own rules (:mod:`coxswain.http2.request`), not
  here.
- **The preface.** The client's connection preface comes first (§3.4), else
  ``PROTOCOL_ERROR``.
- **Streams** are the client's, odd and rising (§5.1.1): one opened below the highest seen was
  reset or ended meanwhile and its header block is dropped after decoding; one above a GOAWAY of
  the proxy's is ignored (§6.8); at most ``max_concurrent_streams`` open (more are refused with
  ``REFUSED_STREAM``). A second header block on a stream must end it (trailers, §8.1).
- Server push is never used (``SETTINGS_ENABLE_PUSH`` 0).
"""

from __future__ import annotations

from coxswain.http2.connection import Connection, Stream
from coxswain.http2.events import (
    Event,
    GoAwayReceived,
    RequestReceived,
    TrailersReceived,
)
from coxswain.http2.frames import (
    MAX_WINDOW,
    PREFACE,
    PROTOCOL_ERROR,
    REFUSED_STREAM,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_HEADER_LIST_SIZE,
    STREAM_CLOSED,
    goaway,
    goaway_fields,
    rst_stream,
)
from coxswain.http2.hpack import DecodeError

__all__ = ["ServerConnection"]


class ServerConnection(Connection):
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
        super().__init__(
            initial_window=initial_window,
            connection_window=connection_window,
            max_header_list_size=max_header_list_size,
            max_header_frames=max_header_frames,
        )
        self.max_concurrent_streams = max_concurrent_streams
        self._preface = False
        self._goaway_last = MAX_WINDOW

    # --- what the proxy does ------------------------------------------------------------------

    def initiate(self) -> None:
        """Queue the server's preface: its SETTINGS (§3.4), and the connection window beyond
        the default one."""
        self._initiate(
            [
                (SETTINGS_MAX_CONCURRENT_STREAMS, self.max_concurrent_streams),
                (SETTINGS_INITIAL_WINDOW_SIZE, self.initial_window),
                (SETTINGS_MAX_HEADER_LIST_SIZE, self.max_header_list_size),
                (SETTINGS_ENABLE_PUSH, 0),
            ]
        )

    def close_connection(self, error_code: int, last_stream_id: int | None = None) -> None:
        """GOAWAY naming ``last_stream_id`` (by default the highest stream the client opened):
        streams the client opens above it are ignored from now on (§6.8)."""
        last = self.highest_stream_id if last_stream_id is None else last_stream_id
        self._goaway_last = min(self._goaway_last, last)
        self._out.append(goaway(last, error_code))

    # --- what the client sends ----------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """The events of the bytes received (the complete frames among them), the connection
        preface first (§3.4)."""
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
        self._frames(buffer, events)
        return events

    # --- what differs from the client side ------------------------------------------------------

    def _opened(self, stream_id: int) -> bool:
        """Whether the client ever opened the stream (§5.1: any other is idle)."""
        return stream_id <= self.highest_stream_id

    def _block_done(self, stream_id: int, block: bytes, ended: bool, events: list[Event]) -> None:
        """A complete header block: decoded whatever becomes of it, since HPACK's table is the
        connection's (RFC 7541 §2.2)."""
        if not stream_id & 1:
            self._fail(PROTOCOL_ERROR, "HEADERS on an even stream", events)
            return
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
                self._end_remote(stream_id, stream)
                events.append(TrailersReceived(stream_id, headers))
            return
        if stream_id <= self.highest_stream_id:
            return  # a stream reset or ended meanwhile (§5.4.2)
        self.highest_stream_id = stream_id
        if stream_id > self._goaway_last:
            return  # opened after GOAWAY: ignored (§6.8)
        if len(self._streams) >= self.max_concurrent_streams:
            self._out.append(rst_stream(stream_id, REFUSED_STREAM))
            return
        self._streams[stream_id] = Stream(
            self._peer_initial, self.initial_window, local_open=True, remote_open=not ended
        )
        events.append(RequestReceived(stream_id, headers, ended))

    def _goaway(self, payload: bytes, events: list[Event]) -> None:
        last, code = goaway_fields(payload)
        events.append(GoAwayReceived(last, code))
