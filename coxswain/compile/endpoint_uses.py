"""A scope's endpoints table from groups of backends, kept up to date as groups come and go.

Why: docs/architecture.md, "The pure core" (``compile.memo``). A scope's backends come in
groups that stay the same objects while their source does: the Ingress part's
(``api.IngressPart``) and each route's share of the Gateway API cells
(``gateway.cells.RoutePart``). While the Services and EndpointSlices are the same tables, a key's
entry is the same whichever backend asks for it, so the table of an earlier call needs only the
keys of the groups added (computed) and of the groups gone (dropped once no group uses them).
The table is the one ``backends.endpoints_table`` gives for every group's backends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.backends import endpoints_table

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from pyrsistent.typing import PMap, PMapEvolver, PVector

    from coxswain.compile.backends import EndpointsCache, ServiceIndex
    from coxswain.compile.snapshot import Backend, Endpoint

__all__ = ["EndpointUses", "endpoint_uses"]

_Group = tuple["Sequence[Backend]", tuple["Backend", ...]]
"""A group of backends and its valid ones, the first of each endpoints key."""


@dataclass(frozen=True, slots=True)
class EndpointUses:
    """An endpoints table, the Service tables it was read from (``inputs``), the groups it was
    built from (``id`` → the group, which keeps the ``id`` from being reused, and its valid
    backends, one per key) and how many groups use each key."""

    inputs: tuple[object, ...]
    groups: dict[int, _Group]
    uses: dict[str, int]
    table: PMap[str, PVector[Endpoint]]


def endpoint_uses(
    index: ServiceIndex,
    groups: Iterable[Sequence[Backend]],
    cache: EndpointsCache | None = None,
    earlier: EndpointUses | None = None,
    base: PMap[str, PVector[Endpoint]] | None = None,
    change: tuple[Iterable[Sequence[Backend]], Iterable[Sequence[Backend]]] | None = None,
) -> EndpointUses:
    """The endpoints of every valid backend of ``groups``, as ``endpoints_table``; ``earlier``
    is patched when it was read from the same Service tables, else ``base`` (an earlier table)
    lends its structure. ``change``: the groups gone from ``earlier``'s and the groups added,
    when the caller knows (``groups`` is then not read: a one-route change visits its own
    groups, not every route's). Pure."""
    state = index.state
    inputs = (state.services, state.endpoint_slices, state.slices_by_service)
    if earlier is None or not all(a is b for a, b in zip(inputs, earlier.inputs, strict=True)):
        known: dict[int, _Group] = {}
        for group in groups:
            if id(group) not in known:
                known[id(group)] = (group, _distinct(group))
        uses: dict[str, int] = {}
        for _, valid in known.values():
            for backend in valid:
                key = backend.endpoints_key
                uses[key] = uses.get(key, 0) + 1
        every = (backend for _, valid in known.values() for backend in valid)
        return EndpointUses(inputs, known, uses, endpoints_table(index, every, cache, base))
    table = earlier.table.evolver()
    uses = dict(earlier.uses)
    if change is not None:
        gone, added = change
        now = dict(earlier.groups)
        for group in added:
            if group and id(group) not in now:  # the empty group may be shared: it adds nothing
                now[id(group)] = (group, _distinct(group))
                _use(now[id(group)][1], index, cache, uses, table)
        for group in gone:
            found = now.get(id(group))
            if group and found is not None and found[0] is group:
                del now[id(group)]
                _unuse(found[1], uses, table)
        return EndpointUses(inputs, now, uses, table.persistent())
    now = {}
    for group in groups:
        if id(group) in now:
            continue
        found = earlier.groups.get(id(group))
        if found is None or found[0] is not group:
            found = (group, _distinct(group))
            _use(found[1], index, cache, uses, table)
        now[id(group)] = found
    for number, found in earlier.groups.items():
        if now.get(number) is not found:
            _unuse(found[1], uses, table)
    return EndpointUses(inputs, now, uses, table.persistent())


def _use(
    valid: tuple[Backend, ...],
    index: ServiceIndex,
    cache: EndpointsCache | None,
    uses: dict[str, int],
    table: PMapEvolver[str, PVector[Endpoint]],
) -> None:
    """One more group using ``valid``'s keys; a key's entry made when it is the first."""
    for backend in valid:
        key = backend.endpoints_key
        count = uses.get(key, 0)
        uses[key] = count + 1
        if not count:
            table[key] = endpoints_table(index, (backend,), cache)[key]


def _unuse(
    valid: tuple[Backend, ...], uses: dict[str, int], table: PMapEvolver[str, PVector[Endpoint]]
) -> None:
    """One group less using ``valid``'s keys; a key's entry dropped when none uses it."""
    for backend in valid:
        key = backend.endpoints_key
        uses[key] -= 1
        if not uses[key]:
            del uses[key]
            del table[key]


def _distinct(group: Sequence[Backend]) -> tuple[Backend, ...]:
    """The valid backends of ``group``, the first of each endpoints key."""
    first: dict[str, Backend] = {}
    for backend in group:
        if backend.valid:
            first.setdefault(backend.endpoints_key, backend)
    return tuple(first.values())
