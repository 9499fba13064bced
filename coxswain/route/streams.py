"""Choosing the route of a layer-4 connection or datagram session (Gateway API v1 TLSRoute,
TCPRoute, UDPRoute). Pure.

A layer-4 listener's table (``ListenerTable`` of protocol TLS, TCP or UDP) holds its routes'
stream entries by route host, in precedence order (``compile.gateway.l4route``). The order of
decisions is the HTTP one with the SNI for the Host (``route.gateway``): the most specific
listener hostname matching the server name (exact, then wildcards with more labels first,
then the listener without hostname), then the most specific route host; its first entry is
the route. TCP and UDP listeners, and TLS clients that send no server name, reach only the
listener and the route host without hostname (``*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coxswain.compile.snapshot import Backend, ListenerTable, RouteAction
    from coxswain.route.gateway import GatewayPortIndex

__all__ = ["StreamDecision", "select_stream"]


@dataclass(frozen=True, slots=True)
class StreamDecision:
    """The listener and route a connection takes, or why none (``reason``, empty when
    routed); ``backends`` are the route's with a weight above 0, ``weights`` their weights."""

    table: ListenerTable | None
    action: RouteAction | None
    reason: str
    backends: tuple[Backend, ...] = ()
    weights: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """The route, for logs and metrics: ``kind namespace/name``, or ``-``."""
        if self.action is None:
            return "-"
        route = self.action.route
        return f"{route.kind} {route.namespace}/{route.name}"


def select_stream(index: GatewayPortIndex | None, sni: str | None) -> StreamDecision:
    """The route of a connection to a port indexed as ``index`` (None: nothing is served
    there) whose ClientHello named ``sni`` (None: it named none, or it is TCP or UDP)."""
    if index is None:
        return StreamDecision(None, None, "no listener is served on this port")
    host = sni or ""
    listener = index.find_listener(host)
    if listener is None:
        wanted = f"server name {sni!r}" if sni else "a client without a server name"
        return StreamDecision(None, None, f"no listener of this port takes {wanted}")
    for _, rules in listener.host_rules(host):
        for rule in rules.candidates("/"):
            action = rule.action
            backends = tuple(b for b in action.backends if b.weight > 0)
            return StreamDecision(
                listener.table, action, "", backends, tuple(b.weight for b in backends)
            )
    wanted = f"server name {sni!r}" if sni else "clients without a server name"
    return StreamDecision(listener.table, None, f"no route of the listener takes {wanted}")
