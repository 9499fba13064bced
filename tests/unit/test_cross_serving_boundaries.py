"""compile.gateway.cross_serving: what a GRPCRoute that loses hostnames to an older HTTPRoute
is told, on each of its parents, exactly (GEP-1016, "Cross Serving")."""

from __future__ import annotations

import json
from typing import Any

from coxswain.compile import SharedPool, build_state, compile, status

GW = "gateway.networking.k8s.io/v1"
HOSTS = ["x.example", "y.example"]


def _gateway(name: str, *listeners: str) -> dict[str, Any]:
    return {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "gatewayClassName": "coxswain",
            "listeners": [
                {"name": listener, "port": 80 + i, "protocol": "HTTP"}
                for i, listener in enumerate(listeners)
            ],
        },
    }


def _route(kind: str, name: str, created: str, parents: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": GW,
        "kind": kind,
        "metadata": {"name": name, "namespace": "app", "creationTimestamp": created},
        "spec": {
            "parentRefs": parents,
            "hostnames": HOSTS,
            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}],
        },
    }


def test_each_parent_of_a_losing_route_is_settled_on_its_own() -> None:
    objects = [
        {
            "apiVersion": GW,
            "kind": "GatewayClass",
            "metadata": {"name": "coxswain"},
            "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "app"},
            "spec": {"ports": [{"port": 80}]},
        },
        _gateway("solo", "a"),
        _gateway("mixed", "a", "b"),
        _gateway("web", "a", "b"),
        _route(
            "HTTPRoute",
            "old",
            "2020-01-01T00:00:00Z",
            [{"name": "web"}, {"name": "mixed", "sectionName": "a"}],
        ),
        _route(
            "GRPCRoute",
            "new",
            "2030-01-01T00:00:00Z",
            [{"name": "solo"}, {"name": "mixed"}, {"name": "web"}],
        ),
    ]
    state = build_state(objects)
    [grpc] = [json.loads(s.body) for s in status(state) if s.kind == "GRPCRoute"]
    accepted = [
        next(
            (c["status"], c["reason"], c["message"])
            for c in p["conditions"]
            if c["type"] == "Accepted"
        )
        for p in grpc["parents"]
    ]
    why = (
        "an HTTPRoute that takes precedence (older, or first by namespace/name) serves a "
        "hostname overlapping x.example, y.example there, and HTTPRoutes and GRPCRoutes do not "
        "share hostnames on a listener (GEP-1016)"
    )
    assert accepted == [
        ("True", "Accepted", ""),
        ("True", "Accepted", ""),
        (
            "False",
            "HostnameConflict",
            f"listener a of Gateway app/web: {why}; listener b of Gateway app/web: {why}",
        ),
    ]
    notes = [
        (d.field, d.message)
        for d in compile(state, SharedPool()).diagnostics
        if d.key is not None and d.key.kind == "GRPCRoute" and d.reason == "HostnameConflict"
    ]
    lost = f"listener a of Gateway app/web: {why}; listener b of Gateway app/web: {why}"
    assert notes == [
        ("spec.parentRefs[1]", f"not served on listener a of Gateway app/mixed: {why}"),
        ("spec.parentRefs[2]", lost),
    ]
