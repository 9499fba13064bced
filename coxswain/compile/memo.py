"""Incremental compilation: what a compile from scratch would give, computed from what changed.

Why: docs/architecture.md, "Rules of the core" — the core is pure and its state persistent, so
an unchanged input is the very same object, and identity is a cheap test of "nothing to redo".
The memory of earlier results is this explicit object, owned by the shell (the controller and
``serve`` each hold one) and handed to every call; nothing is kept anywhere else. Every answer
equals the pure function's (``compile``, ``analyse``, ``status``, ``provision``) on the same
inputs; ``tests/property/test_incremental_props.py`` drives random event sequences and checks
that byte for byte at every step.

What is remembered, and when it is reused:

- **Compiled routes** (``route``; ``gateway.route_kinds.RouteCache``), by route key: reused
  while the route is the same object and every ``ServiceIndex`` and ``Grants`` call its compile
  made answers the same (the calls are recorded as the compile makes them, so the record is
  complete by construction). A route kind plugs in through ``gateway.route_kinds`` and is
  remembered with no change here.
- **Rule JSON texts** for the snapshot's content hash (``snapshot_json.RuleTexts``), by rule
  object: a reused route's rules are not encoded again. Texts not used for a whole state are
  dropped.
- **Endpoint entries and slice findings** (``endpoints``; ``backends.EndpointsCache``), by
  Service: reused until the Service or one of its EndpointSlices changes.
- **Listener tables** (``gateway.cells``), per scope and slot (internal port, hostname): a
  table of the same listener and rule entries is that table; with the hashed pieces kept
  from the last seal (``seal_memo``, ``endpoint_pieces``), an unchanged table, port or
  endpoint list is neither built, encoded nor visited again, and the hash resumes at the
  first changed piece (the discovery server's delta finds the rest unchanged by identity).
- **Scopes' results** (``compile``), each with the inputs it read (its relevance): the Gateway
  and ListenerSets it serves, the Gateways its routes name, the Services whose endpoints it
  lists. From one state to the next the changed keys are found by identity (persistent maps:
  unchanged objects are the same objects), and each remembered scope is

  * reused when no change concerns it (a route of another Gateway, an Ingress in a
    dedicated Gateway's scope);
  * patched when only EndpointSlices of Services it lists changed: those endpoint entries are
    recomputed and only the endpoints table is hashed again (``snapshot_json.head_digest``);
  * compiled again otherwise (its routes still come from the route memo). Changes to kinds
    every scope may read (classes, grants, Secrets, Services, Namespaces, policies, parameters,
    ListenerSets, workloads), and to a Gateway with ``spec.addresses`` (addresses are judged
    against every Gateway's), make every scope compile again.

- **Ingress fragments** (``compile.ingress.memo``): a scope with Ingresses compiles again when
  one changes, but the fragment of each Ingress whose inputs are the same objects is reused and
  only the table is assembled again.
- **The Gateway API analyses** of the cluster and of the shared pool (``analysis_memo``):
  patched when only routes changed (the changed routes detached and attached again against
  the remembered listener verdicts), kept when only EndpointSlices changed.
- **The cluster-wide status**: reused when only EndpointSlices changed (none of them reads a
  slice) and its other inputs are equal; patched where its inputs changed while the passes
  before the routes' are the same objects (``status_list_memo``); otherwise each Gateway API
  status is reused while its inputs are (``status_memo``).
- **The cluster-wide provision and grants** read the passes before the routes' (and
  provision Services, ServiceAccounts and Deployments): reused while those are the same
  objects (the analysis patched for routes keeps them) and the other inputs equal.

Work stays bounded: each map holds at most one entry per object or scope that exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

from coxswain.compile.analysis_memo import AnalysisMemory
from coxswain.compile.api import (
    CompileResult,
    compile_parts,
    findings,
    slice_findings,
)
from coxswain.compile.backends import (
    ServiceIndex,
    index_services,
    service_endpoints,
    slice_endpoint_keys,
)
from coxswain.compile.gateway.route_kinds import ROUTE_COMPILERS, compile_any_route
from coxswain.compile.grants import subscription_grants
from coxswain.compile.ingress.memo import IngressMemo
from coxswain.compile.model.gateway_objects import CommonRoute, Gateway
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.provision import provision
from coxswain.compile.recorded import Read, RecordedGrants, RecordedServices
from coxswain.compile.scope import GatewayScope, SharedPool
from coxswain.compile.seal_memo import SealMemory
from coxswain.compile.snapshot_json import endpoint_piece, endpoint_pieces, sealed_with
from coxswain.compile.state_changes import (
    both,
    changes,
    lookup,
    named_gateways,
    named_parents,
    slice_services,
)
from coxswain.compile.status_list_memo import StatusListMemory
from coxswain.compile.texts_memo import Texts

if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Collection

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.api import CompileParts
    from coxswain.compile.config import CompileConfig
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.gateway.route_rules import CompiledRoute
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.provision import DesiredObjects
    from coxswain.compile.scope import Scope
    from coxswain.compile.snapshot import Endpoint, GatewayRule
    from coxswain.compile.snapshot_json import EndpointPieces
    from coxswain.compile.status import ObjectStatus

__all__ = ["CompileMemo"]

_SCOPED_KINDS: Final = frozenset({"Gateway", "EndpointSlice", "Ingress", "IngressClass"})
"""Kinds whose changes a Gateway's scope checks against what it read; with the route kinds.
A change to any other kind makes every scope compile again."""


@dataclass(frozen=True, slots=True)
class _RouteEntry:
    """A compiled route, the Services its compile looked up (and whose slices), and whether it
    asked a ReferenceGrant question."""

    route: CommonRoute
    read: frozenset[Read]
    compiled: CompiledRoute


@dataclass(slots=True, kw_only=True)
class _ScopeEntry:
    """A scope's remembered compile and what it read."""

    state: ClusterState
    config: CompileConfig
    parts: CompileParts
    head: HASH
    result: CompileResult
    slice_found: dict[ObjectKey, tuple[Diagnostic, ...]]
    endpoint_keys: dict[tuple[str, str], list[tuple[str, int]]]
    parents: frozenset[tuple[str, str]]
    named: frozenset[ObjectKey]
    seal: SealMemory
    endpoint_pieces: EndpointPieces


