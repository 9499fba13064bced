"""The networks a dedicated proxy trusts with forwarding fields: the controller's
``--proxy-trusted-proxies`` (``CompileConfig.proxy_trusted_proxies``) and the parameters'
``spec.trustedProxies``, merged like every parameter and checked before they reach the proxy's
command line (docs/dedicated-proxies.md, "Client addresses behind a load balancer")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.model.limits import preview
from coxswain.compile.model.trusted_proxies import MAX_TRUSTED_PROXIES, trusted_proxies
from coxswain.compile.provision import provision
from tests.integration.manifests import gateway, gateway_class, own_infrastructure, own_parameters

FIELD = "spec.trustedProxies"
DEFAULTS = CompileConfig()


def _class_parameters(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """GatewayClass ``coxswain`` naming the parameters ``app/for-class`` with ``spec``."""
    parameters = own_parameters(spec)
    parameters["metadata"]["name"] = "for-class"
    gateway_class_ = gateway_class()
    gateway_class_["spec"]["parametersRef"] = {
        "group": "gateway.coxswain-labs.dev",
        "kind": "CoxswainGatewayParameters",
        "name": "for-class",
        "namespace": "app",
    }
    return [gateway_class_, parameters]


def _world(
    own: dict[str, Any] | None = None, for_class: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Gateway ``app/edge`` with a proxy of its own: its parameters ``own`` and its class's
    ``for_class`` (None: that level names none; at least one must be given)."""
    world = [gateway_class()] if for_class is None else _class_parameters(for_class)
    if own is None:
        return [*world, gateway("edge", 8080)]
    return [*world, own_parameters(own), gateway("edge", 8080, infrastructure=own_infrastructure())]


def _args(world: list[dict[str, Any]], config: CompileConfig = DEFAULTS) -> list[str]:
    [deployment] = [
        o for o in provision(build_state(world), config).objects if o.kind == "Deployment"
    ]
    [proxy] = json.loads(deployment.body)["spec"]["template"]["spec"]["containers"]
    args: list[str] = proxy["args"]
    return args


def _trusted(args: list[str]) -> str | None:
    return args[args.index("--trusted-proxies") + 1] if "--trusted-proxies" in args else None


def test_networks_are_canonical_in_their_order_without_duplicates() -> None:
    listed = ["fd00::/8", "10.0.0.1", "10.0.0.0/255.0.0.0", "FD00::/8", "::ffff:1.2.3.4/128"]
    assert trusted_proxies(listed, FIELD) == (
        ("fd00::/8", "10.0.0.1/32", "10.0.0.0/8", "::ffff:102:304/128"),
        [],
    )
    assert trusted_proxies([], FIELD) == ((), [])


@pytest.mark.parametrize(
    ("value", "problems"),
    [
        ("10.0.0.0/8", [(FIELD, "expected a list of networks, found str")]),
        ({"a": 1}, [(FIELD, "expected a list of networks, found dict")]),
        (
            ["10.0.0.0/8"] * (MAX_TRUSTED_PROXIES + 1),
            [(FIELD, f"lists 65 networks; at most {MAX_TRUSTED_PROXIES}")],
        ),
        (
            ["10.0.0.1/8", "10.0.0.0/8", 7, "x" * 65, "", "10.0.0.0/8,0.0.0.0/0"],
            [
                (f"{FIELD}[0]", "10.0.0.1/8 has host bits set"),
                (f"{FIELD}[2]", "7 is not an IPv4 or IPv6 network"),
                (f"{FIELD}[3]", f"{preview('x' * 65)} is not an IPv4 or IPv6 network"),
                (f"{FIELD}[4]", "'' does not appear to be an IPv4 or IPv6 network"),
                (
                    f"{FIELD}[5]",
                    "'10.0.0.0/8,0.0.0.0/0' does not appear to be an IPv4 or IPv6 network",
                ),
            ],
        ),
    ],
)
def test_anything_but_a_short_list_of_networks_is_refused_where_it_is(
    value: object, problems: list[tuple[str, str]]
) -> None:
    assert trusted_proxies(value, FIELD)[1] == problems


