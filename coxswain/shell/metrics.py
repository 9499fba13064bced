"""The proxy's Prometheus metrics (ARCHITECTURE §6, issue 5 item 8), served on ``/metrics``.

Each :class:`Metrics` owns a :class:`prometheus_client.CollectorRegistry` of its own, never the
process-global one: several proxies in one test process must not share counters, and nothing
else in the process registers collectors by accident.

- ``coxswain_requests_total{listener, route_kind, route_namespace, route_name, status_class}``:
  every answered request; ``route_*`` are empty when no route matched (404, 400, …).
- ``coxswain_upstream_duration_seconds``: a histogram of forwarded exchanges, from the request
  head to the end of the upstream response.
- ``coxswain_open_connections``: client connections open now.
- ``coxswain_snapshot_info{version}``: 1 for the version served; the previous one is removed.
- ``coxswain_snapshot_applies_total{result}``: ``ok`` or ``refused``.
- ``coxswain_mirror_requests_total{result}``: mirrored requests ``sent``, ``failed`` or
  ``dropped`` (:mod:`.mirror`).
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The proxy's collectors in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "coxswain_requests",
            "Requests answered, by local listener port, route and status class.",
            ["listener", "route_kind", "route_namespace", "route_name", "status_class"],
            registry=self.registry,
        )
        self.upstream_duration = Histogram(
            "coxswain_upstream_duration_seconds",
            "Duration of forwarded exchanges, request head to end of the upstream response.",
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.open_connections = Gauge(
            "coxswain_open_connections", "Client connections open now.", registry=self.registry
        )
        self.snapshot = Gauge(
            "coxswain_snapshot_info",
            "The snapshot version served (value 1).",
            ["version"],
            registry=self.registry,
        )
        self.applies = Counter(
            "coxswain_snapshot_applies",
            "Snapshots applied (ok) or refused.",
            ["result"],
            registry=self.registry,
        )
        self.mirrors = Counter(
            "coxswain_mirror_requests",
            "Mirrored requests by outcome: sent, failed or dropped.",
            ["result"],
            registry=self.registry,
        )
        self._version: str | None = None
        # the counter's children by (listener, route, status class): ``labels()`` costs a few
        # microseconds per request; the dictionary probe a fraction of one
        self._request_counters: dict[tuple[int, tuple[str, str, str] | None, int], Counter] = {}

    def request(self, *, listener: int, route: tuple[str, str, str] | None, status: int) -> None:
        key = (listener, route, status // 100 if 100 <= status <= 599 else 0)
        counter = self._request_counters.get(key)
        if counter is None:
            kind, namespace, name = route or ("", "", "")
            status_class = f"{key[2]}xx" if key[2] else "other"
            counter = self.requests.labels(str(listener), kind, namespace, name, status_class)
            self._request_counters[key] = counter
        counter.inc()

    def applied(self, version: str) -> None:
        if self._version is not None and self._version != version:
            self.snapshot.remove(self._version)
        self._version = version
        self.snapshot.labels(version).set(1)
        self.applies.labels("ok").inc()

    def mirrored(self, result: str) -> None:
        self.mirrors.labels(result).inc()

    def refused(self) -> None:
        self.applies.labels("refused").inc()

    def exposition(self) -> bytes:
        """The registry in Prometheus text format."""
        return generate_latest(self.registry)
