"""The Gateway API snapshot cells, read from the ``GatewayModel``.

- ``gateways``: internal port → listener hostname → host → rules in precedence order; a
  layer-4 listener's (protocol TLS, TCP or UDP) hosts hold its routes' stream entries, the
  first of a host being the one its connections take (``l4route``);
- ``tls`` and ``client_certs``: internal port → listener hostname → certificate / validation;
- ``listener_health``: one entry per listener of every Gateway in scope.
Only serving listeners with an internal port get table entries; every listener gets health.

Each listener's table is a fragment: ``build_cells`` takes the cells of an earlier call
(``compile.memo`` keeps them per scope), and a table whose inputs are the very same objects as
then (the listener's fields, and per host the same rule entries in the same order: a reused
compiled route hands out the same entries) is that earlier table, not a copy; the backends of
a route's entries are likewise collected once per entries object. The cells are the same with
or without earlier ones.
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

__all__ = ["Fragment", "GatewayCells", "build_cells", "listener_reason"]

Entry = tuple[tuple[object, ...], GatewayRule]
"""A rule entry: its precedence key and the rule."""

Slot = tuple[int, str]
"""Where a listener's table sits in the ``gateways`` cell: internal port, listener hostname."""


@dataclass(frozen=True, slots=True)
class Fragment:
    """One listener's table and the inputs it was built from (``head``: the table's own fields;
    ``hosts``: host → its entries before sorting)."""

    head: tuple[str, str, int, str, str]
    hosts: dict[str, list[Entry]]
    table: ListenerTable

    def built_from(
        self, head: tuple[str, str, int, str, str], hosts: dict[str, list[Entry]]
    ) -> bool:
        """Whether ``head`` and ``hosts`` are this fragment's inputs (entries by identity)."""
        if head != self.head or hosts.keys() != self.hosts.keys():
            return False
        for host, entries in hosts.items():
            earlier = self.hosts[host]
            if len(entries) != len(earlier) or any(
                a is not b for a, b in zip(entries, earlier, strict=True)
            ):
                return False
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayCells:
    """The Gateway API parts of a snapshot, and the backends they use."""

    gateways: PMap[int, PMap[str, ListenerTable]]
    tls: dict[int, dict[str, Certificate]]
    client_certs: PMap[int, PMap[str, ClientValidation]]
    listener_health: PVector[ListenerHealth]
    backends: tuple[Backend, ...]
    fragments: dict[Slot, Fragment]
    route_backends: dict[int, tuple[Sequence[Entry], list[Backend]]]
    """``id`` of a route's entries → the entries (which keep the ``id`` from being reused)
    and their backends."""


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


def build_cells(model: GatewayModel, earlier: GatewayCells | None = None) -> GatewayCells:
    """Build the Gateway API cells; ``earlier``: the cells of an earlier call, whose fragments
    are reused where their inputs are the same (the module docstring). Pure."""
    rules: dict[Slot, dict[str, list[Entry]]] = defaultdict(lambda: defaultdict(list))
    backends: list[Backend] = []
    route_backends: dict[int, tuple[Sequence[Entry], list[Backend]]] = {}
    known = {} if earlier is None else earlier.route_backends

    def backends_of(entries: Sequence[Entry]) -> list[Backend]:
        found = route_backends.get(id(entries)) or known.get(id(entries))
        if found is None or found[0] is not entries:
            found = (entries, _backends(entries))
        route_backends[id(entries)] = found
        return found[1]

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
                    backends.extend(backends_of(entries))
                elif entries is None:
                    # BackendTLSPolicy (GEP-1897): the TLS of the backends, with the client
                    # certificate of the Gateway that serves them (.backend_tls, rule 5)
                    refs = model.gateway_refs.get(served_by)
                    entries = model.backend_tls.secure(
                        route.compiled.entries, None if refs is None else refs.client_certificate
                    )
                    secured[served_by] = entries
                    backends.extend(backends_of(entries))
                for host in attachment.hostnames:
                    rules[(port, verdict.host_key)][host].extend(entries)
    counts = attached_counts(model)
    tables: dict[int, dict[str, Fragment]] = defaultdict(dict)
    tls: dict[int, dict[str, Certificate]] = defaultdict(dict)
    client: dict[int, dict[str, ClientValidation]] = defaultdict(dict)
    health: list[ListenerHealth] = []
    fragments: dict[Slot, Fragment] = {}
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
            slot = (port, verdict.host_key)
            tables[port][verdict.host_key] = fragments[slot] = _fragment(
                (gateway.meta.key.ref, verdict.qualified_name, listener.port, listener.protocol),
                slot,
                rules.get(slot, {}),
                None if earlier is None else earlier.fragments.get(slot),
            )
            if verdict.certificate is not None:
                tls[port][verdict.host_key] = verdict.certificate
            if verdict.client_validation is not None:
                client[port][verdict.host_key] = verdict.client_validation
    return GatewayCells(
        gateways=pmap({p: pmap({h: f.table for h, f in t.items()}) for p, t in tables.items()}),
        tls={p: dict(t) for p, t in tls.items()},
        client_certs=pmap({p: pmap(c) for p, c in client.items()}),
        listener_health=pvector(sorted(health, key=lambda h: (h.gateway, h.listener))),
        backends=tuple(backends),
        fragments=fragments,
        route_backends=route_backends,
    )


def _fragment(
    listener: tuple[str, str, int, str],
    slot: Slot,
    hosts: dict[str, list[Entry]],
    earlier: Fragment | None,
) -> Fragment:
    """The table of the listener at ``slot``, ``earlier``'s when built from the same inputs."""
    head = (*listener, slot[1])
    if earlier is not None and earlier.built_from(head, hosts):
        return earlier
    gateway, name, port, protocol = listener
    table = ListenerTable(
        gateway=gateway,
        listener=name,
        port=port,
        protocol=protocol,
        hostname=slot[1],
        hosts=pmap(
            {
                host: pvector(rule for _, rule in sorted(entries, key=lambda e: e[0]))
                for host, entries in hosts.items()
            }
        ),
    )
    return Fragment(head, dict(hosts), table)