@dataclass(slots=True)
class _ServiceEntry:
    """One Service's endpoint entries by port, and its slices' findings, as last computed."""

    endpoints: dict[int, PVector[Endpoint]] = field(default_factory=dict)
    slice_found: tuple[Diagnostic, ...] | None = None


@dataclass(slots=True, kw_only=True)
class _Outputs:
    """The last cluster-wide analysis, status and provision, with the inputs they came from."""

    state: ClusterState
    config: CompileConfig
    model: GatewayModel
    status: tuple[object, PVector[ObjectStatus]] | None = None
    provision: tuple[object, DesiredObjects] | None = None


class CompileMemo:
    """Earlier results and what they read; ``compile``, ``analyse``, ``status`` and
    ``provision`` answer as the pure functions of the same names do. Not thread-safe: one
    caller at a time (the shell's bridge runs calls one after the other)."""

    def __init__(self) -> None:
        self.compiled = 0  # scope compiles made, since creation
        self.reused = 0  # scope results reused or patched, since creation
        self._state: ClusterState | None = None
        self._previous: ClusterState | None = None
        self._changed: frozenset[ObjectKey] | None = None  # None: everything
        self._hint: tuple[ClusterState, ClusterState, frozenset[ObjectKey]] | None = None
        # when only EndpointSlices changed: the Services they belong to (before or after)
        self._slices_only: set[tuple[str, str]] | None = None
        self._named: dict[ObjectKey, frozenset[tuple[str, str]]] = {}  # parents changed routes name
        self._routes: dict[ObjectKey, _RouteEntry] = {}
        self._readers: dict[Read, set[ObjectKey]] = {}  # what routes read → those routes
        self._granted: set[ObjectKey] = set()  # routes that asked a ReferenceGrant question
        self._texts_state: ClusterState | None = None
        self._texts: Texts[int, tuple[GatewayRule, str]] = Texts({})
        self._scopes: dict[Scope, _ScopeEntry] = {}
        self._services: dict[tuple[str, str], _ServiceEntry] = {}  # by namespace, name
        self._outputs: _Outputs | None = None
        self.ingresses = IngressMemo()  # Ingress fragments (compile.ingress.memo)
        self._analyses = AnalysisMemory()  # the cluster's and the shared pool's analyses
        self._statuses = StatusListMemory()  # the last status lists
        self._grants: tuple[object, object, CompileConfig, PMap[tuple[str, str], Scope]] | None
        self._grants = None  # the last grants, with the Gateways, placements and config read

    @property
    def analyses_patched(self) -> int:
        """Gateway API analyses patched for changed routes rather than run whole, since
        creation (``analysis_memo``)."""
        return self._analyses.patched

    @property
    def statuses_made(self) -> int:
        """Gateway API statuses made rather than reused, since creation (``status_list_memo``)."""
        return self._statuses.made_again

    # --- the pure functions' answers ------------------------------------------------------------

    def compile(self, state: ClusterState, scope: Scope, config: CompileConfig) -> CompileResult:
        """``compile(state, scope, config)``."""
        self._advance(state)
        entry = self._scopes.get(scope)
        if entry is not None and (entry.config is config or entry.config == config):
            if entry.state is state:
                self.reused += 1
                return entry.result
            if entry.state is self._previous and self._changed is not None:
                touched = self._slices_only
                if touched is None:
                    touched = self._touched(entry, self._changed)
                if touched is not None:
                    self.reused += 1
                    return self._patched(entry, state, touched)
        self.compiled += 1
        return self._compiled(state, scope, config)

    def analyse(self, state: ClusterState, config: CompileConfig) -> GatewayModel:
        """``analyse(state, config)``."""
        self._advance(state)
        outputs = self._outputs
        if outputs is not None and outputs.config == config and self._carried(outputs.state):
            outputs.state = state
            return outputs.model
        model = self._analyses.model(state, config, None, self._since(), self)
        self._outputs = _Outputs(state=state, config=config, model=model)
        if (
            outputs is not None
            and outputs.config == config
            and outputs.model.listeners is model.listeners  # the same passes before routes'
            and _same_objects(_provision_reads(outputs.state), _provision_reads(state))
        ):
            self._outputs.provision = outputs.provision
        return model

    def grants(
        self, state: ClusterState, config: CompileConfig, model: GatewayModel | None = None
    ) -> PMap[tuple[str, str], Scope]:
        """``subscription_grants(state, config, model)``, kept while the analysis' Gateways and
        placements, all it reads, are the same objects (a route change leaves them)."""
        if model is None:
            model = self.analyse(state, config)
        kept = self._grants
        if kept is None or not (
            kept[0] is model.gateways and kept[1] is model.placements and kept[2] == config
        ):
            grants = subscription_grants(state, config, model)
            kept = self._grants = (model.gateways, model.placements, config, grants)
        return kept[3]

    def status(
        self,
        state: ClusterState,
        config: CompileConfig,
        programmed: Collection[tuple[str, int]] | None = None,
    ) -> PVector[ObjectStatus]:
        """``status(state, config, programmed)``."""
        outputs = self._current_outputs(state, config)
        key = None if programmed is None else frozenset(programmed)
        if outputs.status is None or outputs.status[0] != key:
            outputs.status = (key, self._statuses.status(state, config, key, outputs.model))
        return outputs.status[1]

    def provision(
        self,
        state: ClusterState,
        config: CompileConfig,
        shared_served: Collection[str] | None = None,
    ) -> DesiredObjects:
        """``provision(state, config, shared_served)``."""
        outputs = self._current_outputs(state, config)
        key = None if shared_served is None else frozenset(shared_served)
        if outputs.provision is None or outputs.provision[0] != key:
            outputs.provision = (key, provision(state, config, shared_served, outputs.model))
        return outputs.provision[1]

    def changed(self, base: ClusterState, state: ClusterState, keys: Collection[ObjectKey]) -> None:
        """Say that ``state`` is ``base`` with at most the objects of ``keys`` added, edited or
        deleted (events folded in with ``model.state.apply``, which touches nothing else):
        moving from ``base`` to ``state`` then reads ``keys`` instead of comparing every
        table of the two states. A superset of the changed keys is fine; an object changed
        and left out would be missed, so a caller that cannot say passes nothing."""
        self._hint = (base, state, frozenset(keys))

    def forget(self, keep: Collection[Scope]) -> None:
        """Drop the results of every scope but ``keep`` (scopes no proxy may ask for)."""
        kept = set(keep)
        for scope in [s for s in self._scopes if s not in kept]:
            del self._scopes[scope]

    # --- gateway.route_kinds.RouteCache -------------------------------------------------------

    def route(self, route: CommonRoute, services: ServiceIndex, grants: Grants) -> CompiledRoute:
        """The compiled ``route``, reused while it is the same object and nothing it read
        changed (``_advance`` drops the entries a change concerns)."""
        key = route.meta.key
        entry = self._routes.get(key)
        if entry is not None and entry.route is route:
            return entry.compiled
        recorded_services = RecordedServices(services.state)
        recorded_grants = RecordedGrants(grants.by_namespace)
        compiled = compile_any_route(route, recorded_services, recorded_grants)
        read = frozenset(recorded_services.calls)
        self._drop_route(key)
        self._routes[key] = _RouteEntry(route, read, compiled)
        for service in read:
            self._readers.setdefault(service, set()).add(key)
        if recorded_grants.asked:
            self._granted.add(key)
        return compiled

    # --- backends.EndpointsCache ------------------------------------------------------------------

    def endpoints(
        self, index: ServiceIndex, namespace: str, name: str, port_number: int
    ) -> PVector[Endpoint]:
        """A Service port's endpoint entry, reused until the Service or one of its slices
        changes (``_advance`` drops the Service's entries then)."""
        entry = self._services.setdefault((namespace, name), _ServiceEntry())
        found = entry.endpoints.get(port_number)
        if found is None:
            found = entry.endpoints[port_number] = service_endpoints(
                index, namespace, name, port_number
            )
        return found

    def _slice_findings(self, services: ServiceIndex, key: ObjectKey) -> tuple[Diagnostic, ...]:
        """``slice_findings`` of one Service, reused as its endpoint entries are."""
        entry = self._services.get((key.namespace, key.name))
        if entry is None:
            entry = self._services[(key.namespace, key.name)] = _ServiceEntry()
        if entry.slice_found is None:
            entry.slice_found = tuple(slice_findings(services, (key,)))
        return entry.slice_found

    # --- inside ----------------------------------------------------------------------------------

    def _advance(self, state: ClusterState) -> None:
        """Move to ``state``: find what changed since the last state seen."""
        if state is self._state:
            return
        self._previous, self._state = self._state, state
        hint, self._hint = self._hint, None
        previous = self._previous
        if previous is None or (previous.gateway_api, previous.input_diagnostics) != (
            state.gateway_api,
            state.input_diagnostics,
        ):
            self._changed = None  # something outside the tables changed
        elif hint is not None and hint[0] is previous and hint[1] is state:
            self._changed = frozenset(
                k for k in hint[2] if lookup(previous, k) is not lookup(state, k)
            )
        else:
            self._changed = changes(previous, state)
        self._slices_only = None
        self._named = {}
        if self._changed is None:
            for key in list(self._routes):
                self._drop_route(key)
            self._services.clear()
            return
        assert previous is not None  # changes are found between two states
        if all(k.kind == "EndpointSlice" for k in self._changed):
            self._slices_only = {
                service for k in self._changed for service in slice_services(k, previous, state)
            }
            self._analyses.carry(previous, state)
        for key in self._changed:
            if key.kind in ROUTE_COMPILERS and lookup(state, key) is None:
                self._drop_route(key)  # deleted
            elif key.kind == "ReferenceGrant":
                for reader in list(self._granted):
                    self._drop_route(reader)
            elif key.kind == "Service":
                self._drop_readers(("Service", key.namespace, key.name))
                self._services.pop((key.namespace, key.name), None)
            elif key.kind == "EndpointSlice" and self._previous is not None:
                for namespace, name in slice_services(key, self._previous, state):
                    self._drop_readers(("EndpointSlice", namespace, name))
                    self._services.pop((namespace, name), None)

    def _drop_readers(self, read: Read) -> None:
        for reader in list(self._readers.get(read, ())):
            self._drop_route(reader)

    def _drop_route(self, key: ObjectKey) -> None:
        """Forget a compiled route, and its place in the relevance index."""
        entry = self._routes.pop(key, None)
        if entry is None:
            return
        self._granted.discard(key)
        for service in entry.read:
            readers = self._readers.get(service)
            if readers is not None:
                readers.discard(key)
                if not readers:
                    del self._readers[service]

    def _carried(self, was: ClusterState) -> bool:
        """Whether what was computed from ``was`` holds for the current state (the same, or
        the previous with only EndpointSlices changed since)."""
        if was is self._state:
            return True
        return (
            was is self._previous
            and self._changed is not None
            and all(k.kind == "EndpointSlice" for k in self._changed)
        )

    def _since(self) -> tuple[ClusterState, frozenset[ObjectKey]] | None:
        """The state before the current one and the keys changed since, when known."""
        if self._previous is None or self._changed is None:
            return None
        return self._previous, self._changed

    def _current_outputs(self, state: ClusterState, config: CompileConfig) -> _Outputs:
        self.analyse(state, config)
        outputs = self._outputs
        assert outputs is not None  # analyse just set it
        return outputs

    def _compiled(self, state: ClusterState, scope: Scope, config: CompileConfig) -> CompileResult:
        if self._texts_state is not state:  # the first full compile of this state
            self._texts_state = state
            self._texts = Texts(self._texts.now)
        earlier = self._scopes.get(scope)
        model = delta = None
        if isinstance(scope, SharedPool):
            model = self._analyses.model(state, config, scope, self._since(), self)
            delta = self._analyses.delta(scope, model)
        parts = compile_parts(
            state,
            scope,
            config,
            self,
            earlier=None if earlier is None else earlier.parts,
            endpoints=self,
            model=model,
            fragments=self.ingresses,
            delta=delta,
        )
        services = index_services(state)
        if (
            earlier is not None
            and earlier.state is self._previous
            and self._changed is not None
            and all(k.kind in ROUTE_COMPILERS for k in self._changed)  # no slice changed
            and earlier.parts.services_read == parts.services_read
        ):
            slice_found = dict(earlier.slice_found)
        else:
            slice_found = {k: self._slice_findings(services, k) for k in parts.services_read}
        seal = SealMemory() if earlier is None else earlier.seal
        head = seal.head(parts.snapshot, parts.cells, self._texts, self.ingresses.texts)
        endpoints = parts.snapshot.endpoints
        same_endpoints = earlier is not None and earlier.parts.snapshot.endpoints is endpoints
        if earlier is not None and same_endpoints:
            pieces, endpoint_keys = earlier.endpoint_pieces, earlier.endpoint_keys
        else:
            known = None if earlier is None else earlier.endpoint_pieces
            pieces = endpoint_pieces(endpoints, known)
            endpoint_keys = slice_endpoint_keys(endpoints)
        result = CompileResult(
            snapshot=sealed_with(parts.snapshot, head, pieces),
            diagnostics=findings(parts, (d for found in slice_found.values() for d in found)),
        )
        parents: set[tuple[str, str]] = set()
        named: set[ObjectKey] = set()
        if isinstance(scope, GatewayScope):
            parents.add((scope.namespace, scope.name))
            parents.update(
                (s.listener_set.meta.key.namespace, s.listener_set.meta.key.name)
                for s in parts.model.listener_sets
            )
            for parent in parents:
                for route_key in state.routes_by_parent.get(parent, ()):
                    route = lookup(state, route_key)
                    if isinstance(route, CommonRoute):
                        named.update(named_gateways(route))
        self._scopes[scope] = _ScopeEntry(
            state=state,
            config=config,
            parts=parts,
            head=head,
            result=result,
            slice_found=slice_found,
            endpoint_keys=endpoint_keys,
            parents=frozenset(parents),
            named=frozenset(named),
            seal=seal,
            endpoint_pieces=pieces,
        )
        return result

    def _touched(
        self, entry: _ScopeEntry, changed: frozenset[ObjectKey]
    ) -> set[tuple[str, str]] | None:
        """The Services whose EndpointSlices changed for this scope, or None when the scope
        must compile again."""
        previous, state = self._previous, self._state
        assert previous is not None  # after _advance
        assert state is not None
        shared = not isinstance(entry.parts.snapshot.scope, GatewayScope)
        services: set[tuple[str, str]] = set()
        for key in changed:
            if key.kind == "EndpointSlice":
                services.update(slice_services(key, previous, state))
                continue
            if shared:
                return None
            if key.kind in ROUTE_COMPILERS:
                named = self._named.get(key)
                if named is None:  # once a state: thousands of scopes ask
                    named = self._named[key] = frozenset(named_parents(previous, state, key))
                if not named.isdisjoint(entry.parents):
                    return None
            elif key.kind == "Gateway":
                gateways = list(both(key, previous, state))
                if key in entry.named or any(
                    isinstance(g, Gateway)
                    and (g.addresses or (g.meta.key.namespace, g.meta.key.name) in entry.parents)
                    for g in gateways
                ):
                    return None
            elif key.kind not in _SCOPED_KINDS:
                return None
        return services

    def _patched(
        self, entry: _ScopeEntry, state: ClusterState, touched: set[tuple[str, str]]
    ) -> CompileResult:
        """The entry carried to ``state``, its endpoints and slices' findings of ``touched``
        Services recomputed."""
        entry.state = state
        listed = [pair for pair in touched if pair in entry.endpoint_keys]
        read = [ObjectKey("Service", *pair) for pair in touched]
        read = [key for key in read if key in entry.slice_found]
        if not listed and not read:
            return entry.result
        services = index_services(state)
        found_changed = False
        for key in read:
            now = self._slice_findings(services, key)
            if now != entry.slice_found[key]:
                entry.slice_found[key] = now
                found_changed = True
        if not listed and not found_changed:
            return entry.result
        snapshot = entry.parts.snapshot
        if listed:
            endpoints = snapshot.endpoints.evolver()
            for namespace, name in listed:
                for text, port in entry.endpoint_keys[(namespace, name)]:
                    endpoints[text] = self.endpoints(services, namespace, name, port)
                    if entry.endpoint_pieces[text][0] is not endpoints[text]:
                        entry.endpoint_pieces[text] = endpoint_piece(text, endpoints[text])
            snapshot = replace(snapshot, endpoints=endpoints.persistent())
            entry.parts = replace(entry.parts, snapshot=snapshot)
        diagnostics = entry.result.diagnostics
        if found_changed:
            diagnostics = findings(entry.parts, (d for f in entry.slice_found.values() for d in f))
        entry.result = CompileResult(
            snapshot=(
                sealed_with(snapshot, entry.head, entry.endpoint_pieces)
                if listed
                else entry.result.snapshot
            ),
            diagnostics=diagnostics,
        )
        return entry.result


def _provision_reads(state: ClusterState) -> tuple[object, ...]:
    """The tables ``provision`` reads besides the analysis' passes before the routes'."""
    return (state.services, state.service_accounts, state.deployments)


def _same_objects(first: tuple[object, ...], second: tuple[object, ...]) -> bool:
    return all(a is b for a, b in zip(first, second, strict=True))
