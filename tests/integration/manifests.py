"""Kubernetes objects the controller and standalone tests create, built one way."""

from __future__ import annotations

from typing import Any


def ingress_class() -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": "coxswain"},
        "spec": {"controller": "coxswain-labs.dev/ingress-controller"},
    }


def gateway_class() -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": "coxswain"},
        "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
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
