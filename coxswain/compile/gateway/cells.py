"""The Gateway API snapshot cells, read from the ``GatewayModel``.

- ``gateways``: internal port → listener hostname → host → rules in precedence order; a
  layer-4 listener's (protocol TLS, TCP or UDP) hosts hold its routes' stream entries, the
  first of a host being the one its connections take (``l4route``);
- ``tls`` and ``client_certs``: internal port → listener hostname → certificate / validation;
- ``listener_health``: one entry per listener of every Gateway in scope.
Only serving listeners with an internal port get table entries; every listener gets health.

The cells are built from each route's share (``RoutePart``: per slot and host the entries it
adds there, its backends, the listeners it attaches to), and ``build_cells`` takes the cells of
an earlier call (``compile.memo`` keeps them per scope): while the analysis' passes before the
routes' are the same objects (its ports, listeners and Gateways' references, and the
BackendTLSPolicies in force are equal), a route verdict that is the same object as then has the
same share, so only the slots a changed, added or removed route touches are gathered again;
every other slot keeps its entries, and its listener table is that earlier table, not a copy
(a table is also kept when its listener and rule entries are the very same objects as then),
and a port's map of tables is kept while its tables are. Within a slot, only the hosts those
routes add to are gathered and sorted again: the table's other hosts keep their rule lists.
Listener health is kept per listener while its verdict and attached-route count are. When the
caller also says which route verdicts differ from those the earlier cells were built from
(``RouteDelta``, from ``compile.analysis_memo``), neither the routes nor the listeners are
walked: only those routes' shares, the slots they touch and the health of the listeners they
attach to are made again, in maps copied from the earlier ones (a host's shares in route order
are in key order, the order of the model's routes). The cells are the same with or without
earlier ones.
A Gateway's listeners are its own and those of the ListenerSets it takes (GEP-1713), all under
the Gateway's name; a ListenerSet's listener is named ``ns/listenerset/name`` there
(``ListenerVerdict.qualified_name``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
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
    from collections.abc import Collection, Sequence

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.gateway.attach import RouteVerdict
    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.keys import ObjectKey

__all__ = ["Fragment", "GatewayCells", "RouteDelta", "build_cells", "listener_reason"]

Entry = tuple[tuple[object, ...], GatewayRule]
"""A rule entry: its precedence key and the rule."""

Slot = tuple[int, str]
"""Where a listener's table sits in the ``gateways`` cell: internal port, listener hostname."""

Place = tuple[Slot, str]
"""A host of a listener's table: the listener's slot, and the host."""


@dataclass(frozen=True, slots=True)
class Fragment:
    """One listener's table and the inputs it was built from (``head``: the table's own fields;
    ``hosts``: host → its entries before sorting, a map ``build_cells`` never changes);
    ``edits``: the earlier table of the slot it was made from and the hosts set again or
    removed there (None: made afresh), so that the content hash redoes only those hosts
    (``snapshot_json.edited_table_text``)."""

    head: tuple[str, str, int, str, str]
    hosts: dict[str, list[Entry]]
    table: ListenerTable
    edits: tuple[ListenerTable, frozenset[str]] | None = None


@dataclass(frozen=True, slots=True)
class RoutePart:
    """One route's share of the cells: ``adds`` the entries it puts on each slot's hosts (by
    slot and host, in the order ``build_cells`` walks its parentRefs and attachments);
    ``backends`` the backends and mirror backends of those entries, once per Gateway serving
    it; ``listeners`` the ``id`` of the listener verdict of each of its attachments (serving or
    not: attached-route counts)."""

    route: RouteVerdict
    adds: dict[Place, list[Sequence[Entry]]]
    backends: tuple[Backend, ...]
    listeners: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayCells:
    """The Gateway API parts of a snapshot (the backends they use: ``parts``' ``backends``),
    and what an incremental call reads (``context``: the analysis' objects every route's share
    depends on; ``parts``: ``id`` of a route verdict → its share, in route order; ``rules``:
    slot → host → entries; ``members``: slot → host → the ``id`` of the routes adding there;
    ``counts``: attached routes by ``id`` of listener verdict; ``health_of``: ``id`` of
    listener verdict → the verdict, its count and port, and its health entry;
    ``health_order``: the health entries unsorted; ``health_at``: ``id`` of listener verdict →
    where its entry sits in ``health_order`` and in ``listener_health``; ``ports``: internal
    port → its listeners' fragments by hostname and the ``gateways`` entry made of their
    tables; ``routes``: the model's route verdicts the cells were built from; ``renewed``: the
    slots whose fragment is not the earlier cells' one; ``change``: the shares gone and the
    shares made by a call patched for a ``RouteDelta``, else None)."""

    gateways: PMap[int, PMap[str, ListenerTable]]
    tls: dict[int, dict[str, Certificate]]
    client_certs: PMap[int, PMap[str, ClientValidation]]
    listener_health: PVector[ListenerHealth]
    fragments: dict[Slot, Fragment]
    ports: dict[int, tuple[dict[str, Fragment], PMap[str, ListenerTable]]]
    context: tuple[object, ...]
    parts: dict[int, RoutePart]
    rules: dict[Slot, dict[str, list[Entry]]]
    members: dict[Slot, dict[str, list[int]]]
    counts: dict[int, int]
    health_of: dict[int, tuple[ListenerVerdict, int, int | None, ListenerHealth]]
    health_order: tuple[ListenerHealth, ...]
    health_at: dict[int, tuple[int, int]]
    routes: tuple[RouteVerdict, ...]
    renewed: tuple[Slot, ...]
    change: tuple[tuple[RoutePart, ...], tuple[RoutePart, ...]] | None


