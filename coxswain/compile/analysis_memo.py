"""The Gateway API analysis of the cluster and of the shared pool, patched when only routes changed.

Why: docs/architecture.md, "The pure core" (``compile.memo``). The analysis
(``gateway.model.analyse_gateways``) judges classes, Gateways, ListenerSets, listeners and
ports — none of which reads a route — and then attaches every route against those verdicts.
The first part is kept (``gateway.model.ParentFrame``) with each route's attachment before
cross serving is settled and its findings about missing Gateways, by route key. When the
changes since the remembered state are routes only (HTTPRoute, GRPCRoute and the layer-4 kinds,
``gateway.route_kinds.ROUTE_COMPILERS``), nothing a route is attached against changed (no
Gateway, ListenerSet, Namespace, ReferenceGrant or Service), so only the changed routes are
attached again; the rest — cross serving (GEP-1016), BackendTLSPolicies (GEP-1897) and the
findings' order — is finished from those verdicts as ``analyse_gateways`` finishes it, and the
model is the one a fresh analysis gives; which verdicts went and came is kept with it
(``delta``, a ``gateway.cells.RouteDelta``), so that the compile of the shared pool visits
those routes' shares only. When only EndpointSlices changed the model is kept
(no pass reads a slice). A GatewayScope's analysis reads the routes naming its parents only and
is computed whole by its compile.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Final

from coxswain.compile.backends import index_services
from coxswain.compile.gateway.cells import RouteDelta
from coxswain.compile.gateway.model import (
    analyse_gateways,
    attach_candidate,
    candidate_routes,
    finish_model,
    judge_parents,
    parents_not_found,
)
from coxswain.compile.gateway.route_kinds import ROUTE_COMPILERS
from coxswain.compile.model.gateway_objects import GRPCRoute, HTTPRoute, StreamRoute
from coxswain.compile.state_changes import lookup

if TYPE_CHECKING:
    from collections.abc import Collection

    from coxswain.compile.config import CompileConfig
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.attach import RouteVerdict
    from coxswain.compile.gateway.model import GatewayModel, ParentFrame
    from coxswain.compile.gateway.route_kinds import RouteCache
    from coxswain.compile.model.gateway_objects import Route
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.scope import SharedPool

__all__ = ["AnalysisMemory"]

_ORDER: Final = attrgetter("kind", "namespace", "name")


@dataclass(slots=True, kw_only=True)
class _Analysis:
    """One scope's analysis and its pieces: the attachment of each candidate route that names
    one of our parents, and the missing-Gateway findings of each that has some, both in
    candidate order (only those: a patch then hands ``finish_model`` the maps' values, with
    no walk over every candidate)."""

    state: ClusterState
    config: CompileConfig
    frame: ParentFrame
    attached: dict[ObjectKey, RouteVerdict]
    missing: dict[ObjectKey, tuple[Diagnostic, ...]]
    model: GatewayModel
    delta: RouteDelta | None = None


class AnalysisMemory:
    """The analyses of the cluster (scope None) and of the shared pool, as last computed."""

    def __init__(self) -> None:
        self.patched = 0  # analyses patched for changed routes, since creation
        self._entries: dict[SharedPool | None, _Analysis] = {}

    def model(
        self,
        state: ClusterState,
        config: CompileConfig,
        scope: SharedPool | None,
        since: tuple[ClusterState, frozenset[ObjectKey]] | None,
        cache: RouteCache,
    ) -> GatewayModel:
        """``analyse_gateways(state, config, index_services(state), scope, cache)``; ``since``:
        the state before and the keys changed since (None: unknown)."""
        entry = self._entries.get(scope)
        if entry is not None and (entry.config is config or entry.config == config):
            if entry.state is state:
                return entry.model
            if since is not None and entry.state is since[0]:
                changed = since[1]
                if all(k.kind == "EndpointSlice" for k in changed):
                    entry.state = state
                    return entry.model
                if all(k.kind in ROUTE_COMPILERS for k in changed):
                    self.patched += 1
                    return self._patched(entry, state, changed, cache)
        frame = judge_parents(state, config, scope)
        if frame is None:
            self._entries.pop(scope, None)
            return analyse_gateways(state, config, index_services(state), scope, cache)
        services = index_services(state)
        candidates = candidate_routes(state, frame)
        attached: dict[ObjectKey, RouteVerdict] = {}
        missing: dict[ObjectKey, tuple[Diagnostic, ...]] = {}
        for route in candidates:
            verdict = attach_candidate(route, frame, state, services, cache)
            _put(attached, missing, route, verdict, state)
        model = _finished(frame, state, attached, missing)
        self._entries[scope] = _Analysis(
            state=state,
            config=config,
            frame=frame,
            attached=attached,
            missing=missing,
            model=model,
        )
        return model

    def delta(self, scope: SharedPool | None, model: GatewayModel) -> RouteDelta | None:
        """How ``model``, the last ``model`` answer for ``scope``, differs in its routes from
        the answer before it, when it was patched for changed routes and no verdict of another
        route changed with them (no cross serving to settle); else None."""
        entry = self._entries.get(scope)
        if entry is None or entry.model is not model:
            return None
        return entry.delta

    def carry(self, previous: ClusterState, state: ClusterState) -> None:
        """Say that ``state`` differs from ``previous`` in EndpointSlices only, which no pass
        of the analysis reads: an analysis of ``previous`` holds for ``state``."""
        for entry in self._entries.values():
            if entry.state is previous:
                entry.state = state

    def _patched(
        self,
        entry: _Analysis,
        state: ClusterState,
        changed: Collection[ObjectKey],
        cache: RouteCache,
    ) -> GatewayModel:
        """``entry`` carried to ``state``, which differs from its state in the routes
        ``changed`` only: those are detached, and attached again if they still exist."""
        services = index_services(state)
        attached = dict(entry.attached)
        missing = dict(entry.missing)
        added = False
        gone: list[RouteVerdict] = []
        fresh: list[RouteVerdict] = []
        for key in changed:
            was = attached.get(key)
            if was is not None:
                gone.append(was)
            route = lookup(state, key)
            if not isinstance(route, (HTTPRoute, GRPCRoute, StreamRoute)):  # deleted
                attached.pop(key, None)
                missing.pop(key, None)
                continue
            candidate: Route | StreamRoute = route
            verdict = attach_candidate(candidate, entry.frame, state, services, cache)
            had = key in attached, key in missing
            _put(attached, missing, candidate, verdict, state)
            made = (key in attached and not had[0]) or (key in missing and not had[1])
            added = added or made  # an entry made comes last
            if verdict is not None:
                fresh.append(verdict)
        if added:  # candidates are in key order
            attached = {key: attached[key] for key in sorted(attached, key=_ORDER)}
            missing = {key: missing[key] for key in sorted(missing, key=_ORDER)}
        before = entry.model.routes
        entry.state, entry.attached, entry.missing = state, attached, missing
        entry.model = _finished(entry.frame, state, attached, missing)
        # cross serving (GEP-1016) may change the verdicts of routes that did not change
        settled = bool(state.grpcroutes or state.streamroutes)
        entry.delta = None if settled else RouteDelta(before, tuple(gone), tuple(fresh))
        return entry.model


def _finished(
    frame: ParentFrame,
    state: ClusterState,
    attached: dict[ObjectKey, RouteVerdict],
    missing: dict[ObjectKey, tuple[Diagnostic, ...]],
) -> GatewayModel:
    return finish_model(
        frame,
        state,
        index_services(state),
        attached.values(),
        (d for found in missing.values() for d in found),
    )


def _put(
    attached: dict[ObjectKey, RouteVerdict],
    missing: dict[ObjectKey, tuple[Diagnostic, ...]],
    route: Route | StreamRoute,
    verdict: RouteVerdict | None,
    state: ClusterState,
) -> None:
    """A candidate's attachment and missing-Gateway findings set in ``attached`` and
    ``missing`` (in place when there: the order is kept), or taken out when it has none."""
    key = route.meta.key
    if verdict is None:
        attached.pop(key, None)
    else:
        attached[key] = verdict
    found = tuple(parents_not_found(route, state))
    if found:
        missing[key] = found
    else:
        missing.pop(key, None)
