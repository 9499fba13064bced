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
   (``gateway.status.gateway_diagnostics``, kept per part by ``model_findings``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain.compile.backends import index_services
from coxswain.compile.config import CompileConfig
from coxswain.compile.diagnostics import diagnostic_order
from coxswain.compile.endpoint_uses import EndpointUses, endpoint_uses
from coxswain.compile.gateway.cells import build_cells
from coxswain.compile.gateway.model import analyse_gateways
from coxswain.compile.gateway.status import gateway_statuses, policy_diagnostics
from coxswain.compile.ingress.certificates import ingress_certificates
from coxswain.compile.ingress.classes import select_ingresses
from coxswain.compile.ingress.rules import ingress_hosts
from coxswain.compile.ingress.status import ingress_statuses
from coxswain.compile.model_findings import ModelFindings, model_findings
from coxswain.compile.scope import Scope, SharedPool
from coxswain.compile.snapshot import IngressTable, Snapshot
from coxswain.compile.snapshot_json import seal
from coxswain.compile.status import STATUS_ORDER

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.backends import EndpointsCache, ServiceIndex
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.cells import GatewayCells, RouteDelta
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.gateway.route_kinds import RouteCache
    from coxswain.compile.gateway.status import StatusCache
    from coxswain.compile.ingress.rules import FragmentCache
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.snapshot import Backend, Certificate, VirtualHost
    from coxswain.compile.status import ObjectStatus

__all__ = [
    "CompileParts",
    "CompileResult",
    "analyse",
    "compile",
    "compile_parts",
    "findings",
    "slice_findings",
    "status",
]

_DEFAULT_CONFIG = CompileConfig()
_FEW_READ = 8
"""A scope that read under one Service in this many looks its Services up one by one."""


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
    parts = compile_parts(state, scope, config)
    services = index_services(state)
    return CompileResult(
        snapshot=seal(parts.snapshot),
        diagnostics=findings(parts, slice_findings(services, parts.services_read)),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileParts:
    """A scope's compile before sealing: the snapshot (``version`` empty), its findings but
    those about EndpointSlices, the Services whose slices' findings it reports, the analysis
    it was read from and its Gateway API cells (what ``compile.memo`` needs to reuse
    or patch it)."""

    snapshot: Snapshot
    found: tuple[Diagnostic, ...]
    services_read: frozenset[ObjectKey]
    model: GatewayModel
    cells: GatewayCells
    ingress: IngressPart
    endpoint_uses: EndpointUses
    flagged: ServiceFindings | None
    in_model: ModelFindings
    secrets_found: SecretFindings


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressPart:
    """What the Ingress passes (classes, certificates, rules) gave a scope, and what they read:
    the state's Ingress, IngressClass, Secret, Service and EndpointSlice tables (persistent
    maps: the same object while nothing in them changed) and the config. A Gateway API
    change leaves all of them the same objects, so a compile handed its scope's earlier
    parts reuses this whole."""

    inputs: tuple[object, ...]
    config: CompileConfig
    shared: bool
    hosts: PMap[str, VirtualHost]
    certificates: PMap[str, Certificate]
    backends: tuple[Backend, ...]
    found: tuple[Diagnostic, ...]
    secrets_read: frozenset[ObjectKey]
    services_read: frozenset[ObjectKey]


def findings(parts: CompileParts, slices: Iterable[Diagnostic]) -> PVector[Diagnostic]:
    """The diagnostics of a compile: its parts' and those of the EndpointSlices it read."""
    return pvector(sorted({*parts.found, *slices}, key=diagnostic_order))


def compile_parts(
    state: ClusterState,
    scope: Scope,
    config: CompileConfig = _DEFAULT_CONFIG,
    cache: RouteCache | None = None,
    *,
    earlier: CompileParts | None = None,
    endpoints: EndpointsCache | None = None,
    model: GatewayModel | None = None,
    fragments: FragmentCache | None = None,
    delta: RouteDelta | None = None,
) -> CompileParts:
    """``compile`` up to the seal; ``cache`` remembers compiled routes, ``earlier`` is an
    earlier compile of the same scope whose Ingress part (``IngressPart``), listener tables
    (``gateway.cells``) and endpoints map are reused where their inputs are the same,
    ``endpoints`` remembers endpoint entries, ``fragments`` Ingress fragments (all four from
    ``compile.memo``; the parts are the same without them); ``model`` is the scope's
    ``analyse_gateways`` when the caller has it, and ``delta`` how its routes differ from
    those of ``earlier``'s model, when the caller knows (``gateway.cells.build_cells``)."""
    services = index_services(state)
    ingress = _ingress_part(
        state, scope, config, services, fragments, None if earlier is None else earlier.ingress
    )
    hosts, certificates = ingress.hosts, ingress.certificates
    secrets_read, services_read = set(ingress.secrets_read), set(ingress.services_read)
    if model is None:
        model = analyse_gateways(state, config, services, scope, cache)
    cells = build_cells(model, None if earlier is None else earlier.cells, delta)
    patched = earlier is not None and ingress is earlier.ingress and cells.change is not None
    uses = endpoint_uses(
        services,
        chain((ingress.backends,), (part.backends for part in cells.parts.values())),  # lazy
        endpoints,
        None if earlier is None else earlier.endpoint_uses,
        None if earlier is None else earlier.snapshot.endpoints,
        change=(
            ([p.backends for p in cells.change[0]], [p.backends for p in cells.change[1]])
            if patched and cells.change is not None
            else None
        ),
    )
    if patched and earlier is not None and cells.tls is earlier.cells.tls:
        tls_cell = earlier.snapshot.tls
    else:
        tls = dict(cells.tls)
        if certificates:
            tls[config.ingress_https_port] = dict(certificates)
        tls_cell = pmap({port: pmap(by_host) for port, by_host in tls.items()})
    snapshot = Snapshot(
        version="",
        scope=scope,
        ingress=IngressTable(
            http_port=config.ingress_http_port, https_port=config.ingress_https_port, hosts=hosts
        ),
        gateways=cells.gateways,
        tls=tls_cell,
        client_certs=cells.client_certs,
        listener_health=cells.listener_health,
        endpoints=uses.table,
    )
    in_model = model_findings(
        model,
        cells,
        None if earlier is None else earlier.in_model,
        None if earlier is None else earlier.cells,
    )
    secrets_read |= in_model.secrets
    for policy in model.backend_tls.reported:
        secrets_read |= policy.read  # BackendTLSPolicy CA ConfigMaps and Secrets
    services_read.update(in_model.read)  # a dict's keys' hashes are kept: not hashed again
    gateway_found = [*in_model.found(), *policy_diagnostics(model), *model.dangling]
    read_found, flagged = _read_objects(
        state, services_read, None if earlier is None else earlier.flagged
    )
    secrets_found = _secret_findings(
        state, frozenset(secrets_read), None if earlier is None else earlier.secrets_found
    )
    diagnostics = [
        *state.input_diagnostics,
        *ingress.found,
        *gateway_found,
        *secrets_found.found,
        *read_found,
    ]
    return CompileParts(
        snapshot=snapshot,
        found=tuple(diagnostics),
        services_read=frozenset(services_read),
        model=model,
        cells=cells,
        ingress=ingress,
        endpoint_uses=uses,
        flagged=flagged,
        in_model=in_model,
        secrets_found=secrets_found,
    )


def _ingress_part(
    state: ClusterState,
    scope: Scope,
    config: CompileConfig,
    services: ServiceIndex,
    fragments: FragmentCache | None,
    earlier: IngressPart | None,
) -> IngressPart:
    """Passes 1 to 3 (the Ingresses: classes, certificates, rules); ``earlier``'s when it was
    computed from the very same tables and an equal config."""
    inputs = (
        state.ingresses,
        state.ingress_classes,
        state.secrets,
        state.services,
        state.endpoint_slices,
        state.slices_by_service,
    )
    if (
        earlier is not None
        and all(a is b for a, b in zip(inputs, earlier.inputs, strict=True))
        and (earlier.config is config or earlier.config == config)
        and earlier.shared is isinstance(scope, SharedPool)
    ):
        return earlier
    ingresses, found = (
        select_ingresses(state, config) if isinstance(scope, SharedPool) else ([], [])
    )
    certificates, tls_found, secrets_read = ingress_certificates(ingresses, state)
    # a Gateway's scope has no Ingress: handed the cache, it would empty it of the shared pool's
    cache = fragments if isinstance(scope, SharedPool) else None
    hosts, rules_found, services_read = ingress_hosts(
        ingresses, services, certificates, state.secrets, config.ingress_defaults, cache
    )
    rules = [
        rule
        for vhost in hosts.values()
        for rule in (*vhost.paths, *((vhost.default,) if vhost.default else ()))
    ]
    backends = [rule.backend for rule in rules]
    backends.extend(v.passthrough.backend for v in hosts.values() if v.passthrough is not None)
    backends.extend(r.actions.canary.backend for r in rules if r.actions and r.actions.canary)
    return IngressPart(
        inputs=inputs,
        config=config,
        shared=isinstance(scope, SharedPool),
        hosts=hosts,
        certificates=certificates,
        backends=tuple(backends),
        found=(
            *found,
            *(d for i in ingresses for d in i.diagnostics),
            *tls_found,
            *rules_found,
        ),
        secrets_read=frozenset(secrets_read),
        services_read=frozenset(services_read),
    )


def _secret_findings(
    state: ClusterState, secrets: frozenset[ObjectKey], earlier: SecretFindings | None
) -> SecretFindings:
    """Decode findings of the Secrets and ConfigMaps the snapshot was built from, ``earlier``'s
    while they are the same and so are the Secrets and ConfigMaps tables."""
    tables = (state.secrets, state.config_maps)
    if (
        earlier is not None
        and all(a is b for a, b in zip(tables, earlier.tables, strict=True))
        and earlier.read == secrets
    ):
        return earlier
    found: list[Diagnostic] = []
    for key in secrets:
        holder = state.config_maps.get(key) if key.kind == "ConfigMap" else state.secrets.get(key)
        if holder is not None:
            found.extend(holder.diagnostics)
    return SecretFindings(tables, secrets, tuple(found))


@dataclass(frozen=True, slots=True)
class SecretFindings:
    """The decode findings of some Secrets and ConfigMaps (``read``) of those tables."""

    tables: tuple[object, object]
    read: frozenset[ObjectKey]
    found: tuple[Diagnostic, ...]


def _read_objects(
    state: ClusterState,
    read: set[ObjectKey],
    earlier: ServiceFindings | None,
) -> tuple[list[Diagnostic], ServiceFindings | None]:
    """Decode findings of the Services the snapshot was built from (``read``); those of their
    EndpointSlices are ``slice_findings``. Services are looked up among those that have
    findings (``ServiceFindings``, ``earlier``'s while the Services table is the same), or one
    by one when the scope read few of them: gathering the flagged Services walks the whole
    table, which a cold start would otherwise do once per scope (501 scopes of 15,000
    Services in ``bench/controller_scale.py``)."""
    found: list[Diagnostic] = []
    flagged = earlier
    if flagged is None or flagged.services is not state.services:
        if len(read) * _FEW_READ < len(state.services):
            services = state.services
            found.extend(d for key in read if (s := services.get(key)) for d in s.diagnostics)
            return found, None
        flagged = ServiceFindings(
            state.services, {k: s.diagnostics for k, s in state.services.items() if s.diagnostics}
        )
    if len(flagged.found) < len(read):
        found.extend(d for key, ds in flagged.found.items() if key in read for d in ds)
    else:
        found.extend(d for key in read for d in flagged.found.get(key, ()))
    return found, flagged


@dataclass(frozen=True, slots=True)
class ServiceFindings:
    """The Services of a Services table that have decode findings, and theirs."""

    services: object
    found: dict[ObjectKey, Sequence[Diagnostic]]


def slice_findings(services: ServiceIndex, read: Iterable[ObjectKey]) -> list[Diagnostic]:
    """Decode findings of the EndpointSlices of the Services ``read``."""
    return [
        d
        for key in read
        for endpoint_slice in services.slices(key.namespace, key.name)
        for d in endpoint_slice.diagnostics
    ]


def analyse(
    state: ClusterState, config: CompileConfig = _DEFAULT_CONFIG, cache: RouteCache | None = None
) -> GatewayModel:
    """The Gateway API analysis of the whole cluster (no scope): what ``status``,
    ``provision.provision`` and ``grants.subscription_grants`` each compute when not handed it.
    A caller needing several of them computes it once. Pure. ``cache``: as ``compile_parts``'."""
    return analyse_gateways(state, config, index_services(state), None, cache)


def status(
    state: ClusterState,
    config: CompileConfig = _DEFAULT_CONFIG,
    programmed: Collection[tuple[str, int]] | None = None,
    model: GatewayModel | None = None,
    cache: StatusCache | None = None,
    counts: Mapping[int, int] | None = None,
) -> PVector[ObjectStatus]:
    """The desired status of every object we own, in (kind, namespace, name) order. Pure.

    Args:
        state: the cluster.
        config: installation settings.
        programmed: ``(ns/name, port)`` of each Gateway port a proxy has bound after acking a
            snapshot of the Gateway's current generation (the fleet observation); None
            offline, when every compiled listener counts as programmed.
        model: the scope-less ``analyse_gateways`` of ``state``, when the caller has it.
        cache: remembers Gateway API statuses between calls (``compile.status_memo``); the
            result is the same without it.
        counts: ``gateway.cells.attached_counts(model)``, when the caller has it.
    """
    if model is None:
        model = analyse_gateways(state, config, index_services(state))
    found = [
        *gateway_statuses(model, config, programmed, cache, counts),
        *ingress_statuses(state, config),
    ]
    return pvector(sorted(found, key=STATUS_ORDER))