@dataclass(frozen=True, slots=True)
class RouteDelta:
    """How a model's route verdicts differ from those of an earlier model of the same passes
    before the routes' (``analysis_memo``): ``before`` the earlier model's ``routes``, ``gone``
    its verdicts the new model has not, ``fresh`` the new model's verdicts the earlier had
    not; every other verdict is in both."""

    before: tuple[RouteVerdict, ...]
    gone: tuple[RouteVerdict, ...]
    fresh: tuple[RouteVerdict, ...]


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


def build_cells(
    model: GatewayModel, earlier: GatewayCells | None = None, delta: RouteDelta | None = None
) -> GatewayCells:
    """Build the Gateway API cells; ``earlier``: the cells of an earlier call, whose shares,
    slots, tables and health entries are reused where their inputs are the same (the module
    docstring); ``delta``: how ``model``'s routes differ from those ``earlier`` was built from,
    when the caller knows (``analysis_memo``): then only the shares, slots and listeners those
    routes touch are visited, not every route and listener. Pure."""
    tls_in_force = model.backend_tls.in_force
    services = model.backend_tls.services
    context: tuple[object, ...] = (
        model.ports,
        model.listeners,
        model.gateway_refs,
        tls_in_force,
        None if services is None else services.state.services,
    )
    same = earlier is not None and _same_context(earlier.context, context)
    if same and earlier is not None:
        if delta is None and model.routes is earlier.routes:
            delta = RouteDelta(model.routes, (), ())
        if delta is not None and delta.before is earlier.routes:
            patched = _patched_cells(model, earlier, delta)
            if patched is not None:
                return patched
    known: dict[int, RoutePart] = {} if not same or earlier is None else earlier.parts
    parts: dict[int, RoutePart] = {}
    fresh: list[RoutePart] = []
    for route in model.routes:
        part = known.get(id(route))
        if part is None or part.route is not route:
            part = _route_part(route, model)
            fresh.append(part)
        parts[id(route)] = part
    gone = [part for key, part in known.items() if parts.get(key) is not part]
    rules = {} if not known or earlier is None else dict(earlier.rules)
    members = {} if not known or earlier is None else dict(earlier.members)
    counts = {} if not known or earlier is None else dict(earlier.counts)
    gathered = _gather(parts, fresh, gone, rules, members)
    _count(counts, gone, fresh)
    tables: dict[int, dict[str, Fragment]] = defaultdict(dict)
    tls: dict[int, dict[str, Certificate]] = defaultdict(dict)
    client: dict[int, dict[str, ClientValidation]] = defaultdict(dict)
    health: list[ListenerHealth] = []
    health_of: dict[int, tuple[ListenerVerdict, int, int | None, ListenerHealth]] = {}
    known_health = {} if earlier is None else earlier.health_of
    fragments: dict[Slot, Fragment] = {}
    positions: dict[int, int] = {}
    for gateway in model.gateways:
        for verdict in model.listeners[gateway.meta.key]:
            listener = verdict.listener
            port = model.ports.get((gateway.meta.key.ref, listener.port))
            ready = verdict.serving and port is not None
            count = counts.get(id(verdict), 0)
            entry = known_health.get(id(verdict))
            if entry is None or entry[0] is not verdict or entry[1:3] != (count, port):
                entry = (verdict, count, port, _health(gateway.meta.key.ref, verdict, port, count))
            health_of[id(verdict)] = entry
            positions[id(verdict)] = len(health)
            health.append(entry[3])
            if not ready or port is None:
                continue
            slot = (port, verdict.host_key)
            tables[port][verdict.host_key] = fragments[slot] = _fragment(
                (gateway.meta.key.ref, verdict.qualified_name, listener.port, listener.protocol),
                slot,
                rules.get(slot, {}),
                None if earlier is None else earlier.fragments.get(slot),
                gathered.get(slot, {}).keys() if known else None,
            )
            if verdict.certificate is not None:
                tls[port][verdict.host_key] = verdict.certificate
            if verdict.client_validation is not None:
                client[port][verdict.host_key] = verdict.client_validation
    health_order = tuple(health)
    ranks = sorted(range(len(health)), key=lambda i: (health[i].gateway, health[i].listener))
    if earlier is not None and _same_items(earlier.health_order, health_order):
        listener_health = earlier.listener_health
    else:
        listener_health = pvector(health[i] for i in ranks)
    at = [0] * len(ranks)
    for rank, i in enumerate(ranks):
        at[i] = rank
    ports = {
        port: _port_tables(by_host, None if earlier is None else earlier.ports.get(port))
        for port, by_host in tables.items()
    }
    earlier_fragments = {} if earlier is None else earlier.fragments
    return GatewayCells(
        gateways=_gateways(ports, earlier),
        tls={p: dict(t) for p, t in tls.items()},
        client_certs=pmap({p: pmap(c) for p, c in client.items()}),
        listener_health=listener_health,
        fragments=fragments,
        ports=ports,
        context=context,
        parts=parts,
        rules=rules,
        members=members,
        counts=counts,
        health_of=health_of,
        health_order=health_order,
        health_at={key: (i, at[i]) for key, i in positions.items()},
        routes=model.routes,
        renewed=tuple(s for s, f in fragments.items() if earlier_fragments.get(s) is not f),
        change=None,
    )


