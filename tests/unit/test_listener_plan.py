"""route.plan: the sockets a snapshot needs, and the smallest change between two sets."""

from __future__ import annotations

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.scope import GatewayScope
from coxswain.route.plan import ListenerSpec, diff_listeners, listener_specs

GW = "gateway.networking.k8s.io/v1"
CLASS = {
    "apiVersion": GW,
    "kind": "GatewayClass",
    "metadata": {"name": "coxswain"},
    "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
}


def _gateway(protocols: dict[int, str], *, dedicated: bool = False) -> list[dict]:
    spec: dict = {
        "gatewayClassName": "coxswain",
        "listeners": [
            {"name": f"l{p}", "port": p, "protocol": proto} for p, proto in protocols.items()
        ],
    }
    bodies: list[dict] = [CLASS]
    if dedicated:
        spec["infrastructure"] = {
            "parametersRef": {
                "group": "gateway.coxswain-labs.dev",
                "kind": "CoxswainGatewayParameters",
                "name": "p",
            }
        }
        bodies.append(
            {
                "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
                "kind": "CoxswainGatewayParameters",
                "metadata": {"name": "p", "namespace": "a"},
                "spec": {},
            }
        )
    bodies.append(
        {
            "apiVersion": GW,
            "kind": "Gateway",
            "metadata": {"name": "g", "namespace": "a"},
            "spec": spec,
        }
    )
    return bodies


def test_shared_pool_binds_ingress_ports_and_ready_internal_ports():
    snapshot = compile(build_state(_gateway({80: "HTTP", 9000: "TCP"})), SharedPool()).snapshot
    specs = listener_specs(snapshot, ingress_http_port=8080, ingress_https_port=8443)
    assert specs == {
        8080: ListenerSpec(8080, tls=False),
        8443: ListenerSpec(8443, tls=True),
        30000: ListenerSpec(30000, tls=False),
    }


def test_dedicated_proxy_binds_spec_ports_and_no_ingress_port():
    snapshot = compile(
        build_state(_gateway({80: "HTTP"}, dedicated=True)), GatewayScope("a", "g")
    ).snapshot
    specs = listener_specs(snapshot, ingress_http_port=8080, ingress_https_port=8443)
    assert specs == {80: ListenerSpec(80, tls=False)}


def test_diff_keeps_unchanged_sockets_and_rebinds_only_a_changed_kind():
    current = {
        80: ListenerSpec(80, False),
        443: ListenerSpec(443, True),
        30000: ListenerSpec(30000, False),
    }
    wanted = {
        80: ListenerSpec(80, False),
        443: ListenerSpec(443, True),
        30000: ListenerSpec(30000, True),
        30001: ListenerSpec(30001, False),
    }
    plan = diff_listeners(current, wanted)
    assert plan.keep == (80, 443)
    assert plan.close == (30000,)
    assert plan.open == (ListenerSpec(30000, True), ListenerSpec(30001, False))


def test_diff_of_equal_sets_does_nothing_and_of_empty_closes_everything():
    specs = {80: ListenerSpec(80, False)}
    assert diff_listeners(specs, specs).open == ()
    assert diff_listeners(specs, specs).close == ()
    assert diff_listeners(specs, {}).close == (80,)
