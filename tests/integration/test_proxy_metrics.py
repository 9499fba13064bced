"""``/metrics`` on the admin port: Prometheus text from the proxy's own registry."""

from __future__ import annotations

import http.client
import time
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from .grpc_backend import GrpcBackend, proxy_channel
from .h2_backend import H2Backend
from .proxy_harness import (
    Running,
    backend,
    gateway_rule,
    ingress_path,
    run_proxy,
    snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import trio

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
        plain = {("protocol", "http/1.1"), ("grpc_status", "")}
        ok = frozenset({("listener", port), ("status_class", "2xx"), *route, *plain})
        assert found[("coxswain_requests_total", ok)] == 4
        missing = {("route_kind", ""), ("route_namespace", ""), ("route_name", "")}
        not_found = frozenset({("listener", port), ("status_class", "4xx"), *missing, *plain})
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


def eventually(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_grpc_calls_are_counted_by_protocol_and_grpc_status(tmp_path: Path) -> None:
    """The backend's statuses (trailers) and the proxy's own (Trailers-Only) alike, with the
    backend HTTP/2 connection and its streams as gauges."""
    with GrpcBackend() as service:

        def make(ports: dict[str, int]) -> dict[str, Any]:
            rule = gateway_rule([backend("grpc", protocol="h2c")], grpc=True)
            rule["route"]["kind"] = "GRPCRoute"
            rule["match"]["path"] = "/test.Echo"
            return snapshot(
                endpoints={"grpc": [service.port]},
                gateway_port=ports["gateway"],
                gateway_rules=[rule],
            )

        def client(run: Running) -> None:
            with proxy_channel(run.gateway_port) as channel:
                unary = channel.unary_unary("/test.Echo/Unary")
                assert unary(b"a", timeout=TIMEOUT) == b"a"
                assert unary(b"b", timeout=TIMEOUT) == b"b"
                with pytest.raises(grpc.RpcError):
                    unary(b"fail", timeout=TIMEOUT)  # NOT_FOUND, 5, in the backend's trailers
                with pytest.raises(grpc.RpcError):
                    channel.unary_unary("/other.Service/Call")(b"x", timeout=TIMEOUT)

            def scraped() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
                return samples(get(run.admin_port, "/metrics")[2].decode())

            eventually(lambda: scraped()[("coxswain_upstream_http2_streams", frozenset())] == 0)
            found = scraped()
            assert found[("coxswain_upstream_http2_connections", frozenset())] == 1
            counted = {
                (labels["grpc_status"], labels["status_class"]): value
                for (name, pairs), value in found.items()
                if name == "coxswain_requests_total"
                for labels in [dict(pairs)]
                if labels["protocol"] == "h2"
            }
            # the proxy's own answer keeps the class of its HTTP status (404: no rule)
            assert counted == {("0", "2xx"): 2, ("5", "2xx"): 1, ("12", "4xx"): 1}

        run_proxy(tmp_path, make, client, backends=())


def test_backend_goaways_and_refused_streams_are_counted(tmp_path: Path) -> None:
    h2c = H2Backend(refuse_first=1, goaway_after=1)

    async def serve(*_: object, tls: object, task_status: trio.TaskStatus[int]) -> None:
        await h2c.serve(task_status=task_status)

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([backend("one", protocol="h2c")])],
        )

    def client(run: Running) -> None:
        for _ in range(2):
            status, _, _ = get(run.gateway_port)
            assert status == 200
        eventually(lambda: h2c.connections == 2)
        found = samples(get(run.admin_port, "/metrics")[2].decode())
        assert found[("coxswain_upstream_http2_goaways_received_total", frozenset())] >= 1
        assert found[("coxswain_upstream_http2_refused_streams_total", frozenset())] == 1
        requests = [
            dict(pairs) for (name, pairs), _ in found.items() if name == "coxswain_requests_total"
        ]
        assert {(r["protocol"], r["grpc_status"]) for r in requests} == {("http/1.1", "")}

    run_proxy(tmp_path, make, client, backends=("one",), echo=serve)
