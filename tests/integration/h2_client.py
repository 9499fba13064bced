"""A small blocking HTTP/2 client for the tests, on the ``h2`` library: cleartext with prior
knowledge, or TLS with ALPN; several streams at once on one connection; raw frames for the
attack tests."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import h2.config
import h2.connection
import h2.events
import h2.settings

from .proxy_harness import TIMEOUT

if TYPE_CHECKING:
    import ssl

__all__ = ["H2Client", "H2Response"]


@dataclass
class H2Response:
    """What came back on one stream: status, fields, body, trailers, or the reset's code."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    trailers: dict[str, str] = field(default_factory=dict)
    reset: int | None = None
    informational: list[int] = field(default_factory=list)


class H2Client:
    """One HTTP/2 connection to 127.0.0.1:``port``."""

    def __init__(
        self,
        port: int,
        *,
        tls: ssl.SSLContext | None = None,
        server_name: str | None = None,
        window: int | None = None,
        checked: bool = True,
        sock: ssl.SSLSocket | None = None,
    ) -> None:
        """Connect to ``port``, or speak on ``sock``, a TLS connection that chose ``h2``."""
        raw = sock or socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock: socket.socket = raw
        self.alpn: str | None = None
        if sock is not None:
            self.alpn = sock.selected_alpn_protocol()
        elif tls is not None:
            tls.set_alpn_protocols(["h2", "http/1.1"])
            self.sock = tls.wrap_socket(raw, server_hostname=server_name)
            self.alpn = self.sock.selected_alpn_protocol()  # type: ignore[attr-defined]
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(
                client_side=True,
                header_encoding=None,
                validate_outbound_headers=checked,  # unchecked: malformed requests go out
                normalize_outbound_headers=checked,
            )
        )
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.sock.sendall(self.conn.data_to_send())
        self.responses: dict[int, H2Response] = {}
        self.bodies: dict[int, tuple[memoryview, bool]] = {}
        self.ended: set[int] = set()
        self.goaway: h2.events.ConnectionTerminated | None = None
        self.acked = False
        while window is not None and not self.acked:  # streams then open with that window
            self.receive(self.sock.recv(65536))

    def send(
        self,
        method: str,
        path: str,
        *,
        authority: str = "a.example.com",
        headers: list[tuple[str, str]] | None = None,
        body: bytes | None = None,
        end: bool = True,
    ) -> int:
        """Open a stream with this request; its id."""
        stream_id = self.conn.get_next_available_stream_id()
        fields = [
            (b":method", method.encode()),
            (b":scheme", b"https" if self.alpn else b"http"),
            (b":authority", authority.encode()),
            (b":path", path.encode()),
            *((n.encode(), v.encode()) for n, v in headers or []),
        ]
        self.conn.send_headers(stream_id, fields, end_stream=end and not body)
        self.responses[stream_id] = H2Response()
        if body:
            self.bodies[stream_id] = (memoryview(body), end)
        self.pump()
        return stream_id

    def pump(self) -> None:
        """Send what the server's windows let through of the request bodies not sent yet."""
        for stream_id, (rest, end) in list(self.bodies.items()):
            size = min(self.conn.local_flow_control_window(stream_id), len(rest))
            size = min(size, self.conn.max_outbound_frame_size)
            while size > 0:
                self.conn.send_data(stream_id, bytes(rest[:size]))
                rest = rest[size:]
                size = min(self.conn.local_flow_control_window(stream_id), len(rest))
                size = min(size, self.conn.max_outbound_frame_size)
            if not rest:
                del self.bodies[stream_id]
                if end:
                    self.conn.end_stream(stream_id)
            else:
                self.bodies[stream_id] = (rest, end)
        self.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def wait(self, *streams: int, read_window: bool = True) -> list[H2Response]:
        """Read until every stream named ended (or was reset), or the connection closed."""
        while not all(s in self.ended for s in streams) and self.goaway is None:
            data = self.sock.recv(65536)
            if not data:
                break
            self.receive(data, read_window=read_window)
        return [self.responses[s] for s in streams]

    def receive(self, data: bytes, *, read_window: bool = True) -> None:
        for event in self.conn.receive_data(data):
            self._event(event, read_window)
        self.pump()

    def _event(self, event: h2.events.Event, read_window: bool) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            response = self.responses[event.stream_id]
            for name, value in event.headers:
                if name == b":status":
                    response.status = int(value)
                else:
                    response.headers[name.decode()] = value.decode()
        elif isinstance(event, h2.events.InformationalResponseReceived):
            status = dict(event.headers)[b":status"]
            self.responses[event.stream_id].informational.append(int(status))
        elif isinstance(event, h2.events.DataReceived):
            self.responses[event.stream_id].body += event.data
            if read_window:
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived):
            self.responses[event.stream_id].trailers = {
                n.decode(): v.decode() for n, v in event.headers
            }
        elif isinstance(event, h2.events.StreamEnded):
            self.ended.add(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self.responses[event.stream_id].reset = event.error_code
            self.ended.add(event.stream_id)
        elif isinstance(event, h2.events.SettingsAcknowledged):
            self.acked = True
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = event

    def until_goaway(self, *, read_window: bool = True) -> h2.events.ConnectionTerminated | None:
        """Read until the server's GOAWAY (or the connection's end), then close; the GOAWAY."""
        self.sock.settimeout(TIMEOUT)
        try:
            while self.goaway is None:
                data = self.sock.recv(65536)
                if not data:
                    break
                self.receive(data, read_window=read_window)
        except (TimeoutError, ConnectionError):
            pass
        finally:
            self.close()
        return self.goaway

    def get(self, path: str, **options: object) -> H2Response:
        stream = self.send("GET", path, **options)  # type: ignore[arg-type]
        return self.wait(stream)[0]

    def close(self) -> None:
        self.sock.close()
