"""HTTP/2 attacks against the proxy (docs/security.md): each ends the offending connection with
GOAWAY, and a well-behaved client on another connection is served meanwhile and after.

- rapid reset (CVE-2023-44487), PING and SETTINGS floods: the per-connection budget
  (``coxswain/http2/budget.py``), GOAWAY ``ENHANCE_YOUR_CALM``;
- a CONTINUATION flood: at most 64 CONTINUATION frames per header block (``h2``), then GOAWAY;
- an HPACK bomb: a header list that decodes past the head limit from a few bytes of indexed
  fields, GOAWAY;
- a window that stays shut: the client is disconnected after the send timeout, GOAWAY.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import h2.errors
import hpack
from hyperframe.frame import ContinuationFrame, HeadersFrame, PingFrame, SettingsFrame

from coxswain.shell.dataplane.upstream import Timeouts
from tests.integration.h2_client import H2Client
from tests.integration.proxy_harness import TIMEOUT, Running, ingress_path, run_proxy, snapshot

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

REQUEST = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"a.example.com")]


def served(ports: dict[str, int]) -> dict[str, Any]:
    return snapshot(
        hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [ports["one"]]}
    )


def goaway_after(client: H2Client, attack: bytes) -> int:
    """Send ``attack`` (raw frames after the preface), read until GOAWAY; its error code."""
    client.sock.sendall(attack)
    goaway = client.until_goaway()
    assert goaway is not None, "the connection ended without GOAWAY"
    return int(goaway.error_code)


def attacked(tmp_path: Path, attack: Callable[[H2Client], int], expected: int) -> None:
    def client(run: Running) -> None:
        bystander = H2Client(run.http_port)
        assert goaway_after_code(run, attack) == expected
        assert bystander.get("/").status == 200  # opened before, still served
        bystander.close()
        after = H2Client(run.http_port)
        assert after.get("/").status == 200
        after.close()
        metrics = _admin(run, "/metrics")
        assert "coxswain_http2_goaways_total" in metrics

    def goaway_after_code(run: Running, attack: Callable[[H2Client], int]) -> int:
        return attack(H2Client(run.http_port))

    run_proxy(tmp_path, served, client)


def _admin(run: Running, path: str) -> str:
    with socket.create_connection(("127.0.0.1", run.admin_port), timeout=TIMEOUT) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks).decode()


def test_a_ping_flood_is_sent_away(tmp_path: Path) -> None:
    def attack(client: H2Client) -> int:
        return goaway_after(
            client, b"".join(PingFrame(0, opaque_data=b"12345678").serialize() for _ in range(500))
        )

    attacked(tmp_path, attack, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)


def test_a_settings_flood_is_sent_away(tmp_path: Path) -> None:
    def attack(client: H2Client) -> int:
        frames = []
        for _ in range(500):
            frame = SettingsFrame(0)
            frame.settings = {SettingsFrame.MAX_CONCURRENT_STREAMS: 100}
            frames.append(frame.serialize())
        return goaway_after(client, b"".join(frames))

    attacked(tmp_path, attack, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)


def test_a_continuation_flood_is_sent_away(tmp_path: Path) -> None:
    def attack(client: H2Client) -> int:
        encoder = hpack.Encoder()
        block = encoder.encode([*REQUEST, (b":path", b"/")])
        frames = [HeadersFrame(1, data=block[:1]).serialize()]  # no END_HEADERS
        frames.extend(ContinuationFrame(1, data=b"").serialize() for _ in range(200))
        return goaway_after(client, b"".join(frames))

    attacked(tmp_path, attack, h2.errors.ErrorCodes.PROTOCOL_ERROR)


def test_an_hpack_bomb_is_sent_away(tmp_path: Path) -> None:
    def attack(client: H2Client) -> int:
        encoder = hpack.Encoder()
        big = (b"x-bomb", b"b" * 4000)
        first = encoder.encode([*REQUEST, (b":path", b"/"), big])  # into the dynamic table
        again = encoder.encode([*REQUEST, (b":path", b"/"), *[big] * 40])  # 160 KB decoded
        frames = [
            HeadersFrame(1, data=first, flags=["END_HEADERS", "END_STREAM"]).serialize(),
            HeadersFrame(3, data=again, flags=["END_HEADERS", "END_STREAM"]).serialize(),
        ]
        return goaway_after(client, b"".join(frames))

    attacked(tmp_path, attack, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)


def test_a_window_that_stays_shut_disconnects_the_client(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        stalled = H2Client(run.http_port, window=0)
        stalled.send("GET", "/")  # the response waits for a window that never opens
        goaway = stalled.until_goaway(read_window=False)
        assert goaway is not None
        assert goaway.error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM
        assert 'reason="stalled_window"' in _admin(run, "/metrics")
        calm = H2Client(run.http_port)
        assert calm.get("/").status == 200
        calm.close()

    run_proxy(tmp_path, served, client, timeouts=Timeouts(client_send=0.5))


def test_a_rapid_reset_flood_is_sent_away(tmp_path: Path) -> None:
    def attack(client: H2Client) -> int:
        for _ in range(400):
            stream = client.conn.get_next_available_stream_id()
            client.conn.send_headers(stream, [*REQUEST, (b":path", b"/")])
            client.conn.reset_stream(stream)
        return goaway_after(client, client.conn.data_to_send())

    attacked(tmp_path, attack, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)
