"""What changed between two cluster states, and whom a change concerns: the questions
``compile.memo`` asks to decide what to reuse (docs/architecture.md, "Rules of the core":
persistent states, so an unchanged object is the very same object). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coxswain.compile.model.gateway_objects import GATEWAY_GROUP, CommonRoute
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.objects import EndpointSlice
from coxswain.compile.model.state import TABLE_NAMES, TABLES

if TYPE_CHECKING:
    from collections.abc import Iterator

    from coxswain.compile.model.state import ClusterState

__all__ = ["both", "changes", "lookup", "named_gateways", "named_parents", "slice_services"]


def changes(old: ClusterState, new: ClusterState) -> frozenset[ObjectKey]:
    """The keys whose object differs (by identity) between two states' tables."""
    changed: set[ObjectKey] = set()
    for name in TABLE_NAMES:
        before, after = getattr(old, name), getattr(new, name)
        if before is after:
            continue
        changed.update(k for k, v in after.items() if before.get(k) is not v)
        changed.update(k for k in before if k not in after)
    return frozenset(changed)


def lookup(state: ClusterState, key: ObjectKey) -> object:
    """The object of ``key`` in ``state``, or None."""
    table = getattr(state, TABLES.get(key.kind, ""), None)
    return None if table is None else table.get(key)


def both(key: ObjectKey, previous: ClusterState, state: ClusterState) -> Iterator[object]:
    """The object before and after the change, those that exist."""
    for holder in (previous, state):
        if (found := lookup(holder, key)) is not None:
            yield found


def slice_services(
    key: ObjectKey, previous: ClusterState, state: ClusterState
) -> Iterator[tuple[str, str]]:
    """The Services (namespace, name) an EndpointSlice belonged to before or belongs to after."""
    for found in both(key, previous, state):
        if isinstance(found, EndpointSlice) and found.service_name:
            yield (key.namespace, found.service_name)


def named_parents(
    previous: ClusterState, state: ClusterState, key: ObjectKey
) -> Iterator[tuple[str, str]]:
    """The parents (namespace, name) the parentRefs of the route ``key`` named before the change
    or name after it."""
    for route in both(key, previous, state):
        if isinstance(route, CommonRoute):
            namespace = route.meta.key.namespace
            for ref in route.parent_refs:
                yield (ref.namespace or namespace, ref.name)


def named_gateways(route: CommonRoute) -> Iterator[ObjectKey]:
    """The Gateways the parentRefs of ``route`` name."""
    namespace = route.meta.key.namespace
    for ref in route.parent_refs:
        if (ref.group, ref.kind) == (GATEWAY_GROUP, "Gateway"):
            yield ObjectKey("Gateway", ref.namespace or namespace, ref.name)