def test_the_controller_networks_reach_every_dedicated_proxy_and_none_is_no_flag() -> None:
    world = _world(own={"replicas": 2})
    assert _trusted(_args(world)) is None
    config = CompileConfig(proxy_trusted_proxies=("10.0.0.0/8", "fd00::/8"))
    args = _args(world, config)
    assert _trusted(args) == "10.0.0.0/8,fd00::/8"
    assert args.count("--trusted-proxies") == 1


def test_the_gateway_networks_replace_the_class_networks_which_replace_the_controller_ones() -> (
    None
):
    config = CompileConfig(proxy_trusted_proxies=("10.0.0.0/8",))
    assert _trusted(_args(_world(for_class={"trustedProxies": ["192.0.2.0/24"]}), config)) == (
        "192.0.2.0/24"
    )
    both = _world(
        own={"trustedProxies": ["198.51.100.7"]}, for_class={"trustedProxies": ["192.0.2.0/24"]}
    )
    assert _trusted(_args(both, config)) == "198.51.100.7/32"
    class_only = _world(own={"replicas": 2}, for_class={"trustedProxies": ["192.0.2.0/24"]})
    assert _trusted(_args(class_only, config)) == "192.0.2.0/24"


def test_an_empty_list_trusts_no_peer_whatever_the_controller_trusts() -> None:
    config = CompileConfig(proxy_trusted_proxies=("10.0.0.0/8",))
    assert _trusted(_args(_world(own={"trustedProxies": []}), config)) is None


def _accepted(world: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [s for s in status(build_state(world), CompileConfig()) if s.kind == kind]
    [accepted] = [c for c in json.loads(found.body)["conditions"] if c["type"] == "Accepted"]
    return {k: accepted[k] for k in ("status", "reason", "message")}


def test_a_bad_network_refuses_the_gateway_naming_the_field_and_nothing_is_provisioned() -> None:
    world = _world(own={"trustedProxies": ["10.0.0.0/8", "10.0.0.1/8", "proxy.example"]})
    state = build_state(world)
    desired = provision(state, CompileConfig(proxy_trusted_proxies=("10.0.0.0/8",)))
    assert (list(desired.objects), list(desired.held)) == ([], [("app", "edge-coxswain")])
    assert _accepted(world, "Gateway") == {
        "status": "False",
        "reason": "InvalidParameters",
        "message": "Gateway parametersRef CoxswainGatewayParameters app/own: invalid "
        "spec.trustedProxies[1], spec.trustedProxies[2]",
    }
    found = compile(state, SharedPool(), CompileConfig()).diagnostics
    assert [(d.key.ref if d.key else None, d.field, d.reason, d.message) for d in found] == [
        (
            "app/own",
            "spec.trustedProxies[1]",
            "InvalidParameters",
            "10.0.0.1/8 has host bits set; nothing is provisioned from these parameters",
        ),
        (
            "app/own",
            "spec.trustedProxies[2]",
            "InvalidParameters",
            "'proxy.example' does not appear to be an IPv4 or IPv6 network; nothing is "
            "provisioned from these parameters",
        ),
        (
            "app/edge",
            "spec.infrastructure.parametersRef",
            "InvalidParameters",
            "Gateway parametersRef CoxswainGatewayParameters app/own: invalid "
            "spec.trustedProxies[1], spec.trustedProxies[2]",
        ),
    ]


def test_a_bad_list_on_the_class_parameters_refuses_the_class() -> None:
    world = _world(for_class={"trustedProxies": "10.0.0.0/8"})
    assert _accepted(world, "GatewayClass") == {
        "status": "False",
        "reason": "InvalidParameters",
        "message": "GatewayClass parametersRef CoxswainGatewayParameters app/for-class: invalid "
        "spec.trustedProxies",
    }
    assert list(provision(build_state(world), CompileConfig()).objects) == []
