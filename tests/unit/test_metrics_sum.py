"""Summing worker expositions: what the supervisor's /metrics shows for --workers N."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from coxswain.shell.dataplane.metrics import Metrics
from coxswain.shell.dataplane.metrics_sum import sum_expositions


def _samples(text: bytes) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_counters_histograms_and_gauges_add_up_and_created_series_go() -> None:
    one, two = Metrics(), Metrics()
    route = ("HTTPRoute", "app", 'odd "name"\\x')  # label escaping survives the round trip
    one.request(listener=80, route=route, status=200)
    two.request(listener=80, route=route, status=204)
    two.request(listener=80, route=None, status=404)
    one.forwarded(0.003)
    two.forwarded(0.3)
    one.applied("sha256:a")
    two.applied("sha256:a")
    two.open_connections.inc(3)
    total = sum_expositions([one.exposition().decode(), two.exposition().decode()])
    samples = _samples(total)
    labels = {
        "listener": "80",
        "route_kind": "HTTPRoute",
        "route_namespace": "app",
        "route_name": 'odd "name"\\x',
        "status_class": "2xx",
        "protocol": "http/1.1",
        "grpc_status": "",
    }
    assert samples[("coxswain_requests_total", frozenset(labels.items()))] == 2
    assert samples[("coxswain_upstream_duration_seconds_count", frozenset())] == 2
    assert samples[("coxswain_upstream_duration_seconds_sum", frozenset())] == 0.303
    assert samples[("coxswain_upstream_duration_seconds_bucket", frozenset({("le", "0.005")}))] == 1
    assert samples[("coxswain_snapshot_info", frozenset({("version", "sha256:a")}))] == 2
    assert samples[("coxswain_open_connections", frozenset())] == 3
    assert not any(name.endswith("_created") for name, _ in samples)
    assert b"# TYPE coxswain_requests_total counter" in total


def test_no_worker_answered_is_an_empty_exposition() -> None:
    assert sum_expositions([]) == b""
