"""The client side of an HTTP/2 connection (RFC 9113), sans I/O: the proxy's connection to a
backend. Bytes in, events out, frames to send. Pure; the proxy's loop
(:mod:`coxswain.shell.dataplane.h2_upstream`) feeds it what it reads and writes what it makes.

Framing, flow control, bounds and errors are :mod:`.connection`'s, as on the server side, so a
backend that breaks HTTP/2 ends only its own connection, and a stream's error resets only that
stream. Frames are checked and header blocks decoded; the fields of a response are checked
once, by the proxy's own rules (:mod:`coxswain.http2.backend`), not here. What is the client's:

- **Streams** are the proxy's own, odd and rising (§5.1.1), at most the backend's
  ``SETTINGS_MAX_CONCURRENT_STREAMS`` at once; the backend opens none and pushes nothing
  (``SETTINGS_ENABLE_PUSH`` 0, so a PUSH_PROMISE is a ``PROTOCOL_ERROR``, §8.4).
- **Responses.** The first header block of a stream is its response head; 1xx heads are
  dropped (§8.1: the relay forwards none); a second block must end the stream (trailers). A
  header block on a stream the proxy reset meanwhile is decoded, since HPACK's table is the
  connection's (RFC 7541 §2.2), and dropped (§5.1, "closed").
- **GOAWAY from the backend** (§6.8): no new stream; streams above its last stream identifier
  are forgotten (the backend never processed them, the caller may send them elsewhere), the
  others finish.
- Header blocks are written without HPACK's dynamic table, so the backend's
  ``SETTINGS_HEADER_TABLE_SIZE`` never matters.
"""

from __future__ import annotations

from coxswain.http2.connection import Connection, Stream
from coxswain.http2.events import Event, GoAwayReceived, TrailersReceived
from coxswain.http2.frames import (
    MAX_WINDOW,
    PREFACE,
    PROTOCOL_ERROR,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_HEADER_LIST_SIZE,
    STREAM_CLOSED,
    goaway,
    goaway_fields,
)
from coxswain.http2.hpack import DecodeError

__all__ = ["ClientConnection", "ResponseReceived"]


class ResponseReceived(Event):
    """A stream's final response head; ``ended`` when its HEADERS ended the stream (no body,
    a gRPC "Trailers-Only" answer among them)."""

    __slots__ = ("ended", "headers", "stream_id")

    def __init__(self, stream_id: int, headers: list[tuple[bytes, bytes]], ended: bool) -> None:
        self.stream_id = stream_id
        self.headers = headers
        self.ended = ended


class ClientConnection(Connection):
    """One connection to a backend, from the proxy's side."""

    def __init__(
        self,
        *,
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
        self.goaway_received = False
        """The backend sent GOAWAY: no new stream."""
        self._next_stream_id = 1

    def initiate(self) -> None:
        """Queue the client's preface: the magic string, its SETTINGS (§3.4: the backend opens
        no stream and pushes nothing), and the connection window beyond the default one
        (§6.9.2: only WINDOW_UPDATE changes it)."""
        self._out.append(PREFACE)
        self._initiate(
            [
                (SETTINGS_ENABLE_PUSH, 0),
                (SETTINGS_MAX_CONCURRENT_STREAMS, 0),
                (SETTINGS_INITIAL_WINDOW_SIZE, self.initial_window),
                (SETTINGS_MAX_HEADER_LIST_SIZE, self.max_header_list_size),
            ]
        )

    def send_request(self, headers: list[tuple[bytes, bytes]], end_stream: bool) -> int:
        """Open a stream with the request's header list; its identifier, or 0 when the
        connection takes no new stream (GOAWAY, broken, the backend's limit reached, or the
        identifiers spent, §5.1.1)."""
        stream_id = self._next_stream_id
        if (
            self.terminated
            or self.goaway_received
            or stream_id > MAX_WINDOW
            or len(self._streams) >= self.peer_max_concurrent_streams
        ):
            return 0
        self._next_stream_id = stream_id + 2
        self._streams[stream_id] = Stream(
            self._peer_initial, self.initial_window, local_open=not end_stream, remote_open=True
        )
        self._send_block(stream_id, headers, end_stream)
        return stream_id

    def close_connection(self, error_code: int) -> None:
        """GOAWAY (§6.8): the backend opens no stream towards the proxy, so it names none."""
        self._out.append(goaway(0, error_code))

    # --- what differs from the server side ------------------------------------------------------

    def _opened(self, stream_id: int) -> bool:
        """Whether the proxy ever opened the stream (§5.1: any other is idle)."""
        return bool(stream_id & 1) and stream_id < self._next_stream_id

    def _data_refused(self, stream: Stream) -> bool:
        """DATA before the response head is malformed (§8.1)."""
        return not stream.answered

    def _block_done(self, stream_id: int, block: bytes, ended: bool, events: list[Event]) -> None:
        """A complete header block: decoded whatever becomes of it, since HPACK's table is the
        connection's (RFC 7541 §2.2)."""
        if not self._opened(stream_id):
            self._fail(PROTOCOL_ERROR, "HEADERS on an idle stream", events)
            return
        headers = self._decoder.decode(block)
        if isinstance(headers, DecodeError):
            self._fail(headers.code, headers.reason, events)
            return
        stream = self._streams.get(stream_id)
        if stream is None:
            return  # a stream reset or forgotten meanwhile (§5.4.2)
        if not stream.remote_open:
            self._reset(stream_id, STREAM_CLOSED, events)
        elif stream.answered:
            if ended:  # trailers end the stream (§8.1)
                self._end_remote(stream_id, stream)
                events.append(TrailersReceived(stream_id, headers))
            else:
                self._reset(stream_id, PROTOCOL_ERROR, events)
        elif ended or not _interim(headers):
            stream.answered = True
            if ended:
                self._end_remote(stream_id, stream)
            events.append(ResponseReceived(stream_id, headers, ended))
        # else an interim response: the final one follows (§8.1)

    def _goaway(self, payload: bytes, events: list[Event]) -> None:
        last, code = goaway_fields(payload)
        self.goaway_received = True
        for unprocessed in [number for number in self._streams if number > last]:
            del self._streams[unprocessed]  # never processed: nothing to reset (§6.8)
        events.append(GoAwayReceived(last, code))


def _interim(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a header list is a 1xx response's (its ``:status`` first, §8.3)."""
    return bool(headers) and headers[0][0] == b":status" and headers[0][1][:1] == b"1"
