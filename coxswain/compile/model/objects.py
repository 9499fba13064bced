"""Typed, immutable views of the Kubernetes objects the compiler reads.

Only ``decode.py`` builds these, from raw API bodies; everything after it is typed ("parse, don't
validate"). Each object keeps only the fields routing needs, plus the diagnostics its decoding
produced, so that a field the decoder could not use is reported on the object it belongs to.

Secrets keep nothing but parsed TLS material and CA bundles (docs/architecture.md, "Inputs: the
cluster state"): other Secret data never enters the compiler's memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.tls import KeyPair

__all__ = [
    "EndpointPort",
    "EndpointSlice",
    "Ingress",
    "IngressBackend",
    "IngressClass",
    "IngressPath",
    "IngressRule",
    "IngressTLS",
    "Meta",
    "Namespace",
    "Secret",
    "Service",
    "ServiceBackendRef",
    "ServicePort",
    "SliceEndpoint",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Meta:
    """The metadata routing decisions depend on.

    ``created`` is ``creationTimestamp`` normalised to ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` so that
    string order is time order; it is empty when the object has none (a raw manifest).
    """

    key: ObjectKey
    uid: str = ""
    generation: int = 0
    created: str = ""
    labels: PMap[str, str] = pmap()
    annotations: PMap[str, str] = pmap()

    @property
    def age_order(self) -> tuple[bool, str, str, str]:
        """Sort key "oldest first, then ``ns/name``"; objects without a timestamp come last."""
        return (self.created == "", self.created, self.key.namespace, self.key.name)


# --- Ingress (networking.k8s.io/v1) ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceBackendRef:
    """``backend.service``: a Service by name and a port by number or by name."""

    name: str
    port_number: int | None = None
    port_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressBackend:
    """``IngressBackend``: a Service, or a ``resource`` (kept only to report it unsupported)."""

    field: str
    service: ServiceBackendRef | None = None
    resource: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressPath:
    """One ``HTTPIngressPath``; ``path_type`` is one of Exact, Prefix, ImplementationSpecific."""

    field: str
    path: str
    path_type: str
    backend: IngressBackend


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressRule:
    """``IngressRule``: ``host`` is lower-cased; None means the rule matches every host."""

    field: str
    host: str | None
    paths: PVector[IngressPath] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressTLS:
    """``IngressTLS``: an empty ``hosts`` list means the default certificate of the port."""

    field: str
    hosts: PVector[str] = pvector()
    secret_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ingress:
    """An Ingress; ``legacy_class`` is the deprecated ``kubernetes.io/ingress.class`` value.

    ``has_rules`` says whether ``spec.rules`` held anything, even rules that were dropped as
    invalid: only an Ingress without rules makes its default backend a catch-all.
    """

    meta: Meta
    class_name: str | None = None
    legacy_class: str | None = None
    default_backend: IngressBackend | None = None
    rules: PVector[IngressRule] = pvector()
    has_rules: bool = False
    tls: PVector[IngressTLS] = pvector()
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressClass:
    """An IngressClass; ``is_default`` from ``ingressclass.kubernetes.io/is-default-class``."""

    meta: Meta
    controller: str = ""
    is_default: bool = False
    diagnostics: PVector[Diagnostic] = pvector()


# --- Services and endpoints ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ServicePort:
    """``ServicePort``; ``name`` is ``""`` for the single unnamed port a Service may have;
    ``app_protocol`` is its ``appProtocol`` (KEP-3726: ``kubernetes.io/h2c`` says the port
    speaks HTTP/2 over cleartext), None when unset."""

    name: str
    port: int
    target_port: int | str | None = None
    protocol: str = "TCP"
    app_protocol: str | None = None


PROXY_PROTOCOL_ANNOTATION = "coxswain-labs.dev/proxy-protocol"
"""A Service annotation: ``v2`` asks the proxy for a PROXY protocol v2 header before the bytes
of every TLSRoute or TCPRoute connection it forwards to the Service (docs/architecture.md,
"Layer 4")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Service:
    """A Service; ``external_name`` is set for ``type: ExternalName``; ``external_ips`` is
    ``spec.externalIPs``, which a Gateway's static addresses are given as."""

    meta: Meta
    type: str = "ClusterIP"
    external_name: str | None = None
    cluster_ip: str | None = None
    ports: PVector[ServicePort] = pvector()
    load_balancer: PVector[str] = pvector()
    external_ips: PVector[str] = pvector()
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointPort:
    """An EndpointSlice port; ``name`` is ``""`` when the slice port is unnamed."""

    name: str
    port: int
    protocol: str = "TCP"


@dataclass(frozen=True, slots=True, kw_only=True)
class SliceEndpoint:
    """One endpoint: its first address (the spec calls the addresses fungible) and readiness."""

    address: str
    ready: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointSlice:
    """An EndpointSlice (discovery.k8s.io/v1) of the Service named by its service-name label."""

    meta: Meta
    service_name: str | None = None
    address_type: str = "IPv4"
    ports: PVector[EndpointPort] = pvector()
    endpoints: PVector[SliceEndpoint] = pvector()
    diagnostics: PVector[Diagnostic] = pvector()


# --- Secrets and namespaces ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Secret:
    """A Secret reduced to what routing reads.

    ``keypair`` holds the ``tls.crt`` chain and ``tls.key`` key once they parsed and matched
    (every ``kubernetes.io/tls`` Secret has them; a Secret of another type may, which only
    ingress-nginx's ``proxy-ssl-secret`` accepts); ``problem`` says why they did not.
    ``ca_bundle`` is the ``ca.crt`` PEM, if any. ``htpasswd`` is the ``auth`` key, the users
    of ingress-nginx's basic authentication.
    """

    meta: Meta
    type: str = "Opaque"
    keypair: KeyPair | None = None
    problem: str | None = None
    ca_bundle: str | None = None
    htpasswd: str | None = None
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class Namespace:
    """A Namespace: its labels feed ``allowedRoutes.namespaces.from: Selector``."""

    meta: Meta
    diagnostics: PVector[Diagnostic] = pvector()
