"""The Gateway API passes run in order, giving one ``GatewayModel`` that both the snapshot and
the statuses are read from (so they can never disagree).

Order: our GatewayClasses → our Gateways → listener verdicts, each Gateway's own then those of
the ListenerSets it takes, in precedence order (:mod:`.listenersets`) → internal ports
(remembered by the VIP Services; a listener left without one is not accepted) → routes
compiled once each → attached to listeners.

A Gateway whose GatewayClass is not in the input, and a parentRef to a Gateway that is not in
the input, are ignored (they may be another controller's) and reported as warnings
(``dangling``), as Ingresses of a missing IngressClass are: no status carries them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Final

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.gateway.addresses import (
    Addresses,
    address_owners,
    judge_addresses,
    unsupported_address,
)
from coxswain.compile.gateway.attach import ParentVerdict, RouteVerdict, attach_route
from coxswain.compile.gateway.backend_tls import NO_POLICIES, BackendTLS, judge_backend_tls
from coxswain.compile.gateway.cross_serving import settle_cross_serving
from coxswain.compile.gateway.gateway_refs import GatewayRefs, judge_gateway_refs
from coxswain.compile.gateway.listeners import (
    SUPPORTED_PROTOCOLS,
    ListenerVerdict,
    judge_listeners,
)
from coxswain.compile.gateway.listenersets import (
    ListenerSetVerdict,
    join_listener_sets,
    listener_sets_not_found,
)
from coxswain.compile.gateway.placement import Placement, class_parameters, place_gateway
from coxswain.compile.gateway.ports import PORT_BAND, allocate_ports, outside_share
from coxswain.compile.gateway.refgrants import index_grants
from coxswain.compile.gateway.route_kinds import compile_any_route
from coxswain.compile.gateway.vip import service_addresses, vip_memory, vip_service_name
from coxswain.compile.model.gateway_objects import GATEWAY_GROUP, StreamRoute
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.scope import GatewayScope
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.config import CompileConfig
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.gateway.route_kinds import RouteCache
    from coxswain.compile.model.gateway_objects import Gateway, GatewayClass, Route
    from coxswain.compile.model.infra_objects import CoxswainGatewayParameters
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.scope import Scope

__all__ = [
    "GatewayModel",
    "ParentFrame",
    "ParentVerdicts",
    "analyse_gateways",
    "attach_candidate",
    "candidate_routes",
    "finish_model",
    "judge_parents",
    "own_listeners",
    "parents_not_found",
]

_ORDER: Final = attrgetter("kind", "namespace", "name")
"""``ObjectKey``'s order as a sort key: the same order, without a comparison call per pair."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParentVerdicts:
    """The passes before the routes': what ``GatewayModel`` and ``ParentFrame`` share (the
    fields are described on ``GatewayModel``)."""

    classes: tuple[GatewayClass, ...]
    class_accepted: dict[str, Condition]
    gateways: tuple[Gateway, ...]
    unserved: tuple[Gateway, ...]
    gateway_accepted: dict[ObjectKey, Condition]
    placements: dict[ObjectKey, Placement]
    addresses: dict[ObjectKey, Addresses]
    listeners: dict[ObjectKey, list[ListenerVerdict]]
    listener_sets: tuple[ListenerSetVerdict, ...]
    gateway_refs: dict[ObjectKey, GatewayRefs]
    ports: dict[tuple[str, int], int | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayModel(ParentVerdicts):
    """Everything the Gateway API passes decided, for the Gateways of one scope.

    ``class_accepted`` and ``gateway_accepted`` hold the ``Accepted`` condition of each class
    and Gateway when it is False (parameters that cannot be used, a class not accepted);
    ``unserved`` holds the refused Gateways a scope leaves out of ``gateways``: no proxy serves
    them, but their listeners are judged and routes attached to them so that every problem
    their status shows is reported in some scope;
    ``listeners`` holds each judged Gateway's merged listeners (its own, then its ListenerSets'
    in precedence order), each verdict naming its ``owner``; ``listener_sets`` our
    ListenerSets, those of the judged Gateways;
    ``placements`` says where each accepted Gateway is served; ``ports`` maps (``ns/name``,
    listener port) to the port its proxy binds (internal for the shared pool, the spec port for
    a dedicated proxy; a listener whose pair got none is ``Accepted=False/PortUnavailable``);
    ``addresses`` judges each placed Gateway's ``spec.addresses`` (:mod:`.addresses`);
    ``gateway_refs`` each judged
    Gateway's own references and extra conditions (:mod:`.gateway_refs`); ``backend_tls`` the
    BackendTLSPolicies in force and their verdicts (:mod:`.backend_tls`); ``dangling`` the
    findings about references to a GatewayClass or a parent Gateway that is not in the input.
    """

    routes: tuple[RouteVerdict, ...]
    backend_tls: BackendTLS
    dangling: tuple[Diagnostic, ...]


def analyse_gateways(
    state: ClusterState,
    config: CompileConfig,
    services: ServiceIndex,
    scope: Scope | None = None,
    cache: RouteCache | None = None,
) -> GatewayModel:
    """Run the Gateway API passes for ``scope`` (None: every owned Gateway, for status). Pure.

    ``cache`` remembers compiled routes between calls (``compile.memo``); the model is the same
    with it or without it."""
    frame = judge_parents(state, config, scope)
    if frame is None:
        return _EMPTY
    candidates = candidate_routes(state, frame)
    attached = [
        verdict
        for route in candidates
        if (verdict := attach_candidate(route, frame, state, services, cache)) is not None
    ]
    missing = [d for route in candidates for d in parents_not_found(route, state)]
    return finish_model(frame, state, services, attached, missing)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParentFrame(ParentVerdicts):
    """What a scope's routes are attached against: every pass of ``GatewayModel`` but the
    routes' (the fields of the same names), the grants, the listeners each of our Gateways
    and ListenerSets offers a parentRef (``parents_of``), why a ListenerSet has none
    (``detached``), and the findings about missing GatewayClasses and ListenerSets' missing
    Gateways. None of it reads a route, so a change to routes alone leaves it valid
    (``compile.memo`` attaches the changed routes against it)."""

    scope: Scope | None
    grants: Grants
    parents_of: dict[ObjectKey, list[ListenerVerdict]]
    detached: dict[ObjectKey, str]
    classes_missing: tuple[Diagnostic, ...]
    sets_missing: tuple[Diagnostic, ...]


def judge_parents(
    state: ClusterState, config: CompileConfig, scope: Scope | None
) -> ParentFrame | None:
    """Every pass before the routes' for ``scope``; None when Gateway API is off. Pure."""
    if not (state.gateway_api and config.gateway_api):
        return None  # Ingress-only: the CRDs are absent, or Gateway API is disabled
    classes = tuple(
        c
        for _, c in sorted(state.gateway_classes.items())
        if c.controller_name == config.gateway_controller
    )
    class_refused: dict[str, Condition] = {}
    from_class: dict[str, CoxswainGatewayParameters | None] = {}
    for gateway_class in classes:
        found = class_parameters(gateway_class, state)
        if isinstance(found, Condition):
            class_refused[gateway_class.meta.key.name] = found
        else:
            from_class[gateway_class.meta.key.name] = found
    names = {c.meta.key.name for c in classes}
    if isinstance(scope, GatewayScope):
        wanted = state.gateways.get(ObjectKey("Gateway", scope.namespace, scope.name))
        considered = [] if wanted is None else [wanted]
    else:
        considered = [state.gateways[k] for k in sorted(state.gateways, key=_ORDER)]
    candidates = [g for g in considered if g.class_name in names]
    known = {key.name for key in state.gateway_classes}
    dangling = [_class_not_found(g) for g in considered if g.class_name not in known]
    refused: dict[ObjectKey, Condition] = {}
    placements: dict[ObjectKey, Placement] = {}
    for gateway in candidates:
        key = gateway.meta.key
        if gateway.class_name in class_refused:
            refused[key] = problem(
                "Accepted",
                "Invalid",
                f"GatewayClass {gateway.class_name} is not accepted",
                key=key,
                field="spec.gatewayClassName",
            )
            continue
        unsupported = unsupported_address(gateway)
        if unsupported is not None:
            refused[key] = unsupported
            continue
        placed = place_gateway(gateway, from_class.get(gateway.class_name), state)
        if isinstance(placed, Condition):
            refused[key] = placed
        else:
            placements[key] = placed
    gateways = tuple(g for g in candidates if _in_scope(g, scope, refused, placements))
    served = {g.meta.key for g in gateways}
    unserved = tuple(g for g in candidates if g.meta.key in refused and g.meta.key not in served)
    grants = index_grants(state)
    listeners: dict[ObjectKey, list[ListenerVerdict]] = {}
    listener_sets: list[ListenerSetVerdict] = []
    mixed = config.gateway_api_channel == "experimental"  # TLSRouteModeMixed (.status)
    for gateway in (*gateways, *unserved):
        key = gateway.meta.key
        joined, listeners[key] = join_listener_sets(
            gateway,
            judge_listeners(gateway, state, grants, mixed=mixed),
            state,
            grants,
            gateway_refused=key in refused,
            mixed=mixed,
        )
        listener_sets.extend(joined)
    for key in refused:
        for verdict in listeners.get(key, ()):
            verdict.gateway_accepted = False
    ports, port_refusals = _ports(state, config, scope, gateways, listeners, placements)
    for key, verdicts in listeners.items():
        for verdict in verdicts:
            refusal = port_refusals.get((key.ref, verdict.listener.port))
            if refusal is not None and verdict.accepted.status:
                # Listener Accepted reason PortUnavailable: "the Listener requests a port that
                # cannot be used on the Gateway" (Gateway API v1 ListenerConditionReason).
                verdict.accepted = problem(
                    "Accepted",
                    "PortUnavailable",
                    refusal,
                    key=verdict.owner,
                    field=f"{verdict.listener.field}.port",
                )
    parents_of = {key: own_listeners(listeners, key) for key in listeners}
    detached: dict[ObjectKey, str] = {}
    for joined_set in listener_sets:
        set_key = joined_set.listener_set.meta.key
        parents_of[set_key] = list(joined_set.listeners)
        if not joined_set.joined and joined_set.refusal is not None:
            detached[set_key] = (
                f"{set_key} has no listener on its Gateway: {joined_set.refusal.message}"
            )
    frame = ParentFrame(
        scope=scope,
        classes=classes,
        class_accepted=class_refused,
        gateways=gateways,
        unserved=unserved,
        gateway_accepted=refused,
        placements=placements,
        addresses=_judged_addresses(state, config, names, candidates, placements),
        listeners=listeners,
        listener_sets=tuple(listener_sets),
        gateway_refs={
            g.meta.key: judge_gateway_refs(g, own_listeners(listeners, g.meta.key), state, grants)
            for g in (*gateways, *unserved)
        },
        ports=ports,
        grants=grants,
        parents_of=parents_of,
        detached=detached,
        classes_missing=tuple(dangling),
        sets_missing=(
            ()
            if isinstance(scope, GatewayScope)
            else tuple(listener_sets_not_found(state.listener_sets.values(), state))
        ),
    )
    return frame


def finish_model(
    frame: ParentFrame,
    state: ClusterState,
    services: ServiceIndex,
    attached: Iterable[RouteVerdict],
    missing: Iterable[Diagnostic],
) -> GatewayModel:
    """The model of ``frame`` with its candidate routes' verdicts before cross serving is
    settled (``attach_candidate``, in candidate order) and the findings about their parentRefs
    naming no Gateway in the input (``parents_not_found``, in the same order). Pure."""
    if state.grpcroutes or state.streamroutes:
        routes = settle_cross_serving(list(attached))
    else:  # HTTPRoutes alone: nothing to settle, and no walk over every route to say so
        routes = tuple(attached)
    return GatewayModel(
        **{f.name: getattr(frame, f.name) for f in fields(ParentVerdicts)},
        routes=routes,
        backend_tls=judge_backend_tls(
            state,
            services,
            (
                (attachment.listener.gateway.meta.key, backend)
                for route in routes
                for parent in route.parents
                for attachment in parent.attachments
                for backend in route.compiled.backends
            ),
            one_gateway=isinstance(frame.scope, GatewayScope),
        ),
        dangling=(*frame.classes_missing, *missing, *frame.sets_missing),
    )


def _in_scope(
    gateway: Gateway,
    scope: Scope | None,
    refused: dict[ObjectKey, Condition],
    placements: dict[ObjectKey, Placement],
) -> bool:
    key = gateway.meta.key
    if scope is None:
        return True
    placed = placements.get(key)
    if placed is None or key in refused:
        return False
    if isinstance(scope, GatewayScope):
        return placed.dedicated
    return placed.in_shared_pool


def _ports(
    state: ClusterState,
    config: CompileConfig,
    scope: Scope | None,
    gateways: tuple[Gateway, ...],
    listeners: dict[ObjectKey, list[ListenerVerdict]],
    placements: dict[ObjectKey, Placement],
) -> tuple[dict[tuple[str, int], int | None], dict[tuple[str, int], str]]:
    """Shared-pool Gateways get internal ports; a dedicated proxy binds the spec ports. Also
    why a pair got no port."""
    ports: dict[tuple[str, int], int | None] = {}
    pooled: list[Gateway] = []
    for gateway in gateways:
        placed = placements.get(gateway.meta.key)
        if placed is None:
            continue
        if isinstance(scope, GatewayScope) or (scope is None and not placed.in_shared_pool):
            for verdict in listeners[gateway.meta.key]:
                ports[(gateway.meta.key.ref, verdict.listener.port)] = verdict.listener.port
        else:
            pooled.append(gateway)
    if isinstance(scope, GatewayScope):
        return ports, {}
    if scope is None:
        # The allocation must be the one the SharedPool scope makes: only pooled Gateways.
        pooled = [g for g in pooled if placements[g.meta.key].in_shared_pool]
    existing, reserved = vip_memory(state, config.namespace, {g.meta.key.ref for g in pooled})
    pairs = {
        (g.meta.key.ref, v.listener.port)
        for g in pooled
        for v in listeners[g.meta.key]
        if v.listener.protocol in SUPPORTED_PROTOCOLS
    }
    share = config.shared_ports_per_namespace
    refused = outside_share(pairs, existing, share)
    ports.update(allocate_ports(pairs - refused, existing=existing, reserved=reserved))
    refusals: dict[tuple[str, int], str] = {}
    for pair in sorted(pairs):
        if pair in refused:
            namespace = pair[0].partition("/")[0]
            refusals[pair] = (
                f"namespace {namespace} already has its share of {share} internal ports of "
                "the shared pool (--shared-ports-per-namespace)"
            )
            ports[pair] = None
        elif ports[pair] is None:
            refusals[pair] = (
                f"every internal port of the shared pool ({PORT_BAND.start}-"
                f"{PORT_BAND.stop - 1}) is taken"
            )
    return ports, refusals


def own_listeners(
    listeners: dict[ObjectKey, list[ListenerVerdict]], gateway: ObjectKey
) -> list[ListenerVerdict]:
    """The listeners a Gateway declares itself, out of its merged list: its status, its top
    conditions and its parentRefs know only those (GEP-1713, "Gateway Conditions")."""
    return [v for v in listeners.get(gateway, ()) if v.owner == gateway]


def candidate_routes(state: ClusterState, frame: ParentFrame) -> list[Route | StreamRoute]:
    """The routes ``frame``'s scope reads, in key order."""
    if isinstance(frame.scope, GatewayScope):
        # One Gateway's scope reads only the routes that name it or its ListenerSets (the
        # state's index, by namespace and name: attach_route checks the kind).
        parents = [
            (frame.scope.namespace, frame.scope.name),
            *(
                (s.listener_set.meta.key.namespace, s.listener_set.meta.key.name)
                for s in frame.listener_sets
            ),
        ]
        keys = sorted(
            {k for parent in parents for k in state.routes_by_parent.get(parent, ())}, key=_ORDER
        )
    else:
        keys = sorted([*state.grpcroutes, *state.httproutes, *state.streamroutes], key=_ORDER)
    found: list[Route | StreamRoute] = []
    for key in keys:
        if key.kind == "HTTPRoute":
            found.append(state.httproutes[key])
        elif key.kind == "GRPCRoute":
            found.append(state.grpcroutes[key])
        else:
            found.append(state.streamroutes[key])
    return found


def attach_candidate(
    route: Route | StreamRoute,
    frame: ParentFrame,
    state: ClusterState,
    services: ServiceIndex,
    cache: RouteCache | None,
) -> RouteVerdict | None:
    """One candidate route attached against ``frame``'s listeners, before cross serving is
    settled; None when none of its parentRefs names one of our Gateways or ListenerSets."""
    parents = attach_route(route, frame.parents_of, state.namespaces, frame.detached)
    if not parents:
        return None
    compiled = (
        compile_any_route(route, services, frame.grants)
        if cache is None
        else cache.route(route, services, frame.grants)
    )
    if compiled.accepted is not None:
        parents = [
            ParentVerdict(ref=p.ref, parent=p.parent, accepted=compiled.accepted, attachments=())
            for p in parents
        ]
    return RouteVerdict(compiled=compiled, parents=tuple(parents))


def _class_not_found(gateway: Gateway) -> Diagnostic:
    return Diagnostic(
        key=gateway.meta.key,
        field="spec.gatewayClassName",
        severity=Severity.WARNING,
        reason="GatewayClassNotFound",
        message=f"GatewayClass {gateway.class_name!r} is not in the input; the Gateway is ignored",
    )


def parents_not_found(route: Route | StreamRoute, state: ClusterState) -> list[Diagnostic]:
    """Warnings for ``route``'s parentRefs naming a Gateway that is not in the input."""
    found: list[Diagnostic] = []
    for ref in route.parent_refs:
        key = ObjectKey("Gateway", ref.namespace or route.meta.key.namespace, ref.name)
        if (ref.group, ref.kind) == (GATEWAY_GROUP, "Gateway") and key not in state.gateways:
            found.append(
                Diagnostic(
                    key=route.meta.key,
                    field=ref.field,
                    severity=Severity.WARNING,
                    reason="GatewayNotFound",
                    message=f"Gateway {key.ref} is not in the input; this parentRef is ignored",
                )
            )
    return found


def _judged_addresses(
    state: ClusterState,
    config: CompileConfig,
    classes: set[str],
    candidates: list[Gateway],
    placements: dict[ObjectKey, Placement],
) -> dict[ObjectKey, Addresses]:
    """Judge each placed Gateway's ``spec.addresses`` against the Service that reaches it now
    (its dedicated proxy's once ready, else its VIP Service) and the other Gateways' claims."""
    owners = address_owners(  # most Gateways ask for no address: checked first, per scope
        g
        for g in state.gateways.values()
        if g.addresses and g.class_name in classes and unsupported_address(g) is None
    )
    judged: dict[ObjectKey, Addresses] = {}
    for gateway in candidates:
        key = gateway.meta.key
        placed = placements.get(key)
        if placed is None:
            continue
        if placed.dedicated and placed.ready:
            name = ObjectKey("Service", key.namespace, placed.name)
        else:
            vip = vip_service_name(key.namespace, key.name)
            name = ObjectKey("Service", config.namespace, vip)
        service = state.services.get(name)
        judged[key] = judge_addresses(gateway, config, service, service_addresses(service), owners)
    return judged


_EMPTY: Final = GatewayModel(
    classes=(),
    class_accepted={},
    gateways=(),
    unserved=(),
    gateway_accepted={},
    placements={},
    addresses={},
    listeners={},
    listener_sets=(),
    gateway_refs={},
    ports={},
    routes=(),
    backend_tls=NO_POLICIES,
    dangling=(),
)
