"""What a client's HTTP/2 connection tells the proxy (:class:`~.server.ServerConnection`). Pure.

Frames that ask for nothing of the proxy (SETTINGS and PING acknowledged, PRIORITY ignored,
WINDOW_UPDATE accounted) are answered by the connection itself; an event is what the proxy
must act on, or count against the client's budget (:mod:`.budget`).
"""

from __future__ import annotations

__all__ = [
    "ConnectionTerminated",
    "DataReceived",
    "Event",
    "GoAwayReceived",
    "PingAcked",
    "PingReceived",
    "RequestReceived",
    "SettingsReceived",
    "StreamEnded",
    "StreamReset",
    "TrailersReceived",
    "WindowUpdated",
]


class Event:
    """Any event."""

    __slots__ = ()


class RequestReceived(Event):
    """A stream opened with a request's header list; ``ended`` when its HEADERS ended it."""

    __slots__ = ("ended", "headers", "stream_id")

    def __init__(self, stream_id: int, headers: list[tuple[bytes, bytes]], ended: bool) -> None:
        self.stream_id = stream_id
        self.headers = headers
        self.ended = ended


class TrailersReceived(Event):
    """A stream ended with a trailer section."""

    __slots__ = ("headers", "stream_id")

    def __init__(self, stream_id: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.stream_id = stream_id
        self.headers = headers


class DataReceived(Event):
    """Body bytes on a stream; ``flow`` is the window they took (padding included), given back
    by :meth:`~.server.ServerConnection.acknowledge_received_data` once they are read."""

    __slots__ = ("data", "flow", "stream_id")

    def __init__(self, stream_id: int, data: bytes, flow: int) -> None:
        self.stream_id = stream_id
        self.data = data
        self.flow = flow


class StreamEnded(Event):
    """The client ended its half of a stream with DATA."""

    __slots__ = ("stream_id",)

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id


class StreamReset(Event):
    """A stream the proxy had been told about ended abruptly: the client reset it
    (``remote``), or it broke a rule of its own and the connection reset it."""

    __slots__ = ("error_code", "remote", "stream_id")

    def __init__(self, stream_id: int, error_code: int, *, remote: bool) -> None:
        self.stream_id = stream_id
        self.error_code = error_code
        self.remote = remote


class WindowUpdated(Event):
    """The client opened a stream's window (``stream_id``), or the connection's or every
    stream's (``0``)."""

    __slots__ = ("stream_id",)

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id


class SettingsReceived(Event):
    """The client sent SETTINGS (acknowledged already)."""

    __slots__ = ()


class PingReceived(Event):
    """The client sent a PING (answered already)."""

    __slots__ = ()


class PingAcked(Event):
    """The client acknowledged the proxy's PING with ``opaque``."""

    __slots__ = ("opaque",)

    def __init__(self, opaque: bytes) -> None:
        self.opaque = opaque


class GoAwayReceived(Event):
    """The client will open no more streams."""

    __slots__ = ("error_code", "last_stream_id")

    def __init__(self, last_stream_id: int, error_code: int) -> None:
        self.last_stream_id = last_stream_id
        self.error_code = error_code


class ConnectionTerminated(Event):
    """The client broke a rule of the connection: GOAWAY with ``error_code`` is queued, and
    nothing more is read (RFC 9113 §5.4.1)."""

    __slots__ = ("error_code", "reason")

    def __init__(self, error_code: int, reason: str) -> None:
        self.error_code = error_code
        self.reason = reason
