"""Typed, immutable views of the Gateway API objects (gateway.networking.k8s.io, v1 standard).

Built only by ``decode_gateway.py``. Defaults the CRDs give (``allowedRoutes.namespaces.from:
Same``, a rule without matches matching ``PathPrefix /``, ``weight: 1``, ``kind: Service``...)
are applied at decoding, so a raw manifest and an object read back from a cluster compile the
same (docs/architecture.md, "Inputs: the cluster state"). Filters decode straight into the
snapshot's value types (header edits, redirects, rewrites), which carry them unchanged to the
data plane. References keep what was written (``*Ref``); resolving them is the compiler's job,
because a resolution failure is a status condition on the object.

The sequences inside a rule (its matches, filters and backendRefs, a match's header and query
matches) are tuples, not persistent vectors: they are only ever read, and at 100,000 rules a
vector of one element each (three times a tuple's bytes) was a fifth of the state
(docs/benchmarks.md, the offline compiler).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from pyrsistent import pmap, pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.objects import Meta
    from coxswain.compile.snapshot import (
        Cors,
        HeaderEdits,
        Redirect,
        Retry,
        Rewrite,
        SubjectAltName,
    )

__all__ = [
    "AllowedListeners",
    "AllowedRoutes",
    "BackendRef",
    "BackendTLSPolicy",
    "CommonRoute",
    "ConfigMap",
    "FrontendValidation",
    "GRPCMethodMatch",
    "GRPCRoute",
    "GRPCRouteMatch",
    "GRPCRouteRule",
    "Gateway",
    "GatewayClass",
    "HTTPFilter",
    "HTTPRoute",
    "HTTPRouteMatch",
    "HTTPRouteRule",
    "LabelSelector",
    "Listener",
    "ListenerSet",
    "ObjectRef",
    "ParentRef",
    "PolicyTarget",
    "ReferenceGrant",
    "Route",
    "SelectorRequirement",
    "StreamRoute",
    "StreamRule",
    "ValueMatch",
]

GATEWAY_GROUP = "gateway.networking.k8s.io"


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectRef:
    """A reference as written; ``namespace`` None means the referring object's namespace."""

    group: str
    kind: str
    name: str
    namespace: str | None = None
    field: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParentRef:
    """``ParentReference`` of a route."""

    group: str
    kind: str
    name: str
    namespace: str | None = None
    section_name: str | None = None
    port: int | None = None
    field: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectorRequirement:
    """One ``matchExpressions`` entry: ``In``, ``NotIn``, ``Exists`` or ``DoesNotExist``."""

    key: str
    operator: str
    values: PVector[str] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSelector:
    """A ``metav1.LabelSelector``; ``problem`` is set when it cannot be evaluated."""

    match_labels: PMap[str, str] = pmap()
    match_expressions: PVector[SelectorRequirement] = pvector()
    problem: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AllowedRoutes:
    """``allowedRoutes``; ``kinds`` None means "the listener protocol's default kinds"."""

    namespaces_from: str = "Same"
    selector: LabelSelector | None = None
    kinds: PVector[tuple[str, str]] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AllowedListeners:
    """A Gateway's ``spec.allowedListeners.namespaces``: which namespaces' ListenerSets may
    attach (GEP-1713). ``from`` defaults to ``None``: no ListenerSet unless the Gateway asks."""

    namespaces_from: str = "None"
    selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Listener:
    """One listener of a Gateway or of a ListenerSet (``ListenerEntry`` is a copy of it)."""

    field: str
    name: str
    port: int
    protocol: str
    hostname: str | None = None
    tls_mode: str | None = None
    certificate_refs: PVector[ObjectRef] = pvector()
    allowed_routes: AllowedRoutes = AllowedRoutes()


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontendValidation:
    """``spec.tls.frontend`` validation of client certificates for one port (or the default)."""

    field: str
    ca_refs: PVector[ObjectRef] = pvector()
    mode: str = "AllowValidOnly"


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayClass:
    """A GatewayClass; ``parameters_ref`` as written in ``spec.parametersRef``."""

    meta: Meta
    controller_name: str = ""
    parameters_ref: ObjectRef | None = None
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class Gateway:
    """A Gateway.

    ``frontend_default`` and ``frontend_per_port`` come from ``spec.tls.frontend``;
    ``backend_client_certificate`` from ``spec.tls.backend.clientCertificateRef``;
    ``infrastructure_*`` from ``spec.infrastructure`` (GEP-1867).
    """

    meta: Meta
    class_name: str = ""
    listeners: PVector[Listener] = pvector()
    addresses: PVector[tuple[str, str]] = pvector()
    frontend_default: FrontendValidation | None = None
    frontend_per_port: PMap[int, FrontendValidation] = pmap()
    backend_client_certificate: ObjectRef | None = None
    infrastructure_labels: PMap[str, str] = pmap()
    infrastructure_annotations: PMap[str, str] = pmap()
    parameters_ref: ObjectRef | None = None
    allowed_listeners: AllowedListeners = AllowedListeners()
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerSet:
    """A ListenerSet (GEP-1713): listeners that join the Gateway ``parent`` names.

    ``parent`` is ``spec.parentRef`` as written (group and kind defaulted to the Gateway's), or
    None when it has no name; ``listeners`` have unique names (a repeated name is dropped at
    decoding, as the CRD's rule refuses it).
    """

    meta: Meta
    parent: ObjectRef | None = None
    listeners: PVector[Listener] = pvector()
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueMatch:
    """A header or query parameter match: ``Exact`` or ``RegularExpression``."""

    name: str
    type: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPRouteMatch:
    """``HTTPRouteMatch``: path (``Exact``/``PathPrefix``/``RegularExpression``), headers (names
    lower-cased: HTTP field names are case-insensitive), query parameters, method."""

    field: str
    path_type: str = "PathPrefix"
    path: str = "/"
    headers: tuple[ValueMatch, ...] = ()
    query: tuple[ValueMatch, ...] = ()
    method: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPFilter:
    """One ``HTTPRouteFilter``; exactly the field of its ``type`` is set.

    ``mirror_percent`` is the mirrored share in percent (``percent``, or ``fraction`` converted).
    An unsupported type keeps only ``type`` so the compiler can report it.
    """

    field: str
    type: str
    request_headers: HeaderEdits | None = None
    response_headers: HeaderEdits | None = None
    redirect: Redirect | None = None
    rewrite: Rewrite | None = None
    mirror: ObjectRef | None = None
    mirror_port: int | None = None
    mirror_percent: float = 100.0
    cors: Cors | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendRef:
    """``HTTPBackendRef``: a reference, its weight and its own filters."""

    ref: ObjectRef
    port: int | None = None
    weight: int = 1
    filters: tuple[HTTPFilter, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPRouteRule:
    """``HTTPRouteRule``; timeouts in seconds (None when unset); ``retry`` from the
    experimental channel's ``retry`` field."""

    field: str
    name: str | None = None
    matches: tuple[HTTPRouteMatch, ...] = ()
    filters: tuple[HTTPFilter, ...] = ()
    backend_refs: tuple[BackendRef, ...] = ()
    request_timeout: float | None = None
    backend_timeout: float | None = None
    retry: Retry | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonRoute:
    """What every route kind holds and attaches by: ``CommonRouteSpec.parentRefs`` and
    ``hostnames`` (lower-cased), the same fields in HTTPRoute and GRPCRoute.

    ``has_hostnames`` says whether ``spec.hostnames`` held anything, even names dropped as
    invalid: a route whose every hostname is invalid matches no host, not every host.
    """

    meta: Meta
    parent_refs: PVector[ParentRef] = pvector()
    hostnames: PVector[str] = pvector()
    has_hostnames: bool = False
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPRoute(CommonRoute):
    """An HTTPRoute."""

    rules: PVector[HTTPRouteRule] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class GRPCMethodMatch:
    """``GRPCMethodMatch``: ``type`` ``Exact`` or ``RegularExpression``; ``service`` and
    ``method`` None when omitted or empty ("If left empty or omitted, will match any", GEP-1016).
    """

    type: str = "Exact"
    service: str | None = None
    method: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GRPCRouteMatch:
    """``GRPCRouteMatch``: a service/method match (None: every service and method) and header
    matches (names lower-cased, as HTTPRoute's), ANDed."""

    field: str
    method: GRPCMethodMatch | None = None
    headers: tuple[ValueMatch, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GRPCRouteRule:
    """``GRPCRouteRule``. Its filters are a subset of HTTPRoute's (RequestHeaderModifier,
    ResponseHeaderModifier, RequestMirror, ExtensionRef) and decode to the same type."""

    field: str
    name: str | None = None
    matches: tuple[GRPCRouteMatch, ...] = ()
    filters: tuple[HTTPFilter, ...] = ()
    backend_refs: tuple[BackendRef, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GRPCRoute(CommonRoute):
    """A GRPCRoute (gateway.networking.k8s.io/v1, GEP-1016)."""

    rules: PVector[GRPCRouteRule] = pvector()


Route: TypeAlias = HTTPRoute | GRPCRoute
"""A route kind Coxswain serves: both attach to HTTP and HTTPS listeners alike."""

STREAM_KINDS = ("TLSRoute", "TCPRoute", "UDPRoute")
"""The layer-4 route kinds (gateway.networking.k8s.io/v1): each forwards whole connections or
datagrams, chosen by listener (and for TLSRoute by the ClientHello's SNI), never by request."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamRule:
    """``TLSRouteRule``, ``TCPRouteRule`` or ``UDPRouteRule``: a name and weighted backendRefs
    (no matches, no filters: v1 CRDs)."""

    field: str
    name: str | None = None
    backend_refs: tuple[BackendRef, ...] = ()

    @property
    def filters(self) -> tuple[HTTPFilter, ...]:
        """None: a layer-4 rule has no filters (the shape ``route_rules.Rule`` reads)."""
        return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamRoute(CommonRoute):
    """A TLSRoute, TCPRoute or UDPRoute (its kind is ``meta.key.kind``); only a TLSRoute has
    ``hostnames``, matched against the ClientHello's SNI."""

    rules: PVector[StreamRule] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReferenceGrant:
    """A ReferenceGrant: ``from`` (group, kind, namespace) and ``to`` (group, kind, name|None)."""

    meta: Meta
    sources: PVector[tuple[str, str, str]] = pvector()
    targets: PVector[tuple[str, str, str | None]] = pvector()
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigMap:
    """A ConfigMap reduced to its ``ca.crt`` CA bundle (frontend client validation)."""

    meta: Meta
    ca_bundle: str | None = None
    problem: str | None = None
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyTarget:
    """A policy's ``targetRefs`` entry (``LocalPolicyTargetReferenceWithSectionName``): an
    object of the policy's namespace, and optionally one section of it (a Service port name)."""

    group: str
    kind: str
    name: str
    section_name: str | None = None
    field: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendTLSPolicy:
    """A BackendTLSPolicy (gateway.networking.k8s.io/v1, GEP-1897).

    ``targets`` are its ``targetRefs``; ``ca_refs`` (``validation.caCertificateRefs``) and
    ``well_known`` (``validation.wellKnownCACertificates``) say which CAs the backend's chain
    must lead to; ``hostname`` is the SNI and the name verified unless ``subject_alt_names``
    are given. ``invalid`` holds ``(field, why)`` for each part of ``validation`` that cannot
    be honoured as written: the compiler then refuses the whole policy (a policy verified more
    loosely than written would be worse than none), and its backends are never sent plaintext.
    """

    meta: Meta
    targets: PVector[PolicyTarget] = pvector()
    ca_refs: PVector[ObjectRef] = pvector()
    well_known: str | None = None
    hostname: str = ""
    subject_alt_names: PVector[SubjectAltName] = pvector()
    invalid: PVector[tuple[str, str]] = pvector()
    diagnostics: PVector[Diagnostic] = pvector()
