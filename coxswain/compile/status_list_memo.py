"""The last status list, patched where its inputs changed (``compile.memo``'s ``status``).

Why: docs/architecture.md, "The pure core" (``compile.memo``). A status call walks every object
(its verdict, its attached-route counts, its programmed ports) even when one route changed.
The list is remembered, offline and online apart, with what it was made from; when the passes
before the routes' are the same objects (``gateway.model.ParentVerdicts``: a route-only change
keeps them, ``analysis_memo``) and the config is equal, only what can differ is made again:

- the routes whose verdicts are not the same objects, found between the common head and tail
  of the two route lists (a patched analysis keeps every other verdict);
- the Gateways and ListenerSets reading a listener whose attached-route count moved (the
  counts are patched from those routes' attachments before and after) or whose Gateway's
  programmed ports changed (``(ns/name, port)`` pairs that came or went);
- the BackendTLSPolicies and Ingresses whose statuses differ, when their inputs are not the
  same objects.

GatewayClasses read the passes kept and the config only. Anything else runs the whole status
(``api.status``, with ``status_memo`` per object), so the list is the one a call from scratch
gives, position for position; keys are unique in a list (checked when it is made whole), so each
key names one position.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, fields
from itertools import chain, repeat
from operator import lt
from typing import TYPE_CHECKING, Final

from pyrsistent import pvector

from coxswain.compile.api import status
from coxswain.compile.gateway.cells import attached_counts
from coxswain.compile.gateway.model import ParentVerdicts
from coxswain.compile.gateway.status import (
    gateway_status,
    listener_set_status,
    policy_status,
    route_status,
)
from coxswain.compile.ingress.status import ingress_statuses
from coxswain.compile.model.gateway_objects import Gateway
from coxswain.compile.status import STATUS_ORDER
from coxswain.compile.status_memo import StatusMemory

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from pyrsistent.typing import PVector

    from coxswain.compile.config import CompileConfig
    from coxswain.compile.gateway.attach import RouteVerdict
    from coxswain.compile.gateway.listenersets import ListenerSetVerdict
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.status import ObjectStatus

__all__ = ["StatusListMemory"]

_FRAME: Final = tuple(f.name for f in fields(ParentVerdicts))

_Key = tuple[str, str, str]
"""A status' (kind, namespace, name): ``STATUS_ORDER``."""


@dataclass(slots=True, kw_only=True)
class _Listed:
    """One status list and what it was made from; ``keys`` are its statuses', in order;
    ``counts`` the attached routes per listener (``gateway.cells.attached_counts``); ``owners``
    the Gateways and ListenerSets reading each listener's count, by its verdict's ``id``;
    ``ported`` those reading each Gateway's (``ns/name``) programmed ports; ``parents`` the
    Gateway or ListenerSet verdict of each of those."""

    config: CompileConfig
    programmed: frozenset[tuple[str, int]] | None
    model: GatewayModel
    ingress_inputs: tuple[object, object]
    ingresses: list[ObjectStatus]
    policies: list[ObjectStatus]
    statuses: PVector[ObjectStatus]
    keys: list[_Key]
    counts: dict[int, int]
    owners: dict[int, list[_Key]]
    ported: dict[str, list[_Key]]
    parents: dict[_Key, Gateway | ListenerSetVerdict]


