"""What one snapshot gives the stream listeners, built once per apply and swapped whole.

``ports`` maps each local port of a ready layer-4 listener (``listener_health``: protocol
TLS, TCP or UDP) to its protocol and the index of its listener tables (``route.gateway``);
``routes`` is every (port, route) the snapshot serves, which decides the drain of
connections whose route a new snapshot removed. A TLS listener terminates TLS when the
snapshot holds a certificate for it (``tls``, by port and listener hostname: TLS listeners in
``Terminate`` mode); without one it passes the bytes through. TLS contexts are made on first
use, one per certificate, and live as long as this snapshot; so do the routing decisions,
one per port and server name (a bounded number).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Final

from coxswain.compile.gateway.listeners import STREAM_PROTOCOLS
from coxswain.route.gateway import index_gateway_port
from coxswain.route.streams import StreamDecision, select_stream
from coxswain.shell.dataplane.tls import load_chain

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.snapshot import Endpoint, ListenerTable, RouteRef, Snapshot
    from coxswain.route.gateway import GatewayPortIndex

__all__ = ["DECIDED", "StreamServed"]

DECIDED: Final = 4096  # decisions kept per snapshot (port and server name)


class StreamServed:
    """A snapshot as the stream listeners read it; see the module docstring."""

    __slots__ = ("_contexts", "_decided", "endpoints", "ports", "routes", "snapshot")

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.endpoints: dict[str, Sequence[Endpoint]] = dict(snapshot.endpoints)
        self.ports: dict[int, tuple[str, GatewayPortIndex]] = {}
        for health in snapshot.listener_health:
            port = health.target_port
            if health.ready and port and health.protocol in STREAM_PROTOCOLS:
                tables = snapshot.gateways.get(port)
                if tables is not None and port not in self.ports:
                    self.ports[port] = (health.protocol, index_gateway_port(tables))
        self.routes = frozenset(
            (port, rule.action.route)
            for port in self.ports
            for table in snapshot.gateways[port].values()
            for rules in table.hosts.values()
            for rule in rules
        )
        self._contexts: dict[tuple[int, str], ssl.SSLContext] = {}
        self._decided: dict[tuple[int, str | None], StreamDecision] = {}

    def protocols(self) -> dict[int, str]:
        """The protocol of each layer-4 port: the sockets to have open."""
        return {port: protocol for port, (protocol, _) in self.ports.items()}

    def decide(self, port: int, sni: str | None) -> StreamDecision:
        """The route of a connection or session arriving on ``port``: decided once per port
        and server name for this snapshot (the decision is pure, and the same for every
        connection alike), for at most ``DECIDED`` of them: server names are the clients'."""
        key = (port, sni)
        decision = self._decided.get(key)
        if decision is None:
            found = self.ports.get(port)
            decision = select_stream(None if found is None else found[1], sni)
            if len(self._decided) < DECIDED:
                self._decided[key] = decision
        return decision

    def serves(self, port: int, route: RouteRef) -> bool:
        """Whether this snapshot still serves ``route`` on ``port``."""
        return (port, route) in self.routes

    def terminating(self, port: int, table: ListenerTable) -> ssl.SSLContext | None:
        """The server context of a TLS listener in Terminate mode, None for Passthrough. It
        offers no ALPN: the proxy does not know what the backend speaks (RFC 7301 §3.2 lets a
        server not answer)."""
        certificates = self.snapshot.tls.get(port)
        certificate = None if certificates is None else certificates.get(table.hostname)
        if certificate is None:
            return None
        key = (port, table.hostname)
        context = self._contexts.get(key)
        if context is None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            load_chain(context, certificate)
            self._contexts[key] = context
        return context
