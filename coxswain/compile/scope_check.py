"""Whether a scope names a snapshot some proxy would serve, and whether it holds any route.

The shared pool's scope always exists. A Gateway's own scope (``namespace/name``) exists when
the Gateway is one of ours (its GatewayClass names our controller), is accepted, and is
dedicated: its parameters give it a proxy of its own (docs/dedicated-proxies.md). Any other
name compiles to an empty snapshot that no proxy is ever granted, so ``coxswain compile``
says why instead of printing it. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coxswain.compile.backends import index_services
from coxswain.compile.gateway.model import analyse_gateways
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.scope import SharedPool

if TYPE_CHECKING:
    from coxswain.compile.config import CompileConfig
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.scope import Scope
    from coxswain.compile.snapshot import Snapshot

__all__ = ["scope_problem", "serves_nothing"]


def scope_problem(state: ClusterState, scope: Scope, config: CompileConfig) -> str | None:
    """Why ``scope`` names no snapshot a proxy would serve; None when it does."""
    if isinstance(scope, SharedPool):
        return None
    what = f"Gateway {scope}"
    if not (config.gateway_api and state.gateway_api):
        return f"{what}: the Gateway API is disabled, so only the shared pool has a snapshot"
    gateway = state.gateways.get(ObjectKey("Gateway", scope.namespace, scope.name))
    if gateway is None:
        return f"there is no {what} in the input"
    classes = {k.name: c for k, c in state.gateway_classes.items()}
    found = classes.get(gateway.class_name)
    if found is None:
        return f"{what} names GatewayClass {gateway.class_name}, which is not in the input"
    if found.controller_name != config.gateway_controller:
        return (
            f"{what} is not served by Coxswain: its GatewayClass {gateway.class_name} names "
            f"controller {found.controller_name}, not {config.gateway_controller}"
        )
    model = analyse_gateways(state, config, index_services(state))
    refused = model.gateway_accepted.get(gateway.meta.key)
    if refused is not None:
        return f"{what} is not accepted: {refused.message} ({refused.reason})"
    placed = model.placements.get(gateway.meta.key)
    if placed is None or not placed.dedicated:
        return (
            f"{what} is not dedicated: the shared pool serves it (--scope shared); a "
            "CoxswainGatewayParameters gives a Gateway a proxy of its own "
            "(docs/dedicated-proxies.md)"
        )
    return None


def serves_nothing(snapshot: Snapshot) -> bool:
    """True when the snapshot routes no request: no Ingress host, no rule on any listener."""
    return not snapshot.ingress.hosts and not any(
        table.hosts for tables in snapshot.gateways.values() for table in tables.values()
    )
