"""compile.scope_check: each reason a scope names no snapshot, and what serves nothing."""

from __future__ import annotations

from typing import Any

import pytest

from coxswain.compile import CompileConfig, SharedPool, build_state, compile
from coxswain.compile.scope import GatewayScope
from coxswain.compile.scope_check import scope_problem, serves_nothing

GW = "gateway.networking.k8s.io/v1"
CONTROLLER = "coxswain-labs.dev/gateway-controller"
SCOPE = GatewayScope("app", "edge")


def _class(name: str = "coxswain", controller: str = CONTROLLER, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GW,
        "kind": "GatewayClass",
        "metadata": {"name": name},
        "spec": {"controllerName": controller, **spec},
    }


def _gateway(class_name: str = "coxswain", **spec: Any) -> dict[str, Any]:
    listeners = [{"name": "http", "port": 80, "protocol": "HTTP"}]
    return {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": "edge", "namespace": "app"},
        "spec": {"gatewayClassName": class_name, "listeners": listeners, **spec},
    }


PARAMETERS = {
    "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
    "kind": "CoxswainGatewayParameters",
    "metadata": {"name": "own", "namespace": "app"},
    "spec": {},
}
OWN = {
    "parametersRef": {
        "group": "gateway.coxswain-labs.dev",
        "kind": "CoxswainGatewayParameters",
        "name": "own",
    }
}
NOT_DEDICATED = (
    "Gateway app/edge is not dedicated: the shared pool serves it (--scope shared); a "
    "CoxswainGatewayParameters gives a Gateway a proxy of its own (docs/dedicated-proxies.md)"
)


def test_the_shared_pool_always_has_a_snapshot():
    assert scope_problem(build_state([]), SharedPool(), CompileConfig()) is None


@pytest.mark.parametrize(
    ("bodies", "config", "problem"),
    [
        (
            [_class(), _gateway()],
            CompileConfig(gateway_api=False),
            "Gateway app/edge: the Gateway API is disabled, so only the shared pool has a snapshot",
        ),
        ([_class()], CompileConfig(), "there is no Gateway app/edge in the input"),
        (
            [_gateway()],
            CompileConfig(),
            "Gateway app/edge names GatewayClass coxswain, which is not in the input",
        ),
        (
            [_class(controller="example.com/other"), _gateway()],
            CompileConfig(),
            "Gateway app/edge is not served by Coxswain: its GatewayClass coxswain names "
            f"controller example.com/other, not {CONTROLLER}",
        ),
        ([_class(), _gateway()], CompileConfig(), NOT_DEDICATED),
        (
            [
                _class(),
                _gateway(
                    infrastructure={"parametersRef": {"group": "x", "kind": "Y", "name": "z"}}
                ),
            ],
            CompileConfig(),
            None,  # refused: the message is the Gateway's Accepted condition's
        ),
    ],
)
def test_each_reason_a_gateway_scope_has_no_snapshot(bodies, config, problem):
    found = scope_problem(build_state(bodies), SCOPE, config)
    if problem is None:
        assert found is not None
        assert found.startswith("Gateway app/edge is not accepted: ")
        assert found.endswith("(InvalidParameters)")
    else:
        assert found == problem


def test_a_dedicated_gateway_has_its_own_snapshot():
    state = build_state([_class(), _gateway(infrastructure=OWN), PARAMETERS])
    assert scope_problem(state, SCOPE, CompileConfig()) is None
    assert scope_problem(state, GatewayScope("app", "other"), CompileConfig()) == (
        "there is no Gateway app/other in the input"
    )


def test_a_snapshot_serves_something_when_an_ingress_host_or_a_listener_has_rules():
    assert serves_nothing(compile(build_state([]), SharedPool()).snapshot)
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "app"},
        "spec": {
            "ingressClassName": "coxswain",
            "rules": [
                {
                    "host": "a.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "web", "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ],
        },
    }
    ingress_class = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": "coxswain"},
        "spec": {"controller": "coxswain-labs.dev/ingress-controller"},
    }
    assert not serves_nothing(compile(build_state([ingress_class, ingress]), SharedPool()).snapshot)
    route = {
        "apiVersion": GW,
        "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "app"},
        "spec": {
            "parentRefs": [{"name": "edge"}],
            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}],
        },
    }
    listening = compile(build_state([_class(), _gateway()]), SharedPool()).snapshot
    assert listening.gateways  # a listener without rules
    assert serves_nothing(listening)
    routed = compile(build_state([_class(), _gateway(), route]), SharedPool()).snapshot
    assert not serves_nothing(routed)
