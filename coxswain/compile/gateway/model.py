"""The Gateway API passes run in order, giving one ``GatewayModel`` that both the snapshot and
the statuses are read from (so they can never disagree).

Order: our GatewayClasses → our Gateways → listener verdicts → internal ports → routes compiled
once each → attached to listeners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.gateway.attach import ParentVerdict, attach_route
from coxswain.compile.gateway.httproute import CompiledRoute, compile_route
from coxswain.compile.gateway.listeners import (
    SUPPORTED_PROTOCOLS,
    ListenerVerdict,
    judge_listeners,
)
from coxswain.compile.gateway.ports import allocate_ports
from coxswain.compile.gateway.refgrants import index_grants

if TYPE_CHECKING:
    from pyrsistent.typing import PMap

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.config import CompileConfig
    from coxswain.compile.model.gateway_objects import Gateway, GatewayClass
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
    """Everything the Gateway API passes decided."""

    classes: tuple[GatewayClass, ...]
    gateways: tuple[Gateway, ...]
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
    grants = index_grants(state)
    listeners = {g.meta.key: judge_listeners(g, state, grants) for g in gateways}
    ports = allocate_ports(
        (
            (g.meta.key.ref, v.listener.port)
            for g in gateways
            for v in listeners[g.meta.key]
            if v.listener.protocol in SUPPORTED_PROTOCOLS
        ),
        existing={},
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
        gateways=gateways,
        listeners=listeners,
        ports=ports,
        routes=tuple(routes),
    )
