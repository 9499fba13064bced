"""``/metrics`` on the admin port: Prometheus text from the proxy's own registry."""

from __future__ import annotations

import http.client
from typing import TYPE_CHECKING, Any

from prometheus_client.parser import text_string_to_metric_families

from .proxy_harness import Running, ingress_path, run_proxy, snapshot, write_snapshot

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 30  # an upper bound for what must happen, generous for a loaded machine


def get(port: int, path: str = "/", host: str = "a.example.com") -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    conn.request("GET", path, headers={"Host": host})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("content-type") or "", data


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_count_requests_latency_connections_and_snapshots(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [ports["one"]]}
        )

    def client(run: Running) -> None:
        for _ in range(3):
            assert get(run.http_port)[0] == 200
        assert get(run.http_port, host="nowhere.example.com")[0] == 404
        held = http.client.HTTPConnection("127.0.0.1", run.http_port, timeout=TIMEOUT)
        held.request("GET", "/", headers={"Host": "a.example.com"})
        assert held.getresponse().read()  # the connection stays open (keep-alive)
        (tmp_path / "snapshot.json").write_text("{not json")
        run.wait_applies(1, rejections=1)
        write_snapshot(
            tmp_path / "snapshot.json",
            {**make(run.backends), "version": "sha256:second"},
        )
        run.wait_applies(2, rejections=1)

        status, content_type, body = get(run.admin_port, "/metrics")
        assert status == 200
        assert content_type.startswith("text/plain")
        found = samples(body.decode())
        port = str(run.http_port)
        route = {("route_kind", "Ingress"), ("route_namespace", "app"), ("route_name", "one")}
        ok = frozenset({("listener", port), ("status_class", "2xx"), *route})
        assert found[("coxswain_requests_total", ok)] == 4
        missing = {("route_kind", ""), ("route_namespace", ""), ("route_name", "")}
        not_found = frozenset({("listener", port), ("status_class", "4xx"), *missing})
        assert found[("coxswain_requests_total", not_found)] == 1
        assert found[("coxswain_upstream_duration_seconds_count", frozenset())] == 4
        assert found[("coxswain_open_connections", frozenset())] >= 1
        assert found[("coxswain_snapshot_info", frozenset({("version", "sha256:second")}))] == 1
        assert ("coxswain_snapshot_info", frozenset({("version", "sha256:test")})) not in found
        applies = "coxswain_snapshot_applies_total"
        assert found[(applies, frozenset({("result", "ok")}))] == 2
        assert found[(applies, frozenset({("result", "refused")}))] == 1
        held.close()

    run_proxy(tmp_path, make, client)
