"""Listener plans: which sockets a proxy must have open for a snapshot, and how to get there.

The proxy shell executes the plan; deciding it is pure (docs/architecture.md, "Data-plane
rules"). Rules:
1. A shared-pool proxy binds the Ingress HTTP and HTTPS ports; a dedicated proxy binds none.
2. Every listener of the snapshot that is ready is bound on its ``target_port``, with TLS when
   its protocol is HTTPS. Several listeners on one port (hostnames) share one socket. Layer-4
   listeners (TLS, TCP, UDP) carry no HTTP: they are the stream server's (``streams``), never
   an HTTP socket.
3. Applying a new snapshot opens what appeared, closes what disappeared, and re-binds a port only
   when its kind changed (plain ↔ TLS); certificate changes never re-bind (new connections
   simply see the new certificates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.gateway.listeners import STREAM_PROTOCOLS
from coxswain.compile.scope import SharedPool

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.snapshot import Snapshot

__all__ = ["ListenerPlan", "ListenerSpec", "diff_listeners", "listener_specs"]


@dataclass(frozen=True, slots=True, order=True)
class ListenerSpec:
    """A socket to bind: a local port, TLS or plain."""

    port: int
    tls: bool


@dataclass(frozen=True, slots=True)
class ListenerPlan:
    """What to do to go from one set of sockets to another."""

    open: tuple[ListenerSpec, ...]
    close: tuple[int, ...]
    keep: tuple[int, ...]


def listener_specs(
    snapshot: Snapshot, *, ingress_http_port: int, ingress_https_port: int
) -> dict[int, ListenerSpec]:
    """The sockets a proxy serving ``snapshot`` needs, by local port. Pure.

    Args:
        snapshot: what the proxy serves.
        ingress_http_port: the local port for Ingress HTTP (shared pool only).
        ingress_https_port: the local port for Ingress HTTPS (shared pool only).
    """
    specs: dict[int, ListenerSpec] = {}
    if isinstance(snapshot.scope, SharedPool):
        specs[ingress_http_port] = ListenerSpec(ingress_http_port, tls=False)
        specs[ingress_https_port] = ListenerSpec(ingress_https_port, tls=True)
    for health in snapshot.listener_health:
        if health.ready and health.target_port and health.protocol not in STREAM_PROTOCOLS:
            tls = health.protocol == "HTTPS"
            specs.setdefault(health.target_port, ListenerSpec(health.target_port, tls=tls))
    return specs


def diff_listeners(
    current: Mapping[int, ListenerSpec], wanted: Mapping[int, ListenerSpec]
) -> ListenerPlan:
    """The plan from ``current`` sockets to ``wanted`` ones. Pure."""
    changed = {p for p in current.keys() & wanted.keys() if current[p] != wanted[p]}
    return ListenerPlan(
        open=tuple(sorted(wanted[p] for p in (wanted.keys() - current.keys()) | changed)),
        close=tuple(sorted((current.keys() - wanted.keys()) | changed)),
        keep=tuple(sorted((current.keys() & wanted.keys()) - changed)),
    )
