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

    from pyrsistent.typing import PMap, PVector

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
) -> EndpointUses:
    """The endpoints of every valid backend of ``groups``, as ``endpoints_table``; ``earlier``
    is patched when it was read from the same Service tables, else ``base`` (an earlier table)
    lends its structure. Pure."""
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
    now: dict[int, _Group] = {}
    for group in groups:
        if id(group) in now:
            continue
        found = earlier.groups.get(id(group))
        if found is None or found[0] is not group:
            found = (group, _distinct(group))
            for backend in found[1]:
                key = backend.endpoints_key
                count = uses.get(key, 0)
                uses[key] = count + 1
                if not count:
                    table[key] = endpoints_table(index, (backend,), cache)[key]
        now[id(group)] = found
    for number, found in earlier.groups.items():
        if now.get(number) is not found:
            for backend in found[1]:
                key = backend.endpoints_key
                uses[key] -= 1
                if not uses[key]:
                    del uses[key]
                    del table[key]
    return EndpointUses(inputs, now, uses, table.persistent())


def _distinct(group: Sequence[Backend]) -> tuple[Backend, ...]:
    """The valid backends of ``group``, the first of each endpoints key."""
    first: dict[str, Backend] = {}
    for backend in group:
        if backend.valid:
            first.setdefault(backend.endpoints_key, backend)
    return tuple(first.values())