class StatusListMemory:
    """The status lists of the last offline and online calls of one ``CompileMemo``."""

    def __init__(self) -> None:
        self._objects = StatusMemory()  # per object, for the calls made whole
        self._patched_made = 0  # statuses made by patches, since creation
        self._lists: dict[bool, _Listed] = {}  # by whether programmed was given

    @property
    def made_again(self) -> int:
        """Statuses made rather than reused, since creation."""
        return self._objects.made_again + self._patched_made

    def status(
        self,
        state: ClusterState,
        config: CompileConfig,
        programmed: frozenset[tuple[str, int]] | None,
        model: GatewayModel,
    ) -> PVector[ObjectStatus]:
        """``api.status(state, config, programmed, model)``."""
        online = programmed is not None
        listed = self._lists.get(online)
        if (
            listed is not None
            and (listed.config is config or listed.config == config)
            and all(getattr(model, f) is getattr(listed.model, f) for f in _FRAME)
            and self._patch(listed, state, config, programmed, model)
        ):
            return listed.statuses
        self._objects.begin()
        counts = dict(attached_counts(model))
        statuses = status(state, config, programmed, model, self._objects, counts)
        keys: list[_Key] = [STATUS_ORDER(s) for s in statuses]
        if all(map(lt, keys, keys[1:])):
            self._lists[online] = _listed(state, config, programmed, model, statuses, keys, counts)
        else:  # a key twice: positions cannot be found by key
            self._lists.pop(online, None)
        return statuses

    def _patch(
        self,
        listed: _Listed,
        state: ClusterState,
        config: CompileConfig,
        programmed: frozenset[tuple[str, int]] | None,
        model: GatewayModel,
    ) -> bool:
        """``listed`` carried to ``model`` and ``programmed``, whose passes before the routes'
        are those ``listed`` was made from; False, with ``listed`` untouched, when new
        statuses of one kind name a key twice."""
        routes = _changed_routes(listed.model.routes, model.routes)
        ingress_inputs = (state.ingresses, state.ingress_classes)
        ingresses = listed.ingresses
        if any(a is not b for a, b in zip(ingress_inputs, listed.ingress_inputs, strict=True)):
            ingresses = ingress_statuses(state, config)
        policies = listed.policies
        if model.backend_tls is not listed.model.backend_tls:
            policies = [policy_status(p, config) for p in model.backend_tls.verdicts]
        if routes is None or not (_unique(ingresses) and _unique(policies)):
            return False
        was, now = routes
        changed: dict[_Key, ObjectStatus | None] = dict.fromkeys(was.keys() - now.keys())
        _differ(listed.ingresses, ingresses, changed)
        _differ(listed.policies, policies, changed)
        gone = [r for key, r in was.items() if now.get(key) is not r]
        fresh = [r for key, r in now.items() if was.get(key) is not r]
        moved: dict[int, int] = {}
        for route, step in chain(zip(gone, repeat(-1)), zip(fresh, repeat(1))):
            for parent in route.parents:
                for attachment in parent.attachments:
                    listener = id(attachment.listener)
                    moved[listener] = moved.get(listener, 0) + step
        for route in fresh:
            changed[STATUS_ORDER(route.compiled.route.meta.key)] = route_status(route, config)
        parents: set[_Key] = set()
        for listener, step in moved.items():
            if step:
                listed.counts[listener] = listed.counts.get(listener, 0) + step
                parents.update(listed.owners.get(listener, ()))
        if programmed is not None and listed.programmed is not None:
            for gateway, _ in programmed ^ listed.programmed:
                parents.update(listed.ported.get(gateway, ()))
        for key in parents:
            judged = listed.parents[key]
            if isinstance(judged, Gateway):
                changed[key] = gateway_status(judged, model, listed.counts, programmed)
            else:
                changed[key] = listener_set_status(judged, model, listed.counts, programmed)
        self._patched_made += len(fresh) + len(parents)
        listed.statuses = _patched(listed.statuses, listed.keys, changed)
        listed.programmed, listed.model, listed.ingress_inputs = programmed, model, ingress_inputs
        listed.ingresses, listed.policies = ingresses, policies
        return True


def _changed_routes(
    before: Sequence[RouteVerdict], after: Sequence[RouteVerdict]
) -> tuple[dict[_Key, RouteVerdict], dict[_Key, RouteVerdict]] | None:
    """The verdicts between the common head and tail (the same objects at the same places) of
    two route lists, by key, before and after; None when a key is there twice after. A key
    outside is in neither, its verdict the same object (keys are unique before)."""
    size = min(len(before), len(after))
    head = next((i for i in range(size) if before[i] is not after[i]), size)
    rest = size - head
    tail = next((i for i in range(rest) if before[-1 - i] is not after[-1 - i]), rest)
    window = after[head : len(after) - tail]
    now = {STATUS_ORDER(r.compiled.route.meta.key): r for r in window}
    if len(now) != len(window):
        return None
    was = {STATUS_ORDER(r.compiled.route.meta.key): r for r in before[head : len(before) - tail]}
    return was, now


