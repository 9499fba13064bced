"""``Programmed`` from the fleet (docs/contracts.md, "The discovery protocol"): a proxy bound
the listener's port and acked a snapshot of the Gateway's current generation; offline every
valid listener counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from coxswain.compile import build_state, status


def gateway_state(name: str = "web") -> Any:
    return build_state(
        [
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "GatewayClass",
                "metadata": {"name": "coxswain"},
                "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
            },
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "Gateway",
                "metadata": {"name": name, "namespace": "app", "generation": 3},
                "spec": {
                    "gatewayClassName": "coxswain",
                    "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
                },
            },
        ]
    )


def programmed(programmed_pairs: Any) -> tuple[str, str, str]:
    found = {
        s.kind: json.loads(s.body) for s in status(gateway_state(), programmed=programmed_pairs)
    }
    gateway = {c["type"]: c for c in found["Gateway"]["conditions"]}["Programmed"]
    listener = {c["type"]: c for c in found["Gateway"]["listeners"][0]["conditions"]}["Programmed"]
    return gateway["status"], listener["status"], listener["reason"]


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        (None, ("True", "True", "Programmed")),  # offline
        ({("app/web", 30000)}, ("True", "True", "Programmed")),  # its internal port
        (set(), ("False", "False", "Pending")),  # no proxy yet
        ({("app/web", 30001)}, ("False", "False", "Pending")),  # another port
        ({("app/other", 30000)}, ("False", "False", "Pending")),  # another Gateway's pair
    ],
)
def test_a_listener_is_programmed_when_its_gateway_and_port_were_bound_and_acked(
    pairs: Any, expected: tuple[str, str, str]
) -> None:
    assert programmed(pairs) == expected


def listener_set_status(programmed_pairs: Any) -> list[dict[str, Any]]:
    """A ListenerSet's own conditions, without their transition times."""
    state = build_state(
        [
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "GatewayClass",
                "metadata": {"name": "coxswain"},
                "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
            },
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "Gateway",
                "metadata": {"name": "web", "namespace": "app", "generation": 3},
                "spec": {
                    "gatewayClassName": "coxswain",
                    "allowedListeners": {"namespaces": {"from": "Same"}},
                    "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
                },
            },
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "ListenerSet",
                "metadata": {"name": "more", "namespace": "app", "generation": 2},
                "spec": {
                    "parentRef": {"name": "web"},
                    "listeners": [
                        {"name": "extra", "port": 80, "protocol": "HTTP", "hostname": "a.example"}
                    ],
                },
            },
        ]
    )
    [found] = [s for s in status(state, programmed=programmed_pairs) if s.kind == "ListenerSet"]
    return [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in json.loads(found.body)["conditions"]
    ]


def test_a_listener_set_is_pending_until_a_proxy_binds_a_port_of_its_listeners() -> None:
    pending = listener_set_status(set())
    assert pending[1] == {
        "type": "Programmed",
        "status": "False",
        "reason": "Pending",
        "message": "no proxy has bound a port of its listeners and acked this generation yet",
        "observedGeneration": 2,
    }
    assert pending[0]["status"] == "True"  # accepted: only the fleet is missing
    assert listener_set_status(None)[1]["status"] == "True"
