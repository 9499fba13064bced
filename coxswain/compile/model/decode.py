"""Raw API bodies → typed objects. Total: no body makes it raise.

``decode_object`` recognises an object by API group and kind, and returns one of:

- ``Decoded``: the typed object, carrying the diagnostics of the fields that could not be used;
- ``Unrecognised``: a kind (or API version) the compiler does not read; counted by the caller;
- ``Malformed``: not a Kubernetes object at all (no kind, no name), or one past the bounds of
  ``model.limits`` (too deep, too large, recursive), with a diagnostic; the decoder reads
  nothing of a body before it is measured, so no body can exhaust the stack or run long.

Missing optional fields take the defaults the API server would give them, so that a dump of
raw manifests compiles the same as a dump read back from a cluster (docs/architecture.md,
"Inputs: the cluster state"), including ``metadata.namespace: default`` for namespaced kinds.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from sys import intern
from typing import Any, Final

from pyrsistent import pvector

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.decode_backendtls import decode_backend_tls_policy
from coxswain.compile.model.decode_gateway import (
    decode_config_map,
    decode_gateway,
    decode_gateway_class,
    decode_listener_set,
    decode_reference_grant,
)
from coxswain.compile.model.decode_grpcroute import decode_grpcroute
from coxswain.compile.model.decode_httproute import decode_httproute
from coxswain.compile.model.decode_ingress import decode_ingress, decode_ingress_class
from coxswain.compile.model.decode_l4route import decode_stream_route
from coxswain.compile.model.fields import FieldReader
from coxswain.compile.model.gateway_objects import (
    GATEWAY_GROUP,
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
    PARAMETERS_GROUP,
    CoxswainGatewayParameters,
    Deployment,
    ServiceAccount,
    decode_deployment,
    decode_parameters,
    decode_service_account,
)
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.limits import (
    MAX_OBJECT_DEPTH,
    MAX_OBJECT_SIZE,
    Excess,
    measure,
    preview,
)
from coxswain.compile.model.objects import (
    PROXY_PROTOCOL_ANNOTATION,
    EndpointPort,
    EndpointSlice,
    Ingress,
    IngressClass,
    Meta,
    Namespace,
    Secret,
    Service,
    ServicePort,
    SliceEndpoint,
)
from coxswain.compile.tls import KeyPair, parse_ca_bundle, parse_keypair

__all__ = ["Decoded", "Malformed", "StateObject", "Unrecognised", "decode_object"]

StateObject = (
    Ingress
    | IngressClass
    | Service
    | EndpointSlice
    | Secret
    | Namespace
    | GatewayClass
    | Gateway
    | HTTPRoute
    | GRPCRoute
    | StreamRoute
    | ListenerSet
    | ReferenceGrant
    | BackendTLSPolicy
    | ConfigMap
    | CoxswainGatewayParameters
    | Deployment
    | ServiceAccount
)

SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
_PORT_MAX: Final = 65535


@dataclass(frozen=True, slots=True)
class Decoded:
    """A recognised object, typed."""

    obj: StateObject


@dataclass(frozen=True, slots=True)
class Unrecognised:
    """An object of a kind (or version) the compiler does not read."""

    kind: str
    api_version: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """A body that is not a Kubernetes object, or one refused for its depth or size."""

    diagnostic: Diagnostic


def decode_object(raw: object) -> Decoded | Unrecognised | Malformed:
    """Decode one raw API body. Pure and total."""
    if not isinstance(raw, Mapping):
        return _malformed(f"expected an object, found {type(raw).__name__}")
    kind, api_version = raw.get("kind"), raw.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        return _malformed("object has no kind")
    if not isinstance(api_version, str):
        return _malformed(f"{kind} has no apiVersion")
    group, _, version = api_version.rpartition("/")
    entry = _DECODERS.get((group, kind))
    if entry is None:
        return Unrecognised(kind, api_version)
    versions, namespaced, decoder = entry
    if version not in versions:
        return Unrecognised(kind, api_version)
    metadata = raw.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        return _malformed(f"{kind} has no metadata.name")
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    if not namespaced:
        namespace = ""
    elif not isinstance(namespace, str) or not namespace:
        namespace = "default"
    key = ObjectKey(intern(kind), intern(namespace), intern(name))
    excess = measure(raw, max_depth=MAX_OBJECT_DEPTH, max_size=MAX_OBJECT_SIZE)
    if isinstance(excess, Excess):
        return Malformed(
            Diagnostic(
                key=key,
                field=excess.field,
                severity=Severity.ERROR,
                reason=excess.reason,
                message=f"{excess.message}; the object is refused",
            )
        )
    fields = FieldReader(key)
    meta = _meta(fields, metadata if isinstance(metadata, Mapping) else {})
    spec = fields.mapping(raw.get("spec"), "spec") or {}
    return Decoded(decoder(fields, meta, raw, spec))


def _malformed(message: str) -> Malformed:
    return Malformed(
        Diagnostic(
            key=None, field="", severity=Severity.ERROR, reason="MalformedObject", message=message
        )
    )


def _meta(fields: FieldReader, metadata: Mapping[str, Any]) -> Meta:
    generation = fields.integer(
        metadata.get("generation"), "metadata.generation", low=0, high=2**63 - 1
    )
    return Meta(
        key=fields.key,
        uid=fields.string(metadata.get("uid"), "metadata.uid") or "",
        generation=1 if generation is None else generation,  # the API server starts at 1
        created=_timestamp(fields, metadata.get("creationTimestamp")),
        labels=fields.string_map(metadata.get("labels"), "metadata.labels"),
        annotations=fields.string_map(metadata.get("annotations"), "metadata.annotations"),
    )


def _timestamp(fields: FieldReader, value: object) -> str:
    """RFC 3339 → canonical UTC text whose string order is time order ('' when absent)."""
    field = "metadata.creationTimestamp"
    if value is None or value == "":
        return ""
    moment: datetime | None = None
    if isinstance(value, datetime):  # YAML loaders turn unquoted timestamps into datetimes
        moment = value
    elif isinstance(value, str) and _RFC3339.fullmatch(value):
        try:
            moment = datetime.fromisoformat(value.upper().replace(" ", "T"))
        except ValueError:
            moment = None
    if moment is not None:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            m = moment.astimezone(UTC)
        except (OverflowError, ValueError):  # a year 1 or 9999 date shifted out of range
            m = None
        if m is not None:
            return (
                f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:"
                f"{m.second:02d}.{m.microsecond:06d}Z"
            )
    fields.problem(
        field, "InvalidField", f"{preview(value)} is not an RFC 3339 time", Severity.WARNING
    )
    return ""


_RFC3339: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})"
)


# --- Services and endpoints ---------------------------------------------------------------------


def _service(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> Service:
    ports: list[ServicePort] = []
    for index, item in enumerate(fields.items(spec.get("ports"), "spec.ports")):
        field = f"spec.ports[{index}]"
        entry = fields.mapping(item, field)
        if entry is None:
            continue
        number = fields.integer(entry.get("port"), f"{field}.port", low=1, high=_PORT_MAX)
        if number is None:
            fields.require(
                entry.get("port"), f"{field}.port", "the port number is missing; ignored"
            )
            continue
        target = entry.get("targetPort")
        target_port: int | str | None
        if isinstance(target, str) and target.isascii() and target.isdigit():
            # IntOrString given as a quoted number (a huge one is simply out of range)
            quoted = int(target) if len(target) < 7 else _PORT_MAX + 1
            target_port = fields.integer(quoted, f"{field}.targetPort", low=1, high=_PORT_MAX)
        elif isinstance(target, str):
            target_port = target
        else:
            target_port = fields.integer(target, f"{field}.targetPort", low=1, high=_PORT_MAX)
        ports.append(
            ServicePort(
                name=fields.string(entry.get("name"), f"{field}.name") or "",
                port=number,
                target_port=target_port,
                protocol=fields.string(entry.get("protocol"), f"{field}.protocol") or "TCP",
                app_protocol=fields.string(entry.get("appProtocol"), f"{field}.appProtocol")
                or None,
            )
        )
    proxy_protocol = meta.annotations.get(PROXY_PROTOCOL_ANNOTATION)
    if proxy_protocol not in (None, "v2"):
        fields.problem(
            f"metadata.annotations[{PROXY_PROTOCOL_ANNOTATION}]",
            "UnsupportedValue",
            f"PROXY protocol {proxy_protocol!r} is not supported, v2 is; no header is sent",
            Severity.WARNING,
        )
    status = fields.mapping(raw.get("status"), "status") or {}
    balancer = fields.mapping(status.get("loadBalancer"), "status.loadBalancer") or {}
    addresses: list[str] = []
    for index, item in enumerate(
        fields.items(balancer.get("ingress"), "status.loadBalancer.ingress")
    ):
        entry = fields.mapping(item, f"status.loadBalancer.ingress[{index}]") or {}
        address = entry.get("ip") or entry.get("hostname")
        if isinstance(address, str) and address:
            addresses.append(address)
    return Service(
        meta=meta,
        type=fields.string(spec.get("type"), "spec.type") or "ClusterIP",
        external_name=fields.string(spec.get("externalName"), "spec.externalName") or None,
        cluster_ip=fields.string(spec.get("clusterIP"), "spec.clusterIP") or None,
        ports=pvector(ports),
        load_balancer=pvector(addresses),
        external_ips=pvector(
            ip
            for index, item in enumerate(fields.items(spec.get("externalIPs"), "spec.externalIPs"))
            if (ip := fields.string(item, f"spec.externalIPs[{index}]"))
        ),
        diagnostics=fields.diagnostics(),
    )


def _endpoint_slice(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> EndpointSlice:
    del spec  # EndpointSlice keeps its fields at the top level
    ports: list[EndpointPort] = []
    for index, item in enumerate(fields.items(raw.get("ports"), "ports")):
        entry = fields.mapping(item, f"ports[{index}]")
        if entry is None:
            continue
        number = fields.integer(entry.get("port"), f"ports[{index}].port", low=1, high=_PORT_MAX)
        if number is None:
            continue  # a port without a number means "all ports": nothing to dial
        ports.append(
            EndpointPort(
                name=fields.string(entry.get("name"), f"ports[{index}].name") or "",
                port=number,
                protocol=fields.string(entry.get("protocol"), f"ports[{index}].protocol") or "TCP",
            )
        )
    endpoints: list[SliceEndpoint] = []
    for index, item in enumerate(fields.items(raw.get("endpoints"), "endpoints")):
        field = f"endpoints[{index}]"
        entry = fields.mapping(item, field)
        if entry is None:
            continue
        addresses = fields.items(entry.get("addresses"), f"{field}.addresses")
        address = fields.string(addresses[0], f"{field}.addresses[0]") if addresses else None
        if not address:
            fields.problem(f"{field}.addresses", "InvalidField", "no address; ignored")
            continue
        conditions = fields.mapping(entry.get("conditions"), f"{field}.conditions") or {}
        ready = fields.boolean(conditions.get("ready"), f"{field}.conditions.ready")
        # discovery.k8s.io/v1: "nil should be interpreted as true" for ready.
        endpoints.append(SliceEndpoint(address=address, ready=ready is not False))
    return EndpointSlice(
        meta=meta,
        service_name=meta.labels.get(SERVICE_NAME_LABEL),
        address_type=fields.string(raw.get("addressType"), "addressType") or "IPv4",
        ports=pvector(ports),
        endpoints=pvector(endpoints),
        diagnostics=fields.diagnostics(),
    )


# --- Secrets and namespaces ---------------------------------------------------------------------


def _secret(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> Secret:
    del spec
    secret_type = fields.string(raw.get("type"), "type") or "Opaque"
    data = _secret_data(fields, raw)
    keypair: KeyPair | None = None
    problem: str | None = None
    chain, key = data.get("tls.crt"), data.get("tls.key")
    # any type may hold a pair: ingress-nginx's proxy-ssl-secret is often a generic Secret
    if secret_type == "kubernetes.io/tls" or (chain and key):
        if not chain or not key:
            problem = "the Secret has no tls.crt or no tls.key"
        else:
            parsed = parse_keypair(chain, key)
            keypair, problem = (parsed, None) if isinstance(parsed, KeyPair) else (None, parsed)
    ca_bundle: str | None = None
    if ca := data.get("ca.crt"):
        ca_problem = parse_ca_bundle(ca)
        if ca_problem is None:
            ca_bundle = ca.decode("ascii", "replace")
        elif problem is None and keypair is None:
            problem = f"ca.crt {ca_problem}"
    return Secret(
        meta=meta,
        type=secret_type,
        keypair=keypair,
        problem=problem,
        ca_bundle=ca_bundle,
        htpasswd=data["auth"].decode("utf-8", "replace") if "auth" in data else None,
        diagnostics=fields.diagnostics(),
    )


_SECRET_KEYS_READ: Final = ("tls.crt", "tls.key", "ca.crt", "auth")


def _secret_data(fields: FieldReader, raw: Mapping[str, Any]) -> dict[str, bytes]:
    """``data`` (base64) overlaid by ``stringData`` (as the API server merges them)."""
    found: dict[str, bytes] = {}
    data = fields.mapping(raw.get("data"), "data") or {}
    for name in _SECRET_KEYS_READ:
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            fields.problem(f"data[{name!r}]", "InvalidField", "expected base64 text")
            continue
        try:
            found[name] = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            fields.problem(f"data[{name!r}]", "InvalidField", "is not valid base64")
    strings = fields.mapping(raw.get("stringData"), "stringData") or {}
    for name in _SECRET_KEYS_READ:
        text = fields.string(strings.get(name), f"stringData[{name!r}]")
        if text is not None:
            found[name] = text.encode("utf-8", "replace")  # a lone surrogate cannot be PEM
    return found


def _namespace(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> Namespace:
    del raw, spec
    return Namespace(meta=meta, diagnostics=fields.diagnostics())


_Decoder = Callable[[FieldReader, Meta, Mapping[str, Any], Mapping[str, Any]], StateObject]

_GATEWAY_VERSIONS: Final = frozenset({"v1", "v1beta1"})

# (API group, kind) → (versions read, namespaced, decoder).
_DECODERS: Final[dict[tuple[str, str], tuple[frozenset[str], bool, _Decoder]]] = {
    ("networking.k8s.io", "Ingress"): (frozenset({"v1"}), True, decode_ingress),
    ("networking.k8s.io", "IngressClass"): (frozenset({"v1"}), False, decode_ingress_class),
    ("", "Service"): (frozenset({"v1"}), True, _service),
    ("discovery.k8s.io", "EndpointSlice"): (frozenset({"v1"}), True, _endpoint_slice),
    ("", "Secret"): (frozenset({"v1"}), True, _secret),
    ("", "Namespace"): (frozenset({"v1"}), False, _namespace),
    ("", "ConfigMap"): (frozenset({"v1"}), True, decode_config_map),
    (GATEWAY_GROUP, "GatewayClass"): (_GATEWAY_VERSIONS, False, decode_gateway_class),
    (GATEWAY_GROUP, "Gateway"): (_GATEWAY_VERSIONS, True, decode_gateway),
    (GATEWAY_GROUP, "HTTPRoute"): (_GATEWAY_VERSIONS, True, decode_httproute),
    (GATEWAY_GROUP, "GRPCRoute"): (frozenset({"v1"}), True, decode_grpcroute),
    (GATEWAY_GROUP, "TLSRoute"): (frozenset({"v1"}), True, decode_stream_route),
    (GATEWAY_GROUP, "TCPRoute"): (frozenset({"v1"}), True, decode_stream_route),
    (GATEWAY_GROUP, "UDPRoute"): (frozenset({"v1"}), True, decode_stream_route),
    (GATEWAY_GROUP, "ReferenceGrant"): (_GATEWAY_VERSIONS, True, decode_reference_grant),
    (GATEWAY_GROUP, "ListenerSet"): (frozenset({"v1"}), True, decode_listener_set),
    (GATEWAY_GROUP, "BackendTLSPolicy"): (frozenset({"v1"}), True, decode_backend_tls_policy),
    (PARAMETERS_GROUP, "CoxswainGatewayParameters"): (
        frozenset({"v1alpha1"}),
        True,
        decode_parameters,
    ),
    ("apps", "Deployment"): (frozenset({"v1"}), True, decode_deployment),
    ("", "ServiceAccount"): (frozenset({"v1"}), True, decode_service_account),
}
