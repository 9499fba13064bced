"""The Gateway API snapshot cells, read from the ``GatewayModel``.

- ``gateways``: internal port → listener hostname → host → rules in precedence order; a
  layer-4 listener's (protocol TLS, TCP or UDP) hosts hold its routes' stream entries, the
  first of a host being the one its connections take (``l4route``);
- ``tls`` and ``client_certs``: internal port → listener hostname → certificate / validation;
- ``listener_health``: one entry per listener of every Gateway in scope.
Only serving listeners with an internal port get table entries; every listener gets health.
A Gateway's listeners are its own and those of the ListenerSets it takes (GEP-1713), all under
the Gateway's name; a ListenerSet's listener is named ``ns/listenerset/name`` there
(``ListenerVerdict.qualified_name``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain.compile.model.gateway_objects import STREAM_KINDS
from coxswain.compile.snapshot import (
    Backend,
    Certificate,
    ClientValidation,
    GatewayRule,
    ListenerHealth,
    ListenerTable,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.keys import ObjectKey

__all__ = ["GatewayCells", "build_cells", "listener_reason"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayCells:
    """The Gateway API parts of a snapshot, and the backends they use."""

    gateways: PMap[int, PMap[str, ListenerTable]]
    tls: dict[int, dict[str, Certificate]]
    client_certs: PMap[int, PMap[str, ClientValidation]]
    listener_health: PVector[ListenerHealth]
    backends: tuple[Backend, ...]


def _backends(entries: Sequence[tuple[tuple[object, ...], GatewayRule]]) -> list[Backend]:
    """The backends and mirror backends of some rules, once per rule."""
    found: list[Backend] = []
    seen: set[int] = set()
    for _, rule in entries:
        action = rule.action
        if id(action) not in seen:
            seen.add(id(action))
            found.extend(action.backends)
            found.extend(m.backend for m in action.mirrors)
    return found


def attached_counts(model: GatewayModel) -> dict[int, int]:
    """Routes attached per listener (by ``id`` of its verdict)."""
    counts: dict[int, int] = defaultdict(int)
    for route in model.routes:
        for parent in route.parents:
            for attachment in parent.attachments:
                counts[id(attachment.listener)] += 1
    return counts


def listener_reason(verdict: ListenerVerdict) -> str:
    """Why a listener is or is not ready, as one sentence."""
    # The first condition that is unhealthy: Accepted or ResolvedRefs False, Conflicted True.
    unhealthy = (
        (verdict.accepted, not verdict.accepted.status),
        (verdict.conflicted, verdict.conflicted.status),
        (verdict.resolved_refs, not verdict.resolved_refs.status),
    )
    for condition, bad in unhealthy:
        if bad:
            return f"{condition.reason}: {condition.message}"
    return "Ready"


def build_cells(model: GatewayModel) -> GatewayCells:
    """Build the Gateway API cells. Pure."""
    rules: dict[tuple[int, str], dict[str, list[tuple[tuple[object, ...], GatewayRule]]]] = (
        defaultdict(lambda: defaultdict(list))
    )
    backends: list[Backend] = []
    for route in model.routes:
        secured: dict[ObjectKey, Sequence[tuple[tuple[object, ...], GatewayRule]]] = {}
        for parent in route.parents:
            for attachment in parent.attachments:
                verdict = attachment.listener
                served_by = verdict.gateway.meta.key
                port = model.ports.get((served_by.ref, verdict.listener.port))
                if port is None or not verdict.serving:
                    continue
                entries = secured.get(served_by)
                if entries is None and route.compiled.route.meta.key.kind in STREAM_KINDS:
                    # a layer-4 route's backends get its bytes as they came: no BackendTLSPolicy
                    entries = secured[served_by] = route.compiled.entries
                    backends.extend(_backends(entries))
                elif entries is None:
                    # BackendTLSPolicy (GEP-1897): the TLS of the backends, with the client
                    # certificate of the Gateway that serves them (.backend_tls, rule 5)
                    refs = model.gateway_refs.get(served_by)
                    entries = model.backend_tls.secure(
                        route.compiled.entries, None if refs is None else refs.client_certificate
                    )
                    secured[served_by] = entries
                    backends.extend(_backends(entries))
                for host in attachment.hostnames:
                    rules[(port, verdict.host_key)][host].extend(entries)
    counts = attached_counts(model)
    tables: dict[int, dict[str, ListenerTable]] = defaultdict(dict)
    tls: dict[int, dict[str, Certificate]] = defaultdict(dict)
    client: dict[int, dict[str, ClientValidation]] = defaultdict(dict)
    health: list[ListenerHealth] = []
    for gateway in model.gateways:
        for verdict in model.listeners[gateway.meta.key]:
            listener = verdict.listener
            port = model.ports.get((gateway.meta.key.ref, listener.port))
            ready = verdict.serving and port is not None
            health.append(
                ListenerHealth(
                    gateway=gateway.meta.key.ref,
                    listener=verdict.qualified_name,
                    port=listener.port,
                    target_port=port or 0,
                    protocol=listener.protocol,
                    hostname=listener.hostname,
                    attached_routes=counts.get(id(verdict), 0),
                    ready=ready,
                    reason=listener_reason(verdict),
                )
            )
            if not ready or port is None:
                continue
            hosts = rules.get((port, verdict.host_key), {})
            tables[port][verdict.host_key] = ListenerTable(
                gateway=gateway.meta.key.ref,
                listener=verdict.qualified_name,
                port=listener.port,
                protocol=listener.protocol,
                hostname=verdict.host_key,
                hosts=pmap(
                    {
                        host: pvector(rule for _, rule in sorted(entries, key=lambda e: e[0]))
                        for host, entries in hosts.items()
                    }
                ),
            )
            if verdict.certificate is not None:
                tls[port][verdict.host_key] = verdict.certificate
            if verdict.client_validation is not None:
                client[port][verdict.host_key] = verdict.client_validation
    return GatewayCells(
        gateways=pmap({p: pmap(t) for p, t in tables.items()}),
        tls={p: dict(t) for p, t in tls.items()},
        client_certs=pmap({p: pmap(c) for p, c in client.items()}),
        listener_health=pvector(sorted(health, key=lambda h: (h.gateway, h.listener))),
        backends=tuple(backends),
    )
