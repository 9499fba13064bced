"""Desired statuses of our GatewayClasses, Gateways and HTTPRoutes (Gateway API v1 status).

Rules:
1. GatewayClass: ``Accepted=True`` and ``supportedFeatures`` listing exactly what is implemented,
   by conformance name, sorted.
2. Gateway: ``addresses`` (its VIP Service's load-balancer or cluster address), ``Accepted``
   (``ListenersNotValid`` when some listener is refused, False when all are), ``Programmed``
   (True when some listener is programmed), and per listener ``supportedKinds``,
   ``attachedRoutes`` and the conditions Accepted, Conflicted, ResolvedRefs, Programmed.
   Programmed needs a proxy to have bound the listener's port and acked a snapshot compiled
   from the Gateway's current generation (ARCHITECTURE §5); offline (no fleet) a listener that
   compiled cleanly counts as programmed.
3. HTTPRoute: one ``parents`` entry per parentRef naming one of our Gateways, with
   ``parentRef`` written out with group and kind, ``controllerName``, and the conditions
   Accepted, ResolvedRefs, and PartiallyInvalid when some rules are not served.
Every condition carries the object's generation; no timestamps (the shell adds them).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from coxswain.compile.gateway.cells import attached_counts
from coxswain.compile.status import Condition, ObjectStatus, condition_data

if TYPE_CHECKING:
    from collections.abc import Collection

    from coxswain.compile.config import CompileConfig
    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.model import GatewayModel, RouteVerdict
    from coxswain.compile.model.gateway_objects import Gateway

__all__ = ["SUPPORTED_FEATURES", "gateway_statuses"]

API_VERSION: Final = "gateway.networking.k8s.io/v1"

SUPPORTED_FEATURES: Final = (
    "Gateway",
    "GatewayFrontendClientCertificateValidation",
    "GatewayFrontendClientCertificateValidationInsecureFallback",
    "GatewayPort8080",
    "HTTPRoute",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendRequestHeaderModification",
    "HTTPRouteBackendTimeout",
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
    "ReferenceGrant",
)


def gateway_statuses(
    model: GatewayModel, config: CompileConfig, programmed: Collection[tuple[str, int]] | None
) -> list[ObjectStatus]:
    """Every desired status the Gateway API passes own. Pure.

    Args:
        model: the analysis.
        config: for the controller name.
        programmed: ``(ns/name, port)`` of each Gateway port some proxy has bound after acking
            a snapshot of the Gateway's current generation; None offline.
    """
    found: list[ObjectStatus] = []
    for gateway_class in model.classes:
        accepted = model.class_accepted.get(
            gateway_class.meta.key.name, Condition(type="Accepted", status=True, reason="Accepted")
        )
        body = {
            "conditions": [condition_data(accepted, gateway_class.meta.generation)],
            "supportedFeatures": [{"name": name} for name in sorted(SUPPORTED_FEATURES)],
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
    counts = attached_counts(model)
    for gateway in model.gateways:
        found.append(_gateway_status(gateway, model, counts, programmed))
    for route in model.routes:
        found.append(_route_status(route, config))
    return found


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


def _gateway_status(
    gateway: Gateway,
    model: GatewayModel,
    counts: dict[int, int],
    programmed: Collection[tuple[str, int]] | None,
) -> ObjectStatus:
    generation = gateway.meta.generation
    listeners: list[dict[str, Any]] = []
    refused: list[str] = []
    programmed_any = False
    for verdict in model.listeners[gateway.meta.key]:
        port = model.ports.get((gateway.meta.key.ref, verdict.listener.port))
        condition = _programmed(verdict, gateway.meta.key.ref, port, programmed)
        programmed_any = programmed_any or condition.status
        if not verdict.serving:
            refused.append(verdict.listener.name)
        listeners.append(
            {
                "name": verdict.listener.name,
                "supportedKinds": [{"group": g, "kind": k} for g, k in verdict.supported_kinds],
                "attachedRoutes": counts.get(id(verdict), 0),
                "conditions": [
                    condition_data(c, generation)
                    for c in (
                        verdict.accepted,
                        verdict.conflicted,
                        condition,
                        verdict.resolved_refs,
                    )
                ],
            }
        )
    total = len(listeners)
    rejection = model.gateway_accepted.get(gateway.meta.key)
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
    elif gateway.meta.key in model.unassigned_addresses:
        # GatewaySpec.addresses: a requested address that cannot be honoured MUST be reported.
        gateway_programmed = Condition(
            type="Programmed",
            status=False,
            reason="AddressNotAssigned",
            message="spec.addresses cannot be assigned: shared Gateways are reached on their "
            "VIP Service's address",
        )
    else:
        gateway_programmed = Condition(type="Programmed", status=True, reason="Programmed")
    body: dict[str, Any] = {
        "conditions": [condition_data(c, generation) for c in (accepted, gateway_programmed)],
        "listeners": listeners,
    }
    if addresses := model.addresses.get(gateway.meta.key):
        body["addresses"] = [{"type": kind, "value": value} for kind, value in addresses]
    return _status("Gateway", gateway.meta.key.namespace, gateway.meta.key.name, generation, body)


def _programmed(
    verdict: ListenerVerdict,
    gateway: str,
    port: int | None,
    programmed: Collection[tuple[str, int]] | None,
) -> Condition:
    if not verdict.serving:
        return Condition(
            type="Programmed", status=False, reason="Invalid", message="the listener is not valid"
        )
    if port is None:
        return Condition(
            type="Programmed",
            status=False,
            reason="Pending",
            message="no internal port is free in 30000-32767",
        )
    if programmed is not None and (gateway, port) not in programmed:
        return Condition(
            type="Programmed",
            status=False,
            reason="Pending",
            message=f"no proxy has bound port {port} and acked this generation yet",
        )
    return Condition(type="Programmed", status=True, reason="Programmed")


def _route_status(route: RouteVerdict, config: CompileConfig) -> ObjectStatus:
    meta = route.compiled.route.meta
    parents = []
    for parent in route.parents:
        ref = parent.ref
        written: dict[str, Any] = {
            "group": ref.group,
            "kind": ref.kind,
            "name": ref.name,
            "namespace": parent.gateway.namespace,
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
                    condition_data(c, meta.generation)
                    for c in (
                        parent.accepted,
                        route.compiled.resolved_refs,
                        route.compiled.partially_invalid,
                    )
                    if c is not None
                ],
            }
        )
    return _status(
        "HTTPRoute", meta.key.namespace, meta.key.name, meta.generation, {"parents": parents}
    )