def _unique(statuses: Sequence[ObjectStatus]) -> bool:
    return len({STATUS_ORDER(s) for s in statuses}) == len(statuses)


def _differ(
    before: Iterable[ObjectStatus],
    after: Iterable[ObjectStatus],
    changed: dict[_Key, ObjectStatus | None],
) -> None:
    """Into ``changed``: each status of ``after`` not equal to that of its key in ``before``,
    and None for each key of ``before`` not in ``after``."""
    if before is after:
        return
    was: dict[_Key, ObjectStatus] = {STATUS_ORDER(s): s for s in before}
    for made in after:
        key = STATUS_ORDER(made)
        if was.pop(key, None) != made:
            changed[key] = made
    changed.update(dict.fromkeys(was))


def _patched(
    statuses: PVector[ObjectStatus], keys: list[_Key], changed: dict[_Key, ObjectStatus | None]
) -> PVector[ObjectStatus]:
    """``statuses`` with each of ``changed`` put at its key's place, None taken out; ``keys``
    (theirs, in order) kept in step. With no key coming or going no position moves."""
    places: list[tuple[int, ObjectStatus]] = []
    for key, made in changed.items():
        i = bisect_left(keys, key)
        if made is None or i == len(keys) or keys[i] != key:
            break
        places.append((i, made))
    else:
        for i, made in places:
            statuses = statuses.set(i, made)
        return statuses
    found = list(statuses)
    for key, made in changed.items():
        i = bisect_left(keys, key)
        if made is None:  # a key taken out is there: it came from the list
            del keys[i], found[i]
        elif i < len(keys) and keys[i] == key:
            found[i] = made
        else:
            keys.insert(i, key)
            found.insert(i, made)
    return pvector(found)


def _listed(
    state: ClusterState,
    config: CompileConfig,
    programmed: frozenset[tuple[str, int]] | None,
    model: GatewayModel,
    statuses: PVector[ObjectStatus],
    keys: list[_Key],
    counts: dict[int, int],
) -> _Listed:
    """The memory of a list made whole: who reads each listener's count and each Gateway's
    programmed ports, as ``gateway.status.gateway_statuses`` reads them."""
    owners: dict[int, list[_Key]] = {}
    ported: dict[str, list[_Key]] = {}
    parents: dict[_Key, Gateway | ListenerSetVerdict] = {}
    for gateway in model.gateways:
        key = gateway.meta.key
        parents[("Gateway", key.namespace, key.name)] = gateway
        for verdict in model.listeners[key]:
            owners.setdefault(id(verdict), []).append(("Gateway", key.namespace, key.name))
        ported.setdefault(key.ref, []).append(("Gateway", key.namespace, key.name))
    for listener_set in model.listener_sets:
        key = listener_set.listener_set.meta.key
        parents[("ListenerSet", key.namespace, key.name)] = listener_set
        for verdict in listener_set.listeners:
            owners.setdefault(id(verdict), []).append(("ListenerSet", key.namespace, key.name))
        ported.setdefault(listener_set.gateway.ref, []).append(
            ("ListenerSet", key.namespace, key.name)
        )
    return _Listed(
        config=config,
        programmed=programmed,
        model=model,
        ingress_inputs=(state.ingresses, state.ingress_classes),
        ingresses=[s for s in statuses if s.kind == "Ingress"],
        policies=[s for s in statuses if s.kind == "BackendTLSPolicy"],
        statuses=statuses,
        keys=keys,
        counts=counts,
        owners=owners,
        ported=ported,
        parents=parents,
    )
