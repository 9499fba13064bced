"""The proxy's Prometheus metrics (docs/contracts.md, "Ports"), served on ``/metrics``.

Each :class:`Metrics` owns a :class:`prometheus_client.CollectorRegistry` of its own, never the
process-global one: several proxies in one test process must not share counters, and nothing
else in the process registers collectors by accident.

The two series every request touches (the request counter and the upstream histogram) are
plain integers in :class:`_RequestSeries`, turned into metric families only when scraped:
``prometheus_client``'s children take a lock and check their type on every increment, about
three times the cost of the integers here (docs/benchmarks.md, "Measurements behind the
design").

- ``coxswain_requests_total{listener, route_kind, route_namespace, route_name, status_class,
  protocol, grpc_status}``: every answered request; ``route_*`` are empty when no route
  matched (404, 400, …); ``protocol`` is the client's, ``http/1.1`` or ``h2``; ``grpc_status``
  a gRPC call's outcome, ``0`` … ``16`` or ``other``, empty for other requests
  (:func:`coxswain.route.grpc_status.status_label`): at most 2 × 19 series per route and
  status class.
- ``coxswain_upstream_duration_seconds``: a histogram of forwarded exchanges, from the request
  head to the end of the upstream response.
- ``coxswain_open_connections``: client connections open now.
- ``coxswain_connections_shed_total``: connections waiting for a request head that were closed
  to make room at ``--max-connections`` (:mod:`.capacity`).
- ``coxswain_snapshot_info{version}``: 1 for the version served; the previous one is removed.
- ``coxswain_snapshot_applies_total{result}``: ``ok`` or ``refused``.
- ``coxswain_mirror_requests_total{result}``: mirrored requests ``sent``, ``failed`` or
  ``dropped`` (:mod:`.mirror`).
- ``coxswain_upstream_http2_connections``, ``coxswain_upstream_http2_streams``: the proxy's
  HTTP/2 connections to backends open now, and the streams open on them (:mod:`.h2_pool`).
- ``coxswain_upstream_http2_goaways_received_total``: GOAWAY frames received from backends;
  ``coxswain_upstream_http2_refused_streams_total``: streams a backend refused unprocessed
  (``REFUSED_STREAM``, or past a GOAWAY's last stream id, RFC 9113 §8.7), each sent again or
  answered 502.
- ``coxswain_upstream_retries_total{reason}``: backend requests tried again under a route's
  ``retry`` (:mod:`.upstream`): ``status`` or ``connection``.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from coxswain.shell.loop_lag import lag_histogram

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prometheus_client.metrics_core import Metric

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


_RequestKey = tuple[int, tuple[str, str, str] | None, int, str, str]


class _RequestSeries(Collector):
    """Requests by (listener, route, status class) and the upstream duration histogram."""

    def __init__(self) -> None:
        self.requests: dict[_RequestKey, int] = {}
        self.buckets = [0] * (len(_BUCKETS) + 1)  # per bucket, not cumulative; the last: +Inf
        self.duration_sum = 0.0

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "coxswain_requests",
            "Requests answered, by local listener port, route and status class.",
            labels=[
                "listener",
                "route_kind",
                "route_namespace",
                "route_name",
                "status_class",
                "protocol",
                "grpc_status",
            ],
        )
        for (listener, route, status_class, protocol, grpc), count in self.requests.items():
            kind, namespace, name = route or ("", "", "")
            label = f"{status_class}xx" if status_class else "other"
            requests.add_metric(
                [str(listener), kind, namespace, name, label, protocol, grpc], count
            )
        yield requests
        cumulative, seen = [], 0
        for bound, count in zip([*map(str, _BUCKETS), "+Inf"], self.buckets, strict=True):
            seen += count
            cumulative.append((bound, float(seen)))
        yield HistogramMetricFamily(
            "coxswain_upstream_duration_seconds",
            "Duration of forwarded exchanges, request head to end of the upstream response.",
            buckets=cumulative,
            sum_value=self.duration_sum,
        )


class Metrics:
    """The proxy's collectors in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._series = _RequestSeries()
        self.registry.register(self._series)
        self.open_connections = Gauge(
            "coxswain_open_connections", "Client connections open now.", registry=self.registry
        )
        self.shed = Counter(
            "coxswain_connections_shed",
            "Connections waiting for a request head closed to make room at --max-connections.",
            registry=self.registry,
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
        self.retries = Counter(
            "coxswain_upstream_retries",
            "Backend requests tried again under a route's retry policy, by what failed: "
            "status (a response code the rule retries) or connection (an error or timeout).",
            ["reason"],
            registry=self.registry,
        )
        self.goaways = Counter(
            "coxswain_http2_goaways",
            "HTTP/2 connections the proxy closed on a client's fault: protocol_error (it broke "
            "RFC 9113), enhance_your_calm (resets, PINGs or SETTINGS past its budget) or "
            "stalled_window (its flow-control window stayed shut for the send timeout).",
            ["reason"],
            registry=self.registry,
        )
        self.upstream_h2_goaways = Counter(
            "coxswain_upstream_http2_goaways_received",
            "GOAWAY frames received from backends on the proxy's HTTP/2 connections.",
            registry=self.registry,
        )
        self.upstream_h2_refused = Counter(
            "coxswain_upstream_http2_refused_streams",
            "Streams a backend refused unprocessed (REFUSED_STREAM, or past a GOAWAY's last "
            "stream id): each sent again on another connection or answered 502.",
            registry=self.registry,
        )
        self.upstream_h2_connections = Gauge(
            "coxswain_upstream_http2_connections",
            "HTTP/2 connections to backends open now.",
            registry=self.registry,
        )
        self.upstream_h2_streams = Gauge(
            "coxswain_upstream_http2_streams",
            "Streams open now on the HTTP/2 connections to backends.",
            registry=self.registry,
        )
        self.loop_lag = lag_histogram("proxy", self.registry)
        self._version: str | None = None

    def request(
        self,
        *,
        listener: int,
        route: tuple[str, str, str] | None,
        status: int,
        protocol: str = "http/1.1",
        grpc_status: str = "",
    ) -> None:
        """One answered request (a status outside 100-599 is counted as ``other``)."""
        requests = self._series.requests
        key = (listener, route, status // 100 if 100 <= status <= 599 else 0, protocol, grpc_status)
        requests[key] = requests.get(key, 0) + 1

    def forwarded(self, seconds: float) -> None:
        """One forwarded exchange took ``seconds``."""
        series = self._series
        series.buckets[bisect_left(_BUCKETS, seconds)] += 1
        series.duration_sum += seconds

    def applied(self, version: str) -> None:
        if self._version is not None and self._version != version:
            self.snapshot.remove(self._version)
        self._version = version
        self.snapshot.labels(version).set(1)
        self.applies.labels("ok").inc()

    def mirrored(self, result: str) -> None:
        self.mirrors.labels(result).inc()

    def retried(self, reason: str) -> None:
        self.retries.labels(reason).inc()

    def upstream_http2(self, event: str) -> None:
        """A backend's HTTP/2 connection said ``goaway`` or ``refused`` a stream."""
        if event == "goaway":
            self.upstream_h2_goaways.inc()
        else:
            self.upstream_h2_refused.inc()

    def watch_upstream_http2(
        self, connections: Callable[[], int], streams: Callable[[], int]
    ) -> None:
        """Read the HTTP/2 backend connections and streams open when scraped."""
        self.upstream_h2_connections.set_function(connections)
        self.upstream_h2_streams.set_function(streams)

    def http2_goaway(self, reason: str) -> None:
        self.goaways.labels(reason).inc()

    def refused(self) -> None:
        self.applies.labels("refused").inc()

    def exposition(self) -> bytes:
        """The registry in Prometheus text format."""
        return generate_latest(self.registry)
