"""ClusterState: the immutable index of every object the compiler reads.

One persistent map per kind, keyed by ``ObjectKey``. The controller builds it event by event
(``apply``); the offline tools build it from a dump in one go (``build_state``). Both go through
the same decoder, so an object means the same thing whichever way it arrived.

Input order never matters: when a dump holds two bodies with the same key, the one whose
canonical JSON sorts last is kept (and reported), so any permutation gives the same state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, TypeVar, assert_never

from pyrsistent import pmap, pset, pvector

from coxswain.compile.diagnostics import Diagnostic, Severity, diagnostic_order
from coxswain.compile.model.canonical import canonical_json
from coxswain.compile.model.decode import Decoded, Malformed, StateObject, decode_object
from coxswain.compile.model.gateway_objects import (
    STREAM_KINDS,
    BackendTLSPolicy,
    ConfigMap,
    Gateway,
    GatewayClass,
    GRPCRoute,
    HTTPRoute,
    ListenerSet,
    ReferenceGrant,
    StreamRoute,
)
from coxswain.compile.model.infra_objects import (
    CoxswainGatewayParameters,
    Deployment,
    ServiceAccount,
)
from coxswain.compile.model.manifests import SourcedBody
from coxswain.compile.model.objects import (
    EndpointSlice,
    Ingress,
    IngressClass,
    Namespace,
    Secret,
    Service,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pyrsistent.typing import PMap, PSet, PVector

    from coxswain.compile.model.keys import ObjectKey

__all__ = [
    "TABLES",
    "TABLE_NAMES",
    "ClusterState",
    "Deleted",
    "Upserted",
    "apply",
    "build_state",
    "build_state_once",
    "carried_over",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterState:
    """Every object the compiler reads, by kind, plus what the input held that it does not read.

    ``input_diagnostics`` are findings about the input as a whole (skipped kinds, malformed
    bodies, duplicates); findings about one object travel with that object. ``gateway_api``
    is False when the Gateway API CRDs are absent from the cluster (Ingress-only mode).

    Three indexes are kept with the objects, so that one scope's compile reads only what
    concerns it: ``slices_by_service`` ((namespace, Service name) → EndpointSlice keys),
    ``routes_by_parent`` ((namespace, name) of a parentRef, a Gateway's or a ListenerSet's →
    HTTPRoute, GRPCRoute, TLSRoute, TCPRoute and UDPRoute keys) and
    ``listener_sets_by_parent`` ((namespace, name) of a ListenerSet's parentRef → ListenerSet
    keys).
    """

    ingresses: PMap[ObjectKey, Ingress] = field(default_factory=pmap)
    ingress_classes: PMap[ObjectKey, IngressClass] = field(default_factory=pmap)
    services: PMap[ObjectKey, Service] = field(default_factory=pmap)
    endpoint_slices: PMap[ObjectKey, EndpointSlice] = field(default_factory=pmap)
    secrets: PMap[ObjectKey, Secret] = field(default_factory=pmap)
    namespaces: PMap[ObjectKey, Namespace] = field(default_factory=pmap)
    config_maps: PMap[ObjectKey, ConfigMap] = field(default_factory=pmap)
    gateway_classes: PMap[ObjectKey, GatewayClass] = field(default_factory=pmap)
    gateways: PMap[ObjectKey, Gateway] = field(default_factory=pmap)
    httproutes: PMap[ObjectKey, HTTPRoute] = field(default_factory=pmap)
    grpcroutes: PMap[ObjectKey, GRPCRoute] = field(default_factory=pmap)
    streamroutes: PMap[ObjectKey, StreamRoute] = field(default_factory=pmap)
    reference_grants: PMap[ObjectKey, ReferenceGrant] = field(default_factory=pmap)
    listener_sets: PMap[ObjectKey, ListenerSet] = field(default_factory=pmap)
    backend_tls_policies: PMap[ObjectKey, BackendTLSPolicy] = field(default_factory=pmap)
    parameters: PMap[ObjectKey, CoxswainGatewayParameters] = field(default_factory=pmap)
    deployments: PMap[ObjectKey, Deployment] = field(default_factory=pmap)
    service_accounts: PMap[ObjectKey, ServiceAccount] = field(default_factory=pmap)
    gateway_api: bool = True
    slices_by_service: PMap[tuple[str, str], PSet[ObjectKey]] = field(default_factory=pmap)
    routes_by_parent: PMap[tuple[str, str], PSet[ObjectKey]] = field(default_factory=pmap)
    listener_sets_by_parent: PMap[tuple[str, str], PSet[ObjectKey]] = field(default_factory=pmap)
    input_diagnostics: PVector[Diagnostic] = field(default_factory=pvector)


@dataclass(frozen=True, slots=True)
class Upserted:
    """An object was created or changed."""

    obj: StateObject


@dataclass(frozen=True, slots=True)
class Deleted:
    """The object with this key is gone."""

    key: ObjectKey


def apply(state: ClusterState, event: Upserted | Deleted) -> ClusterState:
    """The state after one event. Pure.

    An event that changes nothing (an informer's resync, a watch replaying what was listed)
    gives back ``state`` itself, so that identity says "unchanged" to whatever was computed
    from it (``compile.memo``).
    """
    if isinstance(event, Upserted):
        if _current(state, event.obj.meta.key) == event.obj:
            return state
        return _indexed(_stored(_unindexed(state, event.obj.meta.key), event.obj), event.obj)
    if _current(state, event.key) is None:
        return state
    return _removed(_unindexed(state, event.key), event.key)


def carried_over(previous: ClusterState, state: ClusterState) -> ClusterState:
    """A state equal to ``state`` in which every object equal to one of ``previous`` is that
    very object. Pure.

    For a caller that decodes its whole input again at each change (``serve`` re-reads its
    folder): identity then says "unchanged" to what was computed from ``previous``
    (``compile.memo``), as it does for states built event by event with ``apply``.
    """
    carried = previous
    for name in TABLE_NAMES:
        before: PMap[ObjectKey, StateObject] = getattr(previous, name)
        after: PMap[ObjectKey, StateObject] = getattr(state, name)
        if before is after:
            continue
        for key, obj in after.items():
            if before.get(key) != obj:
                carried = apply(carried, Upserted(obj))
        for key in before:
            if key not in after:
                carried = apply(carried, Deleted(key))
    if (carried.gateway_api, carried.input_diagnostics) != (
        state.gateway_api,
        state.input_diagnostics,
    ):
        carried = replace(
            carried, gateway_api=state.gateway_api, input_diagnostics=state.input_diagnostics
        )
    return carried


def _current(state: ClusterState, key: ObjectKey) -> StateObject | None:
    """The object stored under ``key``, if any."""
    table: PMap[ObjectKey, StateObject] | None = getattr(state, TABLES.get(key.kind, ""), None)
    return None if table is None else table.get(key)


TABLES: Final = {
    "Ingress": "ingresses",
    "IngressClass": "ingress_classes",
    "Service": "services",
    "EndpointSlice": "endpoint_slices",
    "Secret": "secrets",
    "Namespace": "namespaces",
    "ConfigMap": "config_maps",
    "GatewayClass": "gateway_classes",
    "Gateway": "gateways",
    "HTTPRoute": "httproutes",
    "GRPCRoute": "grpcroutes",
    "TLSRoute": "streamroutes",
    "TCPRoute": "streamroutes",
    "UDPRoute": "streamroutes",
    "ReferenceGrant": "reference_grants",
    "ListenerSet": "listener_sets",
    "BackendTLSPolicy": "backend_tls_policies",
    "CoxswainGatewayParameters": "parameters",
    "Deployment": "deployments",
    "ServiceAccount": "service_accounts",
}
"""The ``ClusterState`` field holding each kind's objects."""

TABLE_NAMES: Final = tuple(dict.fromkeys(TABLES.values()))
"""Every ``ClusterState`` table once (the three layer-4 route kinds share one)."""


def _stored(state: ClusterState, obj: StateObject) -> ClusterState:
    key = obj.meta.key
    match obj:
        case Ingress():
            return replace(state, ingresses=state.ingresses.set(key, obj))
        case IngressClass():
            return replace(state, ingress_classes=state.ingress_classes.set(key, obj))
        case Service():
            return replace(state, services=state.services.set(key, obj))
        case EndpointSlice():
            return replace(state, endpoint_slices=state.endpoint_slices.set(key, obj))
        case Secret():
            return replace(state, secrets=state.secrets.set(key, obj))
        case Namespace():
            return replace(state, namespaces=state.namespaces.set(key, obj))
        case ConfigMap():
            return replace(state, config_maps=state.config_maps.set(key, obj))
        case GatewayClass():
            return replace(state, gateway_classes=state.gateway_classes.set(key, obj))
        case Gateway():
            return replace(state, gateways=state.gateways.set(key, obj))
        case HTTPRoute():
            return replace(state, httproutes=state.httproutes.set(key, obj))
        case GRPCRoute():
            return replace(state, grpcroutes=state.grpcroutes.set(key, obj))
        case StreamRoute():
            return replace(state, streamroutes=state.streamroutes.set(key, obj))
        case ReferenceGrant():
            return replace(state, reference_grants=state.reference_grants.set(key, obj))
        case ListenerSet():
            return replace(state, listener_sets=state.listener_sets.set(key, obj))
        case BackendTLSPolicy():
            return replace(state, backend_tls_policies=state.backend_tls_policies.set(key, obj))
        case CoxswainGatewayParameters():
            return replace(state, parameters=state.parameters.set(key, obj))
        case Deployment():
            return replace(state, deployments=state.deployments.set(key, obj))
        case ServiceAccount():
            return replace(state, service_accounts=state.service_accounts.set(key, obj))
        case _:
            assert_never(obj)


def _removed(state: ClusterState, key: ObjectKey) -> ClusterState:
    match key.kind:
        case "Ingress":
            return replace(state, ingresses=state.ingresses.discard(key))
        case "IngressClass":
            return replace(state, ingress_classes=state.ingress_classes.discard(key))
        case "Service":
            return replace(state, services=state.services.discard(key))
        case "EndpointSlice":
            return replace(state, endpoint_slices=state.endpoint_slices.discard(key))
        case "Secret":
            return replace(state, secrets=state.secrets.discard(key))
        case "Namespace":
            return replace(state, namespaces=state.namespaces.discard(key))
        case "ConfigMap":
            return replace(state, config_maps=state.config_maps.discard(key))
        case "GatewayClass":
            return replace(state, gateway_classes=state.gateway_classes.discard(key))
        case "Gateway":
            return replace(state, gateways=state.gateways.discard(key))
        case "HTTPRoute":
            return replace(state, httproutes=state.httproutes.discard(key))
        case "GRPCRoute":
            return replace(state, grpcroutes=state.grpcroutes.discard(key))
        case "TLSRoute" | "TCPRoute" | "UDPRoute":
            return replace(state, streamroutes=state.streamroutes.discard(key))
        case "ReferenceGrant":
            return replace(state, reference_grants=state.reference_grants.discard(key))
        case "ListenerSet":
            return replace(state, listener_sets=state.listener_sets.discard(key))
        case "BackendTLSPolicy":
            return replace(state, backend_tls_policies=state.backend_tls_policies.discard(key))
        case "CoxswainGatewayParameters":
            return replace(state, parameters=state.parameters.discard(key))
        case "Deployment":
            return replace(state, deployments=state.deployments.discard(key))
        case "ServiceAccount":
            return replace(state, service_accounts=state.service_accounts.discard(key))
    return state


def _index_keys(obj: StateObject | None) -> tuple[str, list[tuple[str, str]]]:
    """Which index an object belongs to, and under which entries."""
    if isinstance(obj, EndpointSlice) and obj.service_name:
        return "slices_by_service", [(obj.meta.key.namespace, obj.service_name)]
    if isinstance(obj, HTTPRoute | GRPCRoute | StreamRoute):
        namespace = obj.meta.key.namespace
        return "routes_by_parent", sorted(
            {(r.namespace or namespace, r.name) for r in obj.parent_refs}
        )
    if isinstance(obj, ListenerSet) and obj.parent is not None:
        parent = (obj.parent.namespace or obj.meta.key.namespace, obj.parent.name)
        return "listener_sets_by_parent", [parent]
    return "", []


def _unindexed(state: ClusterState, key: ObjectKey) -> ClusterState:
    old: StateObject | None
    if key.kind == "EndpointSlice":
        old = state.endpoint_slices.get(key)
    elif key.kind == "HTTPRoute":
        old = state.httproutes.get(key)
    elif key.kind == "GRPCRoute":
        old = state.grpcroutes.get(key)
    elif key.kind in STREAM_KINDS:
        old = state.streamroutes.get(key)
    elif key.kind == "ListenerSet":
        old = state.listener_sets.get(key)
    else:
        return state
    name, entries = _index_keys(old)
    if not name:
        return state
    index: PMap[tuple[str, str], PSet[ObjectKey]] = getattr(state, name)
    for entry in entries:
        remaining = index.get(entry, pset()).discard(key)
        index = index.set(entry, remaining) if remaining else index.discard(entry)
    return _with_index(state, name, index)


def _with_index(
    state: ClusterState, name: str, index: PMap[tuple[str, str], PSet[ObjectKey]]
) -> ClusterState:
    if name == "slices_by_service":
        return replace(state, slices_by_service=index)
    if name == "listener_sets_by_parent":
        return replace(state, listener_sets_by_parent=index)
    return replace(state, routes_by_parent=index)


def _indexed(state: ClusterState, obj: StateObject) -> ClusterState:
    name, entries = _index_keys(obj)
    if not name:
        return state
    index: PMap[tuple[str, str], PSet[ObjectKey]] = getattr(state, name)
    for entry in entries:
        index = index.set(entry, index.get(entry, pset()).add(obj.meta.key))
    return _with_index(state, name, index)


def build_state(bodies: Iterable[object]) -> ClusterState:
    """Decode raw bodies into a state. Pure, total and independent of the order of ``bodies``.

    Args:
        bodies: raw API objects (already flattened out of any ``List``), or ``SourcedBody``
            values: then the findings about bodies that are not objects, and about skipped
            kinds, name the file and line (the first one's, for a kind skipped several times).
    """
    state = _build(bodies, keep=True)
    assert state is not None  # only a build that lets its bodies go gives up
    return state


def build_state_once(bodies: Iterable[object]) -> ClusterState | None:
    """``build_state(bodies)``, each body let go once decoded, so that a caller streaming them
    (``coxswain compile``) never holds them all; None as soon as two bodies share a key: which
    one is kept depends on both bodies, and the first is gone (the caller builds again with
    ``build_state``, its bodies held)."""
    return _build(bodies, keep=False)


def _build(bodies: Iterable[object], *, keep: bool) -> ClusterState | None:
    chosen: dict[ObjectKey, tuple[object, StateObject]] = {}  # the body kept, its object
    duplicates: Counter[ObjectKey] = Counter()
    skipped: Counter[str] = Counter()
    first_skipped: dict[str, tuple[str, int]] = {}
    problems: list[Diagnostic] = []
    for item in bodies:
        body = item.body if isinstance(item, SourcedBody) else item
        file, line = (item.path, item.line) if isinstance(item, SourcedBody) else ("", 0)
        result = decode_object(body)
        if isinstance(result, Malformed):
            problems.append(replace(result.diagnostic, file=file, line=line))
        elif isinstance(result, Decoded):
            key = result.obj.meta.key
            if key in chosen:  # canonical forms only then: most inputs hold no duplicate
                if not keep:
                    return None
                duplicates[key] += 1
                if canonical_json(body) <= canonical_json(chosen[key][0]):
                    continue
            chosen[key] = (body if keep else None, result.obj)
        else:
            kind_version = f"{result.api_version} {result.kind}"
            skipped[kind_version] += 1
            if file:
                first = first_skipped.get(kind_version, (file, line))
                first_skipped[kind_version] = min(first, (file, line))
    for kind_version, count in sorted(skipped.items()):
        file, line = first_skipped.get(kind_version, ("", 0))
        problems.append(
            Diagnostic(
                key=None,
                field="",
                severity=Severity.WARNING,
                reason="UnrecognisedKind",
                message=f"skipped {count} object(s) of {kind_version}, not read by Coxswain"
                + (" (the first is here)" if count > 1 and file else ""),
                file=file,
                line=line,
            )
        )
    for key, count in sorted(duplicates.items()):
        problems.append(
            Diagnostic(
                key=key,
                field="",
                severity=Severity.WARNING,
                reason="DuplicateObject",
                message=f"the input holds {count + 1} bodies with this key; one is kept",
            )
        )
    objects = [obj for _, obj in chosen.values()]
    return ClusterState(
        ingresses=_table(objects, Ingress),
        ingress_classes=_table(objects, IngressClass),
        services=_table(objects, Service),
        endpoint_slices=_table(objects, EndpointSlice),
        secrets=_table(objects, Secret),
        namespaces=_table(objects, Namespace),
        config_maps=_table(objects, ConfigMap),
        gateway_classes=_table(objects, GatewayClass),
        gateways=_table(objects, Gateway),
        httproutes=_table(objects, HTTPRoute),
        grpcroutes=_table(objects, GRPCRoute),
        streamroutes=_table(objects, StreamRoute),
        reference_grants=_table(objects, ReferenceGrant),
        listener_sets=_table(objects, ListenerSet),
        backend_tls_policies=_table(objects, BackendTLSPolicy),
        parameters=_table(objects, CoxswainGatewayParameters),
        deployments=_table(objects, Deployment),
        service_accounts=_table(objects, ServiceAccount),
        slices_by_service=_index(objects, "slices_by_service"),
        routes_by_parent=_index(objects, "routes_by_parent"),
        listener_sets_by_parent=_index(objects, "listener_sets_by_parent"),
        input_diagnostics=pvector(sorted(problems, key=diagnostic_order)),
    )


_Kind = TypeVar(
    "_Kind",
    Ingress,
    IngressClass,
    Service,
    EndpointSlice,
    Secret,
    Namespace,
    ConfigMap,
    GatewayClass,
    Gateway,
    HTTPRoute,
    GRPCRoute,
    StreamRoute,
    ListenerSet,
    ReferenceGrant,
    BackendTLSPolicy,
    CoxswainGatewayParameters,
    Deployment,
    ServiceAccount,
)


def _index(objects: list[StateObject], name: str) -> PMap[tuple[str, str], PSet[ObjectKey]]:
    entries: dict[tuple[str, str], set[ObjectKey]] = {}
    for obj in objects:
        index, keys = _index_keys(obj)
        if index == name:
            for entry in keys:
                entries.setdefault(entry, set()).add(obj.meta.key)
    return pmap({entry: pset(keys) for entry, keys in entries.items()})


def _table(objects: list[StateObject], kind: type[_Kind]) -> PMap[ObjectKey, _Kind]:
    return pmap({obj.meta.key: obj for obj in objects if isinstance(obj, kind)})
