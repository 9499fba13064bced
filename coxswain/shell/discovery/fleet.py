"""The fleet of subscribed proxies as the discovery server observes it: one entry per
(identity, node id) of an open stream (:mod:`.server` keeps it; the controller reads it for
listeners' ``Programmed`` conditions, docs/architecture.md "Discovery, `serve` and the
controller")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coxswain.compile.scope import Scope
    from coxswain.shell.discovery.ca import ProxyIdentity

__all__ = ["NodeKey", "NodeObservation"]

NodeKey = tuple["ProxyIdentity | None", str]
"""A fleet entry's key: the stream's identity (None without TLS) and the Subscribe's node id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeObservation:
    """What the server knows of one connected proxy (one identity's node id)."""

    node_id: str
    scope: Scope
    identity: ProxyIdentity | None
    live: int = 0  # streams open now: a proxy that reconnects before its old stream ends has two
    acked_version: str | None = None
    bound_ports: frozenset[int] = frozenset()
    streams: int = 0  # streams opened since the entry appeared; a Nack must not add one
    last_nack: str | None = None  # "<version>: <detail>" of the latest Nack

    @property
    def connected(self) -> bool:
        """Some stream of the node is open (the end of an older one does not disconnect it;
        the entry is removed when the last one ends)."""
        return self.live > 0