def _patched_cells(
    model: GatewayModel, earlier: GatewayCells, delta: RouteDelta
) -> GatewayCells | None:
    """``build_cells`` of ``model`` from ``earlier``, built against the same passes before the
    routes' from the routes ``delta.before``: the shares of ``delta``'s routes are dropped and
    made, and only their hosts, the slots of those hosts and the health of the listeners they
    attach to are made again (everything else is ``earlier``'s, the same objects). None when
    ``delta`` does not match ``earlier``'s shares."""
    parts = dict(earlier.parts)
    gone: list[RoutePart] = []
    for verdict in delta.gone:
        part = parts.pop(id(verdict), None)
        if part is None or part.route is not verdict:
            return None
        gone.append(part)
    fresh = [_route_part(verdict, model) for verdict in delta.fresh]
    for part in fresh:
        parts[id(part.route)] = part
    rules, members, counts = dict(earlier.rules), dict(earlier.members), dict(earlier.counts)
    gathered = _gather(parts, fresh, gone, rules, members)
    _count(counts, gone, fresh)
    fragments, ports = dict(earlier.fragments), dict(earlier.ports)
    renewed: list[Slot] = []
    for slot, hosts in gathered.items():
        was = earlier.fragments.get(slot)
        if was is None:  # no listener serves the slot: its entries are in no table
            continue
        head = was.head
        fragment = _fragment(head[:4], slot, rules.get(slot, {}), was, hosts.keys())
        if fragment is not was:
            fragments[slot] = fragment
            renewed.append(slot)
    gateways = earlier.gateways
    if renewed:
        evolver = gateways.evolver()
        for port in {port for port, _ in renewed}:
            by_host = {hostname: fragments[(port, hostname)] for hostname in ports[port][0]}
            ports[port] = _port_tables(by_host, earlier.ports[port])
            if ports[port][1] is not earlier.ports[port][1]:
                evolver[port] = ports[port][1]
        gateways = evolver.persistent()
    health_of, health_order = earlier.health_of, earlier.health_order
    listener_health = earlier.listener_health
    recounted = {key for part in (*gone, *fresh) for key in part.listeners}
    recount = [
        key for key in recounted if key in health_of and health_of[key][1] != counts.get(key, 0)
    ]
    if recount:
        health_of, order = dict(health_of), list(health_order)
        evolver_health = listener_health.evolver()
        for key in recount:
            listener, _, bound, was_health = health_of[key]
            count = counts.get(key, 0)
            entry = (listener, count, bound, _health(was_health.gateway, listener, bound, count))
            health_of[key] = entry
            i, rank = earlier.health_at[key]
            order[i] = evolver_health[rank] = entry[3]
        health_order, listener_health = tuple(order), evolver_health.persistent()
    return replace(
        earlier,
        gateways=gateways,
        listener_health=listener_health,
        fragments=fragments,
        ports=ports,
        parts=parts,
        rules=rules,
        members=members,
        counts=counts,
        health_of=health_of,
        health_order=health_order,
        routes=model.routes,
        renewed=tuple(renewed),
        change=(tuple(gone), tuple(fresh)),
    )


