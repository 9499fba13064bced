"""``compile``: the pass order, and nothing else.

Passes (docs/architecture.md, "Rules of the core"), each a function of explicit inputs:
1. select our Ingresses (classes);
2. TLS: the Ingress HTTPS port's certificates;
3. rules: virtual hosts, backends resolved;
4. Gateway API: classes, listeners, internal ports, routes attached (``gateway.model``), read
   into the Gateway table, TLS and client-certificate stores and listener health;
5. endpoints for every backend used;
6. the snapshot, sealed with its content hash, and the diagnostics of every object read,
   including those of every problem condition the Gateway API status shows
   (``gateway.status.gateway_diagnostics``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain.compile.backends import endpoints_table, index_services
from coxswain.compile.config import CompileConfig
from coxswain.compile.diagnostics import diagnostic_order
from coxswain.compile.gateway.cells import build_cells
from coxswain.compile.gateway.model import analyse_gateways
from coxswain.compile.gateway.status import gateway_diagnostics, gateway_statuses
from coxswain.compile.ingress.certificates import ingress_certificates
from coxswain.compile.ingress.classes import select_ingresses
from coxswain.compile.ingress.rules import ingress_hosts
from coxswain.compile.ingress.status import ingress_statuses
from coxswain.compile.scope import Scope, SharedPool
from coxswain.compile.snapshot import IngressTable, Snapshot
from coxswain.compile.snapshot_json import seal

if TYPE_CHECKING:
    from collections.abc import Collection

    from pyrsistent.typing import PVector

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.status import ObjectStatus

__all__ = ["CompileResult", "analyse", "compile", "status"]

_DEFAULT_CONFIG = CompileConfig()


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileResult:
    """The snapshot of one scope and every finding about the objects it was built from."""

    snapshot: Snapshot
    diagnostics: PVector[Diagnostic]


def compile(  # noqa: A001 - the name the architecture gives the core's one entry point
    state: ClusterState, scope: Scope, config: CompileConfig = _DEFAULT_CONFIG
) -> CompileResult:
    """Compile the routing slice of ``scope``. Pure: same inputs, same result; never raises.

    A ``GatewayScope`` gets no Ingress at all: its proxy serves one dedicated Gateway.
    """
    ingresses, found = (
        select_ingresses(state, config) if isinstance(scope, SharedPool) else ([], [])
    )
    certificates, tls_found, secrets_read = ingress_certificates(ingresses, state)
    services = index_services(state)
    hosts, rules_found, services_read = ingress_hosts(
        ingresses, services, certificates, state.secrets
    )
    model = analyse_gateways(state, config, services, scope)
    cells = build_cells(model)
    rules = [
        rule
        for vhost in hosts.values()
        for rule in (*vhost.paths, *((vhost.default,) if vhost.default else ()))
    ]
    backends = [rule.backend for rule in rules]
    backends.extend(r.actions.canary.backend for r in rules if r.actions and r.actions.canary)
    backends.extend(cells.backends)
    tls = dict(cells.tls)
    if certificates:
        tls[config.ingress_https_port] = dict(certificates)
    snapshot = Snapshot(
        version="",
        scope=scope,
        ingress=IngressTable(
            http_port=config.ingress_http_port, https_port=config.ingress_https_port, hosts=hosts
        ),
        gateways=cells.gateways,
        tls=pmap({port: pmap(by_host) for port, by_host in tls.items()}),
        client_certs=cells.client_certs,
        listener_health=cells.listener_health,
        endpoints=endpoints_table(services, backends),
    )
    for verdicts in model.listeners.values():
        for verdict in verdicts:
            secrets_read |= verdict.read  # certificate Secrets, CA Secrets and ConfigMaps
    for refs in model.gateway_refs.values():
        secrets_read |= refs.read  # the backend client certificate's Secret
    for policy in model.backend_tls.reported:
        secrets_read |= policy.read  # BackendTLSPolicy CA ConfigMaps and Secrets
    for route in model.routes:
        services_read |= route.compiled.read
    read = _read_objects(state, services, secrets_read, services_read)
    gateway_found = [
        *(d for c in model.classes for d in c.diagnostics),
        *(d for g in (*model.gateways, *model.unserved) for d in g.diagnostics),
        *(d for s in model.listener_sets for d in s.listener_set.diagnostics),
        *(d for r in model.routes for d in r.compiled.route.diagnostics),
        *(d for p in model.placements.values() for layer in p.layers for d in layer.diagnostics),
        *gateway_diagnostics(model),
    ]
    diagnostics = [
        *state.input_diagnostics,
        *found,
        *(d for i in ingresses for d in i.diagnostics),
        *tls_found,
        *rules_found,
        *gateway_found,
        *read,
    ]
    return CompileResult(
        snapshot=seal(snapshot),
        diagnostics=pvector(sorted(set(diagnostics), key=diagnostic_order)),
    )


def _read_objects(
    state: ClusterState, services: ServiceIndex, secrets: set[ObjectKey], read: set[ObjectKey]
) -> list[Diagnostic]:
    """Decode findings of the Secrets, ConfigMaps, Services and EndpointSlices the snapshot was
    built from (``secrets``: the Secrets and ConfigMaps; ``read``: the Services)."""
    found: list[Diagnostic] = []
    for key in secrets:
        holder = state.config_maps.get(key) if key.kind == "ConfigMap" else state.secrets.get(key)
        if holder is not None:
            found.extend(holder.diagnostics)
    for key in read:
        if (service := services.service(key.namespace, key.name)) is not None:
            found.extend(service.diagnostics)
        for endpoint_slice in services.slices(key.namespace, key.name):
            found.extend(endpoint_slice.diagnostics)
    return found


def analyse(state: ClusterState, config: CompileConfig = _DEFAULT_CONFIG) -> GatewayModel:
    """The Gateway API analysis of the whole cluster (no scope): what ``status``,
    ``provision.provision`` and ``grants.subscription_grants`` each compute when not handed it.
    A caller needing several of them computes it once. Pure."""
    return analyse_gateways(state, config, index_services(state))


def status(
    state: ClusterState,
    config: CompileConfig = _DEFAULT_CONFIG,
    programmed: Collection[tuple[str, int]] | None = None,
    model: GatewayModel | None = None,
) -> PVector[ObjectStatus]:
    """The desired status of every object we own, in (kind, namespace, name) order. Pure.

    Args:
        state: the cluster.
        config: installation settings.
        programmed: ``(ns/name, port)`` of each Gateway port a proxy has bound after acking a
            snapshot of the Gateway's current generation (the fleet observation); None
            offline, when every compiled listener counts as programmed.
        model: the scope-less ``analyse_gateways`` of ``state``, when the caller has it.
    """
    if model is None:
        model = analyse_gateways(state, config, index_services(state))
    found = [*gateway_statuses(model, config, programmed), *ingress_statuses(state, config)]
    return pvector(sorted(found, key=lambda s: (s.kind, s.namespace, s.name)))
