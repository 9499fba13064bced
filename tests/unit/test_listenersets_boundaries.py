"""compile.gateway.listenersets: a ListenerSet's ``Accepted`` condition, exactly (GEP-1713)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from coxswain.compile import build_state, status

GW = "gateway.networking.k8s.io/v1"


def _accepted(namespaces_from: str, listeners: list[dict[str, Any]]) -> dict[str, Any]:
    """The ListenerSet's Accepted condition, without its transition time."""
    state = build_state(
        [
            {
                "apiVersion": GW,
                "kind": "GatewayClass",
                "metadata": {"name": "coxswain"},
                "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
            },
            {
                "apiVersion": GW,
                "kind": "Gateway",
                "metadata": {"name": "web", "namespace": "app"},
                "spec": {
                    "gatewayClassName": "coxswain",
                    "allowedListeners": {"namespaces": {"from": namespaces_from}},
                    "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
                },
            },
            {
                "apiVersion": GW,
                "kind": "ListenerSet",
                "metadata": {"name": "more", "namespace": "app"},
                "spec": {"parentRef": {"name": "web"}, "listeners": listeners},
            },
        ]
    )
    [found] = [s for s in status(state) if s.kind == "ListenerSet"]
    [accepted] = [c for c in json.loads(found.body)["conditions"] if c["type"] == "Accepted"]
    return {k: accepted[k] for k in ("status", "reason", "message")}


def _listener(name: str, protocol: str = "HTTP") -> dict[str, Any]:
    return {"name": name, "port": 80, "protocol": protocol, "hostname": f"{name}.example"}


@pytest.mark.parametrize(
    ("namespaces_from", "listeners", "accepted"),
    [
        (
            "Elsewhere",
            [_listener("a")],
            {
                "status": "False",
                "reason": "NotAllowed",
                "message": "Gateway app/web has allowedListeners.namespaces.from 'Elsewhere', "
                "which admits none (spec.allowedListeners)",
            },
        ),
        (
            "Same",
            [],
            {"status": "False", "reason": "ListenersNotValid", "message": "no listener"},
        ),
        (
            "Same",
            [_listener("a", "FTP"), _listener("b", "FTP"), _listener("c")],
            {
                "status": "True",
                "reason": "ListenersNotValid",
                "message": "listeners not valid: a, b",
            },
        ),
    ],
)
def test_a_listener_set_is_refused_or_accepted_with_the_reason_why(
    namespaces_from: str, listeners: list[dict[str, Any]], accepted: dict[str, Any]
) -> None:
    assert _accepted(namespaces_from, listeners) == accepted
