"""``coxswain route`` on a layer-4 port: the connection's listener, route and backends, from a
snapshot compiled from manifests (TLS by SNI: exact, wildcard, miss; TCP by port)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from coxswain.cli.route_stream import explain_stream, stream_protocol
from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.model.manifests import parse_manifests

if TYPE_CHECKING:
    from coxswain.compile.snapshot import Snapshot

CASES = Path(__file__).resolve().parents[1] / "golden" / "cases"


def _snapshot(case: str) -> Snapshot:
    """The shared pool's snapshot of a golden case's input and its includes."""
    bodies: list[object] = []
    for name in ("_base/gateway-class.yaml", "_base/services.yaml", f"gateway/{case}.in.yaml"):
        path = CASES / name
        parsed = parse_manifests(path.read_text(), str(path))
        assert isinstance(parsed, list)
        bodies.extend(b for b in parsed if b.body.get("kind") != "CompileCase")
    return compile(build_state(bodies), SharedPool()).snapshot


def test_a_tls_connection_is_explained_by_its_server_name() -> None:
    snapshot = _snapshot("tlsroute-passthrough-sni")
    port = snapshot.listener_health[0].target_port
    assert stream_protocol(snapshot, port) == "TLS"
    exact = explain_stream(snapshot, port, "TLS", "ABC.example.com.")
    assert (exact["mode"], exact["route"]["name"]) == ("Passthrough", "exact")
    wild = explain_stream(snapshot, port, "TLS", "x.example.com")
    assert wild["route"]["name"] == "wildcard"
    assert [b["weight"] for b in wild["backends"]] == [3, 1]
    miss = explain_stream(snapshot, port, "TLS", "abc.example.org")
    assert not miss["forwarded"]
    assert "abc.example.org" in miss["reason"]


def test_a_tcp_connection_is_explained_by_its_port() -> None:
    snapshot = _snapshot("tcproute-section-name-and-port")
    ports = {h.listener: h.target_port for h in snapshot.listener_health}
    db = explain_stream(snapshot, ports["db"], "TCP", None)
    assert db["route"]["name"] == "db"
    assert db["backends"][0]["endpoints"] == ["10.0.0.1:8080", "10.0.0.2:8080"]
    assert stream_protocol(snapshot, ports["http"]) is None
