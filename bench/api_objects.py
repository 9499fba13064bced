"""The Kubernetes API objects the benchmark workloads are built from, where two or more scripts
build them alike: the one self-signed certificate and its ``kubernetes.io/tls`` Secret, a
Service with its EndpointSlice, the default IngressClass, namespaced objects with uid and
creationTimestamp, a GatewayClass, a Gateway's HTTPS listener, path matches, and HTTPRoutes
with their Services and a 90/10 split.

Each script still generates its own workload from these (and checks what it compiles to).
Plain dictionaries, as the API server sends them; standard library only, plus
``cryptography`` (a Coxswain dependency) for the certificate.
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

# Every Service of a workload has this many endpoints ready, and this many more not ready.
ENDPOINTS_READY = 3
ENDPOINTS_NOT_READY = 1
# Workload objects are created from this moment on, a second apart; the certificate starts then.
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def make_tls_data(serial: int) -> dict[str, str]:
    """One self-signed EC P-256 certificate for *.example.com, as a Secret's ``data``.

    Each workload reuses it in every Secret: the compiler does not match certificate names
    against hostnames, and one certificate keeps the workload cheap to generate.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "*.example.com")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(EPOCH)
        .not_valid_after(EPOCH + dt.timedelta(days=3650))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("*.example.com"), x509.DNSName("example.com")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return {
        "tls.crt": base64.b64encode(chain).decode(),
        "tls.key": base64.b64encode(key_pem).decode(),
    }


def tls_secret(namespace: str, name: str, tls_data: dict[str, str]) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret holding (a copy of) ``tls_data``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "data": dict(tls_data),
    }


def service_bodies(
    namespace: str, service: str, seed: int, cluster_ip: str
) -> list[dict[str, Any]]:
    """A ClusterIP Service (port 80 named ``http``, target 8080) and its EndpointSlice, with
    ``ENDPOINTS_READY`` ready endpoints and ``ENDPOINTS_NOT_READY`` not ready; ``seed`` spreads
    the endpoint addresses."""
    base = f"10.{(seed >> 14) % 256}.{(seed >> 6) % 256}"
    endpoints = [
        {
            "addresses": [f"{base}.{(seed % 64) * 4 + i}"],
            "conditions": {"ready": i < ENDPOINTS_READY},
        }
        for i in range(ENDPOINTS_READY + ENDPOINTS_NOT_READY)
    ]
    return service_and_slice(
        namespace, service, cluster_ip=cluster_ip, target_port=8080, endpoints=endpoints
    )


def service_and_slice(
    namespace: str,
    service: str,
    *,
    cluster_ip: str,
    target_port: int,
    endpoints: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """A ClusterIP Service (port 80 named ``http``) and its one EndpointSlice of ``endpoints``
    on ``target_port``."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": cluster_ip,
                "ports": [
                    {"name": "http", "port": 80, "targetPort": target_port, "protocol": "TCP"}
                ],
            },
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service}-abcde",
                "namespace": namespace,
                "labels": {"kubernetes.io/service-name": service},
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": target_port, "protocol": "TCP"}],
            "endpoints": endpoints,
        },
    ]


INGRESS_CONTROLLER = "coxswain-labs.dev/ingress-controller"  # CompileConfig's default


def default_ingress_class() -> dict[str, Any]:
    """The IngressClass ``coxswain`` of the default controller, marked the cluster default."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {
            "name": "coxswain",
            "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
        },
        "spec": {"controller": INGRESS_CONTROLLER},
    }


def api_object(
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    spec: dict[str, Any],
    *,
    uid: str,
    created: int,
) -> dict[str, Any]:
    """A namespaced object as the API server holds it: ``uid``, generation 1, and a
    creationTimestamp ``created`` seconds after ``EPOCH``."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "generation": 1,
            "creationTimestamp": (EPOCH + dt.timedelta(seconds=created)).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
        },
        "spec": spec,
    }


def gateway_and_secret(
    namespace: str, index: int, spec: dict[str, Any], tls_data: dict[str, str]
) -> list[dict[str, Any]]:
    """Gateway ``gw-<index>`` with ``spec`` (created ``index`` seconds after ``EPOCH``) and
    the Secret ``gw-<index>-tls`` its HTTPS listener names (see ``https_listener``)."""
    name = f"gw-{index}"
    return [
        api_object(GATEWAY_API, "Gateway", namespace, name, spec, uid=f"uid-{name}", created=index),
        tls_secret(namespace, f"{name}-tls", tls_data),
    ]


def https_listener(hostname: str, secret: str) -> dict[str, Any]:
    """A Gateway listener ``https`` on 443 for ``hostname``, terminating TLS with ``secret``."""
    return {
        "name": "https",
        "port": 443,
        "protocol": "HTTPS",
        "hostname": hostname,
        "tls": {
            "mode": "Terminate",
            "certificateRefs": [{"kind": "Secret", "name": secret}],
        },
    }


def set_backend_refs(
    rules: list[dict[str, Any]], service: str, canary: str | None, split: frozenset[int]
) -> None:
    """Send every HTTPRoute rule to ``service`` port 80; with a ``canary``, split the rules at
    the indexes in ``split`` 90/10 between the two."""
    for slot, rule in enumerate(rules):
        if canary is not None and slot in split:
            rule["backendRefs"] = [
                {"name": service, "port": 80, "weight": 90},
                {"name": canary, "port": 80, "weight": 10},
            ]
        else:
            rule["backendRefs"] = [{"name": service, "port": 80}]


GATEWAY_API = "gateway.networking.k8s.io/v1"


def gateway_class(name: str, controller: str) -> dict[str, Any]:
    """A GatewayClass ``name`` of ``controller``, generation 1."""
    return {
        "apiVersion": GATEWAY_API,
        "kind": "GatewayClass",
        "metadata": {"name": name, "generation": 1},
        "spec": {"controllerName": controller},
    }


def path_match(kind: str, value: str) -> dict[str, Any]:
    """An HTTPRoute match on the path alone."""
    return {"path": {"type": kind, "value": value}}


@dataclass(frozen=True)
class RouteServices:
    """How ``gateway_route`` names an HTTPRoute's Services and makes their bodies."""

    split: frozenset[int]  # rules that even-numbered routes split 90/10 onto a canary
    bodies: Callable[[str, str, int], list[dict[str, Any]]]  # (namespace, Service, seed)


def gateway_route(
    namespace: str,
    gateway: int,
    route: int,
    spec: dict[str, Any],
    services: RouteServices,
    *,
    routes_per_gateway: int,
) -> tuple[list[dict[str, Any]], list[str]]:
    """HTTPRoute ``g<gateway>-route-<route>`` with ``spec`` (parentRefs, hostnames, rules),
    its rules sent to Service ``g<gateway>-svc-<route>`` and, for an even ``route``, the rules
    at ``services.split`` split 90/10 onto ``...-canary``; then every such Service's bodies.
    Returns the bodies (the HTTPRoute first) and the names of the Services."""
    name, service = f"g{gateway}-route-{route}", f"g{gateway}-svc-{route}"
    canary = f"{service}-canary" if route % 2 == 0 else None
    set_backend_refs(spec["rules"], service, canary, services.split)
    created = gateway * routes_per_gateway + route
    found = [api_object(GATEWAY_API, "HTTPRoute", namespace, name, spec, uid=f"uid-{name}",
                        created=created)]  # fmt: skip
    names = [service] if canary is None else [service, canary]
    for seed, svc in enumerate(names):
        found.extend(services.bodies(namespace, svc, (gateway * 10 + route) * 2 + seed))
    return found, names
