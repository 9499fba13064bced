"""The layer-4 series of ``/metrics`` (docs/contracts.md, "Ports"), in the proxy's registry.

- ``coxswain_stream_connections_total{listener, protocol, route, outcome}``: TCP and TLS
  connections by local port, protocol, route (``kind namespace/name``, ``-`` when none) and
  outcome: ``forwarded``, ``no_route``, ``no_backend`` (no valid backend, or no ready
  endpoint), ``connect_failed``, ``bad_hello`` (not a ClientHello, or larger than 16 KiB),
  ``hello_timeout``, ``handshake_failed`` (Terminate), ``over_capacity`` (closed at once: the
  proxy holds its most connections);
- ``coxswain_stream_bytes_total{listener, route, direction}``: bytes forwarded,
  ``upstream`` (client to backend) or ``downstream``;
- ``coxswain_udp_sessions_total{listener, route, outcome}``: UDP sessions ``opened``,
  ``no_route``, ``no_backend``, ``evicted`` (the table was full);
- ``coxswain_udp_sessions``: UDP sessions open now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["StreamMetrics"]


class StreamMetrics:
    """The layer-4 collectors of one proxy."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.connections = Counter(
            "coxswain_stream_connections",
            "Layer-4 connections by listener port, protocol, route and outcome.",
            ["listener", "protocol", "route", "outcome"],
            registry=registry,
        )
        self.bytes = Counter(
            "coxswain_stream_bytes",
            "Layer-4 bytes forwarded by listener port, route and direction.",
            ["listener", "route", "direction"],
            registry=registry,
        )
        self.udp_sessions = Counter(
            "coxswain_udp_sessions",
            "UDP sessions by listener port, route and outcome.",
            ["listener", "route", "outcome"],
            registry=registry,
        )
        self._children: dict[tuple[int, str, str, str], Counter] = {}
        self.udp_open = Gauge(
            "coxswain_udp_open_sessions", "UDP sessions open now.", registry=registry
        )

    def connection(self, port: int, protocol: str, route: str, outcome: str) -> None:
        key = (port, protocol, route, outcome)
        child = self._children.get(key)
        if child is None:  # a child per label set, found once: labels() takes a lock
            child = self._children[key] = self.connections.labels(
                str(port), protocol, route, outcome
            )
        child.inc()

    def forwarded(self, port: int, route: str, upstream: int, downstream: int) -> None:
        """The bytes of one finished connection or session."""
        if upstream:
            self.bytes.labels(str(port), route, "upstream").inc(upstream)
        if downstream:
            self.bytes.labels(str(port), route, "downstream").inc(downstream)

    def session(self, port: int, route: str, outcome: str) -> None:
        self.udp_sessions.labels(str(port), route, outcome).inc()
