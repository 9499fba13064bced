"""Desired statuses of our GatewayClasses, Gateways, ListenerSets, HTTPRoutes and GRPCRoutes
(Gateway API v1 status).

Rules:
1. GatewayClass: ``Accepted=True`` and ``supportedFeatures`` listing exactly what is implemented,
   by conformance name, sorted; GRPCRoute's features and HTTPRouteBackendProtocolH2C only
   while the proxies serve HTTP/2 (``CompileConfig.serves_http2``, on by default).
2. Gateway: ``addresses`` (:mod:`.addresses`: its static addresses, or its Service's
   load-balancer or cluster address), ``Accepted``
   (``ListenersNotValid`` when some listener is refused, False when all are), ``Programmed``
   (True when some listener is programmed), and per listener ``supportedKinds``,
   ``attachedRoutes`` and the conditions Accepted, Conflicted, ResolvedRefs, Programmed.
   Programmed needs a proxy to have bound the listener's port and acked a snapshot compiled
   from the Gateway's current generation (docs/contracts.md, "The discovery protocol");
   offline (no fleet) a listener that compiled cleanly counts as programmed. A conflicted
   listener's ``Programmed=False`` carries the conflict's reason (as the ListenerSet
   conformance tests expect), any other invalid listener's ``Invalid``. The Gateway's status
   and top conditions know its own listeners only (GEP-1713, "Gateway Conditions");
   ``attachedListenerSets`` counts its accepted ListenerSets, written whenever its
   ``allowedListeners`` admits some namespace or a ListenerSet names it (the field is
   optional, and a Gateway that takes no ListenerSet has nothing to count).
3. ListenerSet (:mod:`.listenersets`): ``Accepted`` and ``Programmed``, and per listener what a
   Gateway's listener has; a ListenerSet its Gateway does not admit lists no listener.
4. HTTPRoute and GRPCRoute: one ``parents`` entry per parentRef naming one of our Gateways or
   ListenerSets, with
   ``parentRef`` written out with group and kind, ``controllerName``, and the conditions
   Accepted, ResolvedRefs, and PartiallyInvalid when some rules are not served.
5. BackendTLSPolicy (:mod:`.backend_tls`): one ``ancestors`` entry per Gateway of ours its
   targets are reached through, ``ancestorRef`` the Gateway, ``controllerName``, and the
   policy's Accepted and ResolvedRefs; none when no route of ours reaches a target.
Every condition carries the object's generation; no timestamps (the shell adds them).

``gateway_diagnostics`` reports the same conditions: each problem condition carries the
diagnostics that explain it (``status.problem``), except those that sum up others of the same
object (a Gateway's ``ListenersNotValid``, ``Programmed=False/Invalid`` of a listener or Gateway
that is not valid), whose causes are reported.
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Protocol

from coxswain.compile.gateway.cells import attached_counts
from coxswain.compile.gateway.listenersets import listener_set_accepted
from coxswain.compile.gateway.model import own_listeners
from coxswain.compile.model.gateway_objects import GATEWAY_GROUP
from coxswain.compile.status import Condition, ObjectStatus, condition_data

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Hashable, Iterable, Mapping

    from coxswain.compile.config import CompileConfig
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.attach import ParentVerdict, RouteVerdict
    from coxswain.compile.gateway.backend_tls import PolicyVerdict
    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.listenersets import ListenerSetVerdict
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.gateway_objects import Gateway, GatewayClass

__all__ = [
    "EXPERIMENTAL_FEATURES",
    "HTTP2_FEATURES",
    "SUPPORTED_FEATURES",
    "StatusCache",
    "frame_diagnostics",
    "gateway_diagnostics",
    "gateway_status",
    "gateway_statuses",
    "listener_set_status",
    "policy_diagnostics",
    "policy_status",
    "route_diagnostics",
    "route_status",
    "supported_features",
]

API_VERSION: Final = "gateway.networking.k8s.io/v1"

SUPPORTED_FEATURES: Final = (
    "BackendTLSPolicy",
    "BackendTLSPolicySANValidation",
    "Gateway",
    "GatewayBackendClientCertificate",
    "GatewayAddressEmpty",
    "GatewayFrontendClientCertificateValidation",
    "GatewayFrontendClientCertificateValidationInsecureFallback",
    "GatewayHTTPListenerIsolation",
    "GatewayHTTPSListenerDetectMisdirectedRequests",
    "GatewayInfrastructurePropagation",
    "GatewayPort8080",
    "HTTPRoute",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendProtocolWebSocket",
    "HTTPRouteBackendRequestHeaderModification",
    "HTTPRouteBackendTimeout",
    "HTTPRouteCORS",
    "HTTPRouteHostRewrite",
    "HTTPRouteMethodMatching",
    "HTTPRouteNamedRouteRule",
    "HTTPRouteParentRefPort",
    "HTTPRoutePathRedirect",
    "HTTPRoutePathRewrite",
    "HTTPRoutePortRedirect",
    "HTTPRouteQueryParamMatching",
    "HTTPRouteRequestMirror",
    "HTTPRouteRequestMultipleMirrors",
    "HTTPRouteRequestPercentageMirror",
    "HTTPRouteRequestTimeout",
    "HTTPRouteResponseHeaderModification",
    "HTTPRouteSchemeRedirect",
    "ListenerSet",
    "ReferenceGrant",
    "TCPRoute",
    "TLSRoute",
    "TLSRouteModeTerminate",
    "UDPRoute",
)
"""What the project passes, by conformance name (tests/conformance runs each scenario live)."""
EXPERIMENTAL_FEATURES: Final = (
    "HTTPRouteDestinationPortMatching",
    "HTTPRouteRetry",
    "HTTPRouteRetryBackendTimeout",
    "HTTPRouteRetryConnectionError",
    "TLSRouteModeMixed",
)
"""Features whose fields only the experimental channel's CRDs have (``parentRefs[].port`` on
HTTPRoute, ``rules[].retry``), and ``TLSRouteModeMixed``, an experimental-channel feature
(GEP-2643; Passthrough and Terminate TLS listeners on one port conflict elsewhere,
:mod:`.listeners` rule 2): declared only when the cluster has that channel installed."""
HTTP2_FEATURES: Final = ("GRPCRoute", "GRPCRouteNamedRouteRule", "HTTPRouteBackendProtocolH2C")
"""GRPCRoute (the core of the ``GATEWAY-GRPC`` conformance profile), its named rules, and HTTP/2
with prior knowledge to ``kubernetes.io/h2c`` Service ports (KEP-3726): compiled and reported
always, declared only when the proxies speak HTTP/2 to clients and backends, which gRPC needs
(GEP-1016, "Transport"; ``CompileConfig.serves_http2``, on by default)."""


def supported_features(config: CompileConfig) -> list[str]:
    """The GatewayClass ``supportedFeatures`` for the installed channel, settings and data
    plane, sorted: GatewayStaticAddresses only where static addresses may be given
    (:mod:`.addresses`)."""
    experimental = config.gateway_api_channel == "experimental"
    return sorted(
        (
            *SUPPORTED_FEATURES,
            *(EXPERIMENTAL_FEATURES if experimental else ()),
            *(("GatewayStaticAddresses",) if config.gateway_address_ranges else ()),
            *(HTTP2_FEATURES if config.serves_http2 else ()),
        )
    )


class StatusCache(Protocol):
    """Remembers statuses between calls (``compile.status_memo``)."""

    def made(
        self,
        key: tuple[str, str, str],
        same: tuple[object, ...],
        equal: Hashable,
        make: Callable[[], ObjectStatus],
    ) -> ObjectStatus:
        """The status of ``key`` (kind, namespace, name) that ``make`` gives; that of the
        last call for ``key`` while ``same`` are the same objects and ``equal`` equal."""
        ...


def gateway_statuses(
    model: GatewayModel,
    config: CompileConfig,
    programmed: Collection[tuple[str, int]] | None,
    cache: StatusCache | None = None,
    counts: Mapping[int, int] | None = None,
) -> list[ObjectStatus]:
    """Every desired status the Gateway API passes own. Pure.

    Args:
        model: the analysis.
        config: for the controller name.
        programmed: ``(ns/name, port)`` of each Gateway port some proxy has bound after acking
            a snapshot of the Gateway's current generation; None offline.
        cache: remembers statuses (the result is the same without it). A Gateway's or
            ListenerSet's status reads the passes before the routes' (``model.listeners``
            is theirs: a new analysis makes a new one), its listeners' attached routes and
            its Gateway's programmed ports; a route's, its verdict.
        counts: ``gateway.cells.attached_counts(model)``, when the caller has it.
    """
    found: list[ObjectStatus] = []
    for gateway_class in model.classes:
        accepted = _class_accepted(gateway_class, model)
        body = {
            "conditions": [condition_data(accepted, gateway_class.meta.generation)],
            "supportedFeatures": [{"name": name} for name in supported_features(config)],
        }
        found.append(
            _status(
                "GatewayClass",
                gateway_class.meta.key.namespace,
                gateway_class.meta.key.name,
                gateway_class.meta.generation,
                body,
            )
        )
    counts = attached_counts(model) if counts is None else counts
    ports = _programmed_ports(programmed)
    for gateway in model.gateways:
        key = gateway.meta.key
        found.append(
            _made(
                cache,
                ("Gateway", key.namespace, key.name),
                (model.listeners, gateway, config),
                (tuple(counts.get(id(v), 0) for v in model.listeners[key]), ports(key.ref)),
                partial(gateway_status, gateway, model, counts, programmed),
            )
        )
    for listener_set in model.listener_sets:
        key = listener_set.listener_set.meta.key
        found.append(
            _made(
                cache,
                ("ListenerSet", key.namespace, key.name),
                (model.listeners, listener_set, config),
                (
                    tuple(counts.get(id(v), 0) for v in listener_set.listeners),
                    ports(listener_set.gateway.ref),
                ),
                partial(listener_set_status, listener_set, model, counts, programmed),
            )
        )
    for route in model.routes:
        key = route.compiled.route.meta.key
        found.append(
            _made(
                cache,
                (key.kind, key.namespace, key.name),
                (route, config),
                None,
                partial(route_status, route, config),
            )
        )
    for policy in model.backend_tls.verdicts:
        found.append(policy_status(policy, config))
    return found


def _made(
    cache: StatusCache | None,
    key: tuple[str, str, str],
    same: tuple[object, ...],
    equal: Hashable,
    make: Callable[[], ObjectStatus],
) -> ObjectStatus:
    return make() if cache is None else cache.made(key, same, equal, make)


def _programmed_ports(
    programmed: Collection[tuple[str, int]] | None,
) -> Callable[[str], tuple[int, ...] | None]:
    """The programmed ports of a Gateway (``ns/name``), in order; None offline."""
    if programmed is None:
        return lambda _: None
    by_gateway: dict[str, list[int]] = {}
    for gateway, port in programmed:
        by_gateway.setdefault(gateway, []).append(port)
    return lambda gateway: tuple(sorted(by_gateway.get(gateway, ())))


def gateway_diagnostics(model: GatewayModel) -> list[Diagnostic]:
    """The findings of every problem condition ``gateway_statuses`` writes offline, refused
    Gateways outside the scope included, and those of references to objects not in the input
    (the frame's, the policies', each route's). Pure."""
    return [
        *frame_diagnostics(model),
        *policy_diagnostics(model),
        *(d for r in model.routes for d in route_diagnostics(r)),
        *model.dangling,
    ]


def frame_diagnostics(model: GatewayModel) -> list[Diagnostic]:
    """Those of ``gateway_diagnostics`` the passes before the routes' decide: the classes',
    ListenerSets' and Gateways' conditions (``compile.model_findings`` keeps them while those
    passes' verdicts are the same objects)."""
    conditions = [_class_accepted(c, model) for c in model.classes]
    for listener_set in model.listener_sets:
        top, listeners = _listener_set_conditions(listener_set, model, None)
        conditions.extend(top)
        conditions.extend(c for _, listener in listeners for c in listener)
    return [
        *(d for c in conditions for d in c.diagnostics),
        *(d for g in (*model.gateways, *model.unserved) for d in _gateway_findings(g, model)),
    ]


def policy_diagnostics(model: GatewayModel) -> list[Diagnostic]:
    """Those of ``gateway_diagnostics`` about the BackendTLSPolicies reported."""
    policies = model.backend_tls.reported
    return [
        *(d for p in policies for c in (p.accepted, p.resolved_refs) for d in c.diagnostics),
        *(d for p in policies for d in (*p.policy.diagnostics, *p.warnings)),
    ]


def route_diagnostics(route: RouteVerdict) -> list[Diagnostic]:
    """Those of ``gateway_diagnostics`` about one route: its conditions' and its notes."""
    found = _route_findings(route) if route.parents else []
    found.extend(route.notes)
    return found


def _gateway_findings(gateway: Gateway, model: GatewayModel) -> list[Diagnostic]:
    """The diagnostics of a Gateway's conditions offline (``_gateway_conditions``), without
    making the conditions that only sum up others (they carry none: the module docstring)."""
    key = gateway.meta.key
    found: list[Diagnostic] = []
    programmed_any = False
    for verdict in own_listeners(model.listeners, key):
        found.extend(verdict.accepted.diagnostics)
        found.extend(verdict.conflicted.diagnostics)
        found.extend(verdict.resolved_refs.diagnostics)
        programmed_any = programmed_any or _programmed_offline(verdict, key.ref, model)
    rejection = model.gateway_accepted.get(key)
    if rejection is not None:
        found.extend(rejection.diagnostics)
    elif programmed_any and (judged := model.addresses.get(key)) is not None:
        found.extend(() if judged.programmed is None else judged.programmed.diagnostics)
    found.extend(d for c in model.gateway_refs[key].conditions for d in c.diagnostics)
    return found


def _programmed_offline(verdict: ListenerVerdict, gateway: str, model: GatewayModel) -> bool:
    """Whether a listener's Programmed condition offline (``_programmed``) is True."""
    return (
        not verdict.conflicted.status
        and verdict.serving
        and model.ports.get((gateway, verdict.listener.port)) is not None
    )


def _route_findings(route: RouteVerdict) -> list[Diagnostic]:
    """The diagnostics of a route's conditions under its parentRefs (``_parent_conditions``;
    its ResolvedRefs and PartiallyInvalid are the same under each)."""
    compiled = route.compiled
    found = [d for parent in route.parents for d in parent.accepted.diagnostics]
    found.extend(compiled.resolved_refs.diagnostics)
    if compiled.partially_invalid is not None:
        found.extend(compiled.partially_invalid.diagnostics)
    return found


def _class_accepted(gateway_class: GatewayClass, model: GatewayModel) -> Condition:
    return model.class_accepted.get(
        gateway_class.meta.key.name, Condition(type="Accepted", status=True, reason="Accepted")
    )


def _status(
    kind: str, namespace: str, name: str, generation: int, body: dict[str, Any]
) -> ObjectStatus:
    return ObjectStatus(
        api_version=API_VERSION,
        kind=kind,
        namespace=namespace,
        name=name,
        generation=generation,
        body=json.dumps(body, sort_keys=True, separators=(",", ":")),
    )


def gateway_status(
    gateway: Gateway,
    model: GatewayModel,
    counts: Mapping[int, int],
    programmed: Collection[tuple[str, int]] | None,
) -> ObjectStatus:
    key, generation = gateway.meta.key, gateway.meta.generation
    top, conditions = _gateway_conditions(gateway, model, programmed)
    body: dict[str, Any] = {
        "conditions": [condition_data(c, generation) for c in top],
        "listeners": _listeners_data(conditions, counts, generation),
    }
    judged = model.addresses.get(key)
    if judged is not None and judged.reported:
        body["addresses"] = [{"type": kind, "value": value} for kind, value in judged.reported]
    listener_sets = [s for s in model.listener_sets if s.gateway == key]
    if gateway.allowed_listeners.namespaces_from != "None" or listener_sets:
        body["attachedListenerSets"] = sum(listener_set_accepted(s).status for s in listener_sets)
    return _status("Gateway", key.namespace, key.name, generation, body)


def _listeners_data(
    conditions: list[tuple[ListenerVerdict, list[Condition]]],
    counts: Mapping[int, int],
    generation: int,
) -> list[dict[str, Any]]:
    return [
        {
            "name": verdict.listener.name,
            "supportedKinds": [{"group": g, "kind": k} for g, k in verdict.supported_kinds],
            "attachedRoutes": counts.get(id(verdict), 0),
            "conditions": [condition_data(c, generation) for c in listener],
        }
        for verdict, listener in conditions
    ]


def listener_set_status(
    verdict: ListenerSetVerdict,
    model: GatewayModel,
    counts: Mapping[int, int],
    programmed: Collection[tuple[str, int]] | None,
) -> ObjectStatus:
    meta = verdict.listener_set.meta
    top, conditions = _listener_set_conditions(verdict, model, programmed)
    body: dict[str, Any] = {"conditions": [condition_data(c, meta.generation) for c in top]}
    if conditions:
        body["listeners"] = _listeners_data(conditions, counts, meta.generation)
    return _status("ListenerSet", meta.key.namespace, meta.key.name, meta.generation, body)


def _listener_set_conditions(
    verdict: ListenerSetVerdict,
    model: GatewayModel,
    programmed: Collection[tuple[str, int]] | None,
) -> tuple[list[Condition], list[tuple[ListenerVerdict, list[Condition]]]]:
    """A ListenerSet's Accepted and Programmed (:mod:`.listenersets`, rule 4), and each
    listener's conditions with its verdict."""
    listeners = _listener_conditions(verdict.listeners, verdict.gateway.ref, model, programmed)
    accepted = listener_set_accepted(verdict)
    if not accepted.status:
        # The same reason, reported once: Accepted carries the finding.
        state = Condition(
            type="Programmed", status=False, reason=accepted.reason, message=accepted.message
        )
    elif any(c.type == "Programmed" and c.status for _, cs in listeners for c in cs):
        state = Condition(type="Programmed", status=True, reason="Programmed")
    else:
        state = Condition(
            type="Programmed",
            status=False,
            reason="Pending",
            message="no proxy has bound a port of its listeners and acked this generation yet",
        )
    return [accepted, state], listeners


def _listener_conditions(
    verdicts: Iterable[ListenerVerdict],
    gateway: str,
    model: GatewayModel,
    programmed: Collection[tuple[str, int]] | None,
) -> list[tuple[ListenerVerdict, list[Condition]]]:
    """Each listener's Accepted, Conflicted, Programmed and ResolvedRefs, with its verdict."""
    found = []
    for verdict in verdicts:
        port = model.ports.get((gateway, verdict.listener.port))
        condition = _programmed(verdict, gateway, port, programmed)
        found.append(
            (verdict, [verdict.accepted, verdict.conflicted, condition, verdict.resolved_refs])
        )
    return found


def _gateway_conditions(
    gateway: Gateway, model: GatewayModel, programmed: Collection[tuple[str, int]] | None
) -> tuple[list[Condition], list[tuple[ListenerVerdict, list[Condition]]]]:
    """The Gateway's conditions (Accepted, Programmed, then those of :mod:`.gateway_refs`),
    and each listener's with its verdict."""
    key = gateway.meta.key
    listeners = _listener_conditions(
        own_listeners(model.listeners, key), key.ref, model, programmed
    )
    refused = [verdict.listener.name for verdict, _ in listeners if not verdict.serving]
    programmed_any = any(c.type == "Programmed" and c.status for _, cs in listeners for c in cs)
    total = len(listeners)
    rejection = model.gateway_accepted.get(key)
    if rejection is not None:
        accepted = rejection
    elif not refused:
        accepted = Condition(type="Accepted", status=True, reason="Accepted")
    else:
        accepted = Condition(
            type="Accepted",
            status=len(refused) < total,
            reason="ListenersNotValid",
            message=f"listeners not valid: {', '.join(refused)}",
        )
    if rejection is not None or not programmed_any:
        gateway_programmed = Condition(
            type="Programmed", status=False, reason="Invalid", message="no listener is programmed"
        )
    elif (judged := model.addresses.get(key)) is not None and judged.programmed is not None:
        # GatewaySpec.addresses: a requested address that cannot be honoured MUST be reported.
        gateway_programmed = judged.programmed
    else:
        gateway_programmed = Condition(type="Programmed", status=True, reason="Programmed")
    return [accepted, gateway_programmed, *model.gateway_refs[key].conditions], listeners


def _programmed(
    verdict: ListenerVerdict,
    gateway: str,
    port: int | None,
    programmed: Collection[tuple[str, int]] | None,
) -> Condition:
    if verdict.conflicted.status:
        return Condition(
            type="Programmed",
            status=False,
            reason=verdict.conflicted.reason,
            message="the listener is conflicted",
        )
    if not verdict.serving or port is None:  # a served listener always has its port
        return Condition(
            type="Programmed", status=False, reason="Invalid", message="the listener is not valid"
        )
    if programmed is not None and (gateway, port) not in programmed:
        return Condition(
            type="Programmed",
            status=False,
            reason="Pending",
            message=f"no proxy has bound port {port} and acked this generation yet",
        )
    return Condition(type="Programmed", status=True, reason="Programmed")


def route_status(route: RouteVerdict, config: CompileConfig) -> ObjectStatus:
    meta = route.compiled.route.meta
    parents = []
    for parent in route.parents:
        ref = parent.ref
        written: dict[str, Any] = {
            "group": ref.group,
            "kind": ref.kind,
            "name": ref.name,
            "namespace": parent.parent.namespace,
        }
        if ref.section_name is not None:
            written["sectionName"] = ref.section_name
        if ref.port is not None:
            written["port"] = ref.port
        parents.append(
            {
                "parentRef": written,
                "controllerName": config.gateway_controller,
                "conditions": [
                    condition_data(c, meta.generation) for c in _parent_conditions(route, parent)
                ],
            }
        )
    return _status(
        meta.key.kind, meta.key.namespace, meta.key.name, meta.generation, {"parents": parents}
    )


def policy_status(verdict: PolicyVerdict, config: CompileConfig) -> ObjectStatus:
    meta = verdict.policy.meta
    conditions = [
        condition_data(c, meta.generation) for c in (verdict.accepted, verdict.resolved_refs)
    ]
    ancestors = [
        {
            "ancestorRef": {
                "group": GATEWAY_GROUP,
                "kind": "Gateway",
                "namespace": gateway.namespace,
                "name": gateway.name,
            },
            "controllerName": config.gateway_controller,
            "conditions": conditions,
        }
        for gateway in verdict.ancestors
    ]
    return _status(
        "BackendTLSPolicy",
        meta.key.namespace,
        meta.key.name,
        meta.generation,
        {"ancestors": ancestors},
    )


def _parent_conditions(route: RouteVerdict, parent: ParentVerdict) -> list[Condition]:
    """A route's conditions under one parentRef: Accepted, ResolvedRefs, PartiallyInvalid."""
    compiled = route.compiled
    return [
        c
        for c in (parent.accepted, compiled.resolved_refs, compiled.partially_invalid)
        if c is not None
    ]