def _count(counts: dict[int, int], gone: list[RoutePart], fresh: list[RoutePart]) -> None:
    """``counts`` (attached routes by ``id`` of listener verdict) without ``gone``'s
    attachments and with ``fresh``'s."""
    for part in gone:
        for attached_to in part.listeners:
            counts[attached_to] -= 1
    for part in fresh:
        for attached_to in part.listeners:
            counts[attached_to] = counts.get(attached_to, 0) + 1


def _same_context(earlier: tuple[object, ...], now: tuple[object, ...]) -> bool:
    """Whether every route's share built against ``earlier`` holds against ``now``: the same
    ports, listeners, Gateways' references and Services, and equal policies in force."""
    ports, listeners, refs, in_force, services = now
    was_ports, was_listeners, was_refs, was_in_force, was_services = earlier
    return (
        ports is was_ports
        and listeners is was_listeners
        and refs is was_refs
        and (in_force is was_in_force or in_force == was_in_force)
        and (not in_force or services is was_services)
    )


def _route_part(route: RouteVerdict, model: GatewayModel) -> RoutePart:
    """One route's share of the cells (``RoutePart``)."""
    adds: dict[Place, list[Sequence[Entry]]] = {}
    backends: list[Backend] = []
    listeners: list[int] = []
    secured: dict[ObjectKey, Sequence[Entry]] = {}
    for parent in route.parents:
        for attachment in parent.attachments:
            verdict = attachment.listener
            listeners.append(id(verdict))
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
                adds.setdefault(((port, verdict.host_key), host), []).append(entries)
    return RoutePart(route, adds, tuple(backends), tuple(listeners))


def _gather(
    parts: dict[int, RoutePart],
    fresh: list[RoutePart],
    gone: list[RoutePart],
    rules: dict[Slot, dict[str, list[Entry]]],
    members: dict[Slot, dict[str, list[int]]],
) -> dict[Slot, dict[str, set[int]]]:
    """Gather again, in ``rules`` and ``members``, the hosts the ``fresh`` and ``gone`` shares
    add to: each from the shares adding to it now, in route order; those hosts by slot. A
    slot changed gets new maps (those of the earlier cells are left as they were) in which its
    other hosts keep their very lists: a one-route change costs its hosts, not its
    listener's table."""
    renewed = {id(part.route) for part in fresh}
    adding: dict[Slot, dict[str, set[int]]] = {}
    for part in gone:
        for slot, host in part.adds:
            adding.setdefault(slot, {}).setdefault(host, set())
    for part in fresh:
        for slot, host in part.adds:
            adding.setdefault(slot, {}).setdefault(host, set()).add(id(part.route))
    for slot, by_host in adding.items():
        hosts, adders = dict(rules.get(slot, {})), dict(members.get(slot, {}))
        for host, added in by_host.items():
            # an unchanged share still adds where it added; a renewed one where it says now
            kept = [key for key in adders.get(host, ()) if key in parts and key not in renewed]
            now = sorted({*kept, *added}, key=lambda key: _route_order(parts[key]))
            if not now:
                adders.pop(host, None)
                hosts.pop(host, None)
                continue
            entries: list[Entry] = []
            for key in now:
                for found in parts[key].adds[(slot, host)]:
                    entries.extend(found)
            adders[host], hosts[host] = now, entries
        if hosts:
            members[slot], rules[slot] = adders, hosts
        else:
            members.pop(slot, None)
            rules.pop(slot, None)
    return adding


