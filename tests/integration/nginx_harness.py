"""Ingresses written for ingress-nginx, compiled as the controller compiles them, for the live
tests of its annotations (docs/migrating-from-ingress-nginx.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coxswain.compile import CompileConfig, SharedPool, build_state, compile
from coxswain.compile.snapshot_json import snapshot_to_data

from .manifests import backend as manifest_backend
from .manifests import ingress_class

if TYPE_CHECKING:
    from collections.abc import Callable

NGINX = "nginx.ingress.kubernetes.io/"


def shop(annotations: dict[str, str], *paths: tuple[str, str, str]) -> dict[str, Any]:
    """Ingress ``app/shop`` on shop.example.com: (path, pathType, service) each."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "shop", "namespace": "app", "annotations": annotations},
        "spec": {
            "ingressClassName": "coxswain",
            "rules": [
                {
                    "host": "shop.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": p,
                                "pathType": kind,
                                "backend": {"service": {"name": s, "port": {"number": 80}}},
                            }
                            for p, kind, s in paths
                        ]
                    },
                }
            ],
        },
    }


def compiled(
    *objects: dict[str, Any], config: CompileConfig | None = None
) -> Callable[[dict[str, int]], dict[str, Any]]:
    """The snapshot of ``objects`` with the echo backends ``one`` and ``two`` as Services,
    compiled with ``config`` (the controller's flags; its defaults when None)."""

    def make(ports: dict[str, int]) -> dict[str, Any]:
        bodies = [ingress_class(), *objects]
        for name in ("one", "two"):
            bodies += manifest_backend(name, ports[name])
        result = compile(build_state(bodies), SharedPool(), config or CompileConfig())
        return snapshot_to_data(result.snapshot)

    return make


def spread_service(service: str, ports: dict[str, int]) -> list[dict[str, Any]]:
    """Service ``app/<service>`` with one endpoint on 127.0.0.1 per port of ``ports`` (one
    EndpointSlice each, named after its key)."""
    slices = [
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service}-{name}",
                "namespace": "app",
                "labels": {"kubernetes.io/service-name": service},
            },
            "addressType": "IPv4",
            "ports": [{"name": "", "port": port}],
            "endpoints": [{"addresses": ["127.0.0.1"]}],
        }
        for name, port in ports.items()
    ]
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": service, "namespace": "app"},
        "spec": {"ports": [{"port": 80}]},
    }
    return [body, *slices]
