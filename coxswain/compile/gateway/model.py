"""The Gateway API passes run in order, giving one ``GatewayModel`` that both the snapshot and
the statuses are read from (so they can never disagree).

Order: our GatewayClasses → our Gateways → listener verdicts → internal ports (remembered by
the VIP Services) → routes compiled once each → attached to listeners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.compile.gateway.attach import ParentVerdict, attach_route
from coxswain.compile.gateway.httproute import CompiledRoute, compile_route
from coxswain.compile.gateway.listeners import (
    SUPPORTED_PROTOCOLS,
    ListenerVerdict,
    judge_listeners,
)
from coxswain.compile.gateway.ports import allocate_ports
from coxswain.compile.gateway.refgrants import index_grants
from coxswain.compile.gateway.vip import vip_addresses, vip_memory
from coxswain.compile.status import Condition

if TYPE_CHECKING:
    from pyrsistent.typing import PMap

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.config import CompileConfig
    from coxswain.compile.model.gateway_objects import Gateway, GatewayClass, ObjectRef
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.state import ClusterState

__all__ = ["GatewayModel", "RouteVerdict", "analyse_gateways"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteVerdict:
    """A compiled route and the outcome of each parentRef naming one of our Gateways."""

    compiled: CompiledRoute
    parents: tuple[ParentVerdict, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayModel:
    """Everything the Gateway API passes decided.

    ``class_accepted`` and ``gateway_accepted`` hold the ``Accepted`` condition of each class
    and Gateway when it is False (a parametersRef that cannot be used, a class not accepted);
    ``unassigned_addresses`` the Gateways whose ``spec.addresses`` cannot be honoured.
    """

    classes: tuple[GatewayClass, ...]
    class_accepted: dict[str, Condition]
    gateways: tuple[Gateway, ...]
    gateway_accepted: dict[ObjectKey, Condition]
    unassigned_addresses: frozenset[ObjectKey]
    addresses: dict[ObjectKey, list[tuple[str, str]]]
    listeners: dict[ObjectKey, list[ListenerVerdict]]
    ports: dict[tuple[str, int], int | None]
    routes: tuple[RouteVerdict, ...]


def analyse_gateways(
    state: ClusterState, config: CompileConfig, services: ServiceIndex
) -> GatewayModel:
    """Run the Gateway API passes. Pure."""
    classes = tuple(
        c
        for _, c in sorted(state.gateway_classes.items())
        if c.controller_name == config.gateway_controller
    )
    names = {c.meta.key.name for c in classes}
    gateways = tuple(g for _, g in sorted(state.gateways.items()) if g.class_name in names)
    class_refused = {
        c.meta.key.name: refusal
        for c in classes
        if (refusal := _parameters_refusal(c.parameters_ref, "GatewayClass")) is not None
    }
    refused: dict[ObjectKey, Condition] = {}
    for gateway in gateways:
        if gateway.class_name in class_refused:
            refused[gateway.meta.key] = Condition(
                type="Accepted",
                status=False,
                reason="Invalid",
                message=f"GatewayClass {gateway.class_name} is not accepted",
            )
        elif (refusal := _parameters_refusal(gateway.parameters_ref, "Gateway")) is not None:
            refused[gateway.meta.key] = refusal
    grants = index_grants(state)
    listeners = {g.meta.key: judge_listeners(g, state, grants) for g in gateways}
    for key in refused:
        for verdict in listeners[key]:
            verdict.gateway_accepted = False
    served = [g for g in gateways if g.meta.key not in refused]
    existing, reserved = vip_memory(state, config.namespace, {g.meta.key.ref for g in served})
    ports = allocate_ports(
        (
            (g.meta.key.ref, v.listener.port)
            for g in served
            for v in listeners[g.meta.key]
            if v.listener.protocol in SUPPORTED_PROTOCOLS
        ),
        existing=existing,
        reserved=reserved,
    )
    labels: dict[str, PMap[str, str]] = {k.name: n.meta.labels for k, n in state.namespaces.items()}
    routes: list[RouteVerdict] = []
    for _, route in sorted(state.httproutes.items()):
        parents = attach_route(route, listeners, labels)
        if not parents:
            continue
        compiled = compile_route(route, services, grants)
        if compiled.accepted is not None:
            parents = [
                ParentVerdict(
                    ref=p.ref, gateway=p.gateway, accepted=compiled.accepted, attachments=()
                )
                for p in parents
            ]
        routes.append(RouteVerdict(compiled=compiled, parents=tuple(parents)))
    return GatewayModel(
        classes=classes,
        class_accepted=class_refused,
        gateways=gateways,
        gateway_accepted=refused,
        unassigned_addresses=frozenset(g.meta.key for g in gateways if g.addresses),
        addresses={
            g.meta.key: vip_addresses(state, config.namespace, *g.meta.key.ref.split("/", 1))
            for g in served
        },
        listeners=listeners,
        ports=ports,
        routes=tuple(routes),
    )


PARAMETERS_KIND: Final = ("gateway.coxswain-labs.dev", "CoxswainGatewayParameters")


def _parameters_refusal(ref: ObjectRef | None, owner: str) -> Condition | None:
    """``Accepted=False/InvalidParameters`` for a parametersRef of a kind we do not read.

    Gateway API: "If the referent cannot be found, refers to an unsupported kind, or when the
    data within that resource is malformed, the Gateway SHOULD be rejected with the Accepted
    status condition set to False and an InvalidParameters reason."
    """
    if ref is None or (ref.group, ref.kind) == PARAMETERS_KIND:
        return None
    group = ref.group or "core"
    return Condition(
        type="Accepted",
        status=False,
        reason="InvalidParameters",
        message=f"{owner} parametersRef {group}/{ref.kind} {ref.name}: only "
        f"{PARAMETERS_KIND[0]}/{PARAMETERS_KIND[1]} is supported",
    )