def _route_order(part: RoutePart) -> tuple[str, str, str]:
    """A share's place in route order: the model's routes come in key order
    (``gateway.model.candidate_routes``), and so do a host's shares, whichever were reused."""
    key = part.route.compiled.route.meta.key
    return (key.kind, key.namespace, key.name)


def _health(gateway: str, verdict: ListenerVerdict, port: int | None, count: int) -> ListenerHealth:
    listener = verdict.listener
    return ListenerHealth(
        gateway=gateway,
        listener=verdict.qualified_name,
        port=listener.port,
        target_port=port or 0,
        protocol=listener.protocol,
        hostname=listener.hostname,
        attached_routes=count,
        ready=verdict.serving and port is not None,
        reason=listener_reason(verdict),
    )


def _port_tables(
    by_host: dict[str, Fragment],
    earlier: tuple[dict[str, Fragment], PMap[str, ListenerTable]] | None,
) -> tuple[dict[str, Fragment], PMap[str, ListenerTable]]:
    """A port's listener fragments by hostname and its ``gateways`` entry, ``earlier``'s entry
    when its fragments' tables are the very same objects (the entry's tables are theirs)."""
    if (
        earlier is not None
        and by_host.keys() == earlier[0].keys()
        and all(f.table is earlier[0][h].table for h, f in by_host.items())
    ):
        return by_host, earlier[1]
    return by_host, pmap({host: fragment.table for host, fragment in by_host.items()})


def _gateways(
    ports: dict[int, tuple[dict[str, Fragment], PMap[str, ListenerTable]]],
    earlier: GatewayCells | None,
) -> PMap[int, PMap[str, ListenerTable]]:
    """The ``gateways`` cell: ``earlier``'s with only the ports whose entry is not the very same
    object set again (and the ports gone removed); equal to one made afresh."""
    if earlier is None:
        return pmap({port: entry for port, (_, entry) in ports.items()})
    evolver = earlier.gateways.evolver()
    for port, (_, entry) in ports.items():
        was = earlier.ports.get(port)
        if was is None or was[1] is not entry:
            evolver[port] = entry
    for port in earlier.ports.keys() - ports.keys():
        evolver.remove(port)
    return evolver.persistent()


def _same_items(first: Sequence[object], second: Sequence[object]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


def _fragment(
    listener: tuple[str, str, int, str],
    slot: Slot,
    hosts: dict[str, list[Entry]],
    earlier: Fragment | None,
    gathered: Collection[str] | None,
) -> Fragment:
    """The table of the listener at ``slot``: ``earlier``'s when built from the same inputs
    (``hosts`` holding the very same entries), else ``earlier``'s with only the hosts whose
    entries are not the very same ones sorted again (the others keep their rule lists: the
    proxy and the content hash find them unchanged by identity). ``gathered``: the only hosts
    whose entries may differ from ``earlier``'s (None: any may)."""
    head = (*listener, slot[1])
    gateway, name, port, protocol = listener
    if earlier is None or earlier.head != head:
        ordered = pmap({host: _ordered(entries) for host, entries in hosts.items()})
        table = ListenerTable(
            gateway=gateway, listener=name, port=port, protocol=protocol, hostname=slot[1],
            hosts=ordered,
        )  # fmt: skip
        return Fragment(head, hosts, table)
    if earlier.hosts is hosts:
        return earlier
    was = earlier.hosts
    evolver = earlier.table.hosts.evolver()
    edited: set[str] = set()
    for host in (hosts.keys() | was.keys()) if gathered is None else gathered:
        entries = hosts.get(host)
        if entries is None:
            if host in was:
                evolver.remove(host)
                edited.add(host)
        elif not _same_entries(was.get(host), entries):
            evolver[host] = _ordered(entries)
            edited.add(host)
    if not edited:
        return Fragment(head, hosts, earlier.table, earlier.edits)
    table = replace(earlier.table, hosts=evolver.persistent())
    return Fragment(head, hosts, table, (earlier.table, frozenset(edited)))


def _ordered(entries: list[Entry]) -> PVector[GatewayRule]:
    """A host's rules in precedence order."""
    return pvector(rule for _, rule in sorted(entries, key=lambda e: e[0]))


def _same_entries(earlier: list[Entry] | None, entries: list[Entry]) -> bool:
    """Whether ``entries`` are ``earlier``'s, the very same objects in the same order."""
    return earlier is entries or (
        earlier is not None
        and len(earlier) == len(entries)
        and all(a is b for a, b in zip(earlier, entries, strict=True))
    )
