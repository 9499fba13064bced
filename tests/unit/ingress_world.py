"""Ingress worlds for route tests: objects, Services with EndpointSlices, and the table they
compile to (shared by tests/unit/test_route_select.py and tests/hostile)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import trustme

from coxswain.compile import CompileConfig, SharedPool, build_state, compile
from coxswain.compile.config import DEFAULT_INGRESS_CONTROLLER
from coxswain.route import RouteTable, build_table

if TYPE_CHECKING:
    from coxswain.compile.model.objects import Ingress
    from coxswain.compile.model.state import ClusterState

NETWORKING = "networking.k8s.io/v1"
NGINX = "nginx.ingress.kubernetes.io/"
INGRESS_CLASS = {
    "apiVersion": NETWORKING,
    "kind": "IngressClass",
    "metadata": {"name": "coxswain"},
    "spec": {"controller": DEFAULT_INGRESS_CONTROLLER},
}


def service_backend(service: str, port: int = 80) -> dict[str, Any]:
    return {"service": {"name": service, "port": {"number": port}}}


def path(p: str, service: str, path_type: str = "Prefix") -> dict[str, Any]:
    return {"path": p, "pathType": path_type, "backend": service_backend(service)}


def rule(host: str | None, *paths: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"http": {"paths": list(paths)}}
    if host is not None:
        found["host"] = host
    return found


def ingress(
    name: str,
    *rules: dict[str, Any],
    default: str | None = None,
    tls: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"ingressClassName": "coxswain"}
    if rules:
        spec["rules"] = list(rules)
    if default is not None:
        spec["defaultBackend"] = service_backend(default)
    if tls is not None:
        spec["tls"] = tls
    return {
        "apiVersion": NETWORKING,
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "apps", "annotations": annotations or {}},
        "spec": spec,
    }


def annotated(annotations: dict[str, str], *extra: dict[str, Any]) -> tuple[Ingress, ClusterState]:
    """The Ingress ``apps/web`` (``a.example``, ``/`` to Service ``a``) with these
    ingress-nginx annotations (named without their prefix), decoded beside ``extra`` objects;
    and the state."""
    body = ingress(
        "web",
        rule("a.example", path("/", "a")),
        annotations={NGINX + k: v for k, v in annotations.items()},
    )
    state = build_state([body, *extra])
    (only,) = state.ingresses.values()
    return only, state


def htpasswd_secret(text: str) -> dict[str, object]:
    """The Secret ``apps/users`` whose ``auth`` key holds ``text`` (an htpasswd file)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "users", "namespace": "apps"},
        "type": "Opaque",
        "data": {"auth": base64.b64encode(text.encode()).decode()},
    }


def service(
    name: str, *, ready: tuple[str, ...] = ("10.0.0.1",), not_ready: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """A Service on port 80 (target 8080) and an EndpointSlice for it."""
    endpoints = [{"addresses": [a], "conditions": {"ready": True}} for a in ready]
    endpoints += [{"addresses": [a], "conditions": {"ready": False}} for a in not_ready]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-1",
                "namespace": "apps",
                "labels": {"kubernetes.io/service-name": name},
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080}],
            "endpoints": endpoints,
        },
    ]


SERVICES = ["a", "b", "c", "exact", "prefix", "wild", "catch", "fallback", "root", "web", "admin"]


def table_of(*objects: dict[str, Any], config: CompileConfig | None = None) -> RouteTable:
    bodies = [INGRESS_CLASS, *objects, *(b for name in SERVICES for b in service(name))]
    result = compile(build_state(bodies), SharedPool(), config or CompileConfig())
    return build_table(result.snapshot)


def tls_secret(host: str, name: str) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret ``apps/<name>`` with a certificate for ``host``, issued
    in memory by a throwaway CA."""
    cert = trustme.CA().issue_cert(host)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "apps"},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": b"".join(p.bytes() for p in cert.cert_chain_pems).decode(),
            "tls.key": cert.private_key_pem.bytes().decode(),
        },
    }
