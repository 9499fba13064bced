"""Kubernetes objects the controller and standalone tests create, built one way."""

from __future__ import annotations

from typing import Any


def ingress_class(*, default: bool = False) -> dict[str, Any]:
    """IngressClass ``coxswain``; ``default`` marks it the cluster's default class."""
    metadata: dict[str, Any] = {"name": "coxswain"}
    if default:
        metadata["annotations"] = {"ingressclass.kubernetes.io/is-default-class": "true"}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": metadata,
        "spec": {"controller": "coxswain-labs.dev/ingress-controller"},
    }


def gateway_class() -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": "coxswain"},
        "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
    }


def gateway(name: str, port: int, **spec: Any) -> dict[str, Any]:
    """A Gateway of class ``coxswain`` in ``app`` with one HTTP listener on ``port``."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "gatewayClassName": "coxswain",
            "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
            **spec,
        },
    }


def own_infrastructure() -> dict[str, Any]:
    """A Gateway's ``infrastructure`` naming the CoxswainGatewayParameters ``own``."""
    return {
        "parametersRef": {
            "group": "gateway.coxswain-labs.dev",
            "kind": "CoxswainGatewayParameters",
            "name": "own",
        }
    }


def own_parameters(spec: dict[str, Any]) -> dict[str, Any]:
    """The CoxswainGatewayParameters ``app/own`` (a dedicated proxy) with ``spec``."""
    return {
        "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
        "kind": "CoxswainGatewayParameters",
        "metadata": {"name": "own", "namespace": "app"},
        "spec": spec,
    }


def http_route(name: str, parent: str, service: str, **spec: Any) -> dict[str, Any]:
    """An HTTPRoute ``app/name`` attached to Gateway ``parent``, to ``service``:80."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "parentRefs": [{"name": parent}],
            **spec,
            "rules": [{"backendRefs": [{"name": service, "port": 80}]}],
        },
    }


def grpc_route(name: str, parent: str, *rules: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A GRPCRoute ``app/name`` attached to Gateway ``parent`` with ``rules``."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GRPCRoute",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {"parentRefs": [{"name": parent}], **spec, "rules": list(rules)},
    }


def stream_route(kind: str, name: str, parent: str, service: str) -> dict[str, Any]:
    """A TLSRoute, TCPRoute or UDPRoute ``app/name`` attached to Gateway ``parent``, to
    ``service``:80."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "parentRefs": [{"name": parent}],
            **({"hostnames": ["db.example.com"]} if kind == "TLSRoute" else {}),
            "rules": [{"backendRefs": [{"name": service, "port": 80}]}],
        },
    }


def listener_set(name: str, parent: str, port: int) -> dict[str, Any]:
    """A ListenerSet ``app/name`` of Gateway ``parent`` with one HTTP listener on ``port``."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "ListenerSet",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "parentRef": {"name": parent},
            "listeners": [{"name": "extra", "port": port, "protocol": "HTTP"}],
        },
    }


def backend_tls_policy(name: str, service: str) -> dict[str, Any]:
    """A BackendTLSPolicy ``app/name`` on Service ``service``, its CA a ConfigMap that the
    input lacks (so its status says NoValidCACertificate)."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "BackendTLSPolicy",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "targetRefs": [{"group": "", "kind": "Service", "name": service}],
            "validation": {
                "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "missing-ca"}],
                "hostname": f"{service}.example.com",
            },
        },
    }


def default_ingress(service: str, name: str = "site") -> dict[str, Any]:
    """An Ingress of class ``coxswain`` sending everything to ``service``:80 in ``app``."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "ingressClassName": "coxswain",
            "defaultBackend": {"service": {"name": service, "port": {"number": 80}}},
        },
    }


def backend(name: str, port: int) -> list[dict[str, Any]]:
    """Service ``app/name`` (port 80) and its EndpointSlice: one ready 127.0.0.1:``port``."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "app"},
            "spec": {"ports": [{"port": 80, "targetPort": port}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-1",
                "namespace": "app",
                "labels": {"kubernetes.io/service-name": name},
            },
            "addressType": "IPv4",
            "ports": [{"name": "", "port": port}],
            "endpoints": [{"addresses": ["127.0.0.1"]}],
        },
    ]


def tls_secret(namespace: str, name: str, leaf: Any) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret holding a trustme leaf certificate's chain and key."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": "".join(b.bytes().decode() for b in leaf.cert_chain_pems),
            "tls.key": leaf.private_key_pem.bytes().decode(),
        },
    }
