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
- ``coxswain_udp_open_sessions``: UDP sessions open now.

A child series is found once per label set and kept (``labels()`` takes a lock and builds
a key each call): a connection's outcome and bytes cost a dictionary lookup each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

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
        self._bytes: dict[tuple[int, str, str], Counter] = {}
        self._sessions: dict[tuple[int, str, str], Counter] = {}
        self.udp_open = Gauge(
            "coxswain_udp_open_sessions", "UDP sessions open now.", registry=registry
        )

    def connection(self, port: int, protocol: str, route: str, outcome: str) -> None:
        _child(self._children, self.connections, (port, protocol, route, outcome)).inc()

    def forwarded(self, port: int, route: str, upstream: int, downstream: int) -> None:
        """The bytes of one finished connection or session."""
        if upstream:
            _child(self._bytes, self.bytes, (port, route, "upstream")).inc(upstream)
        if downstream:
            _child(self._bytes, self.bytes, (port, route, "downstream")).inc(downstream)

    def session(self, port: int, route: str, outcome: str) -> None:
        _child(self._sessions, self.udp_sessions, (port, route, outcome)).inc()


_Key = TypeVar("_Key", bound=tuple[Any, ...])


def _child(children: dict[_Key, Counter], counter: Counter, key: _Key) -> Counter:
    """The child series of ``counter`` for ``key`` (its labels, the port first), kept in
    ``children``."""
    child = children.get(key)
    if child is None:
        child = children[key] = counter.labels(*(str(value) for value in key))
    return child
