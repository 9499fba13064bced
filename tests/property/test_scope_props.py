"""Scope isolation and port stability (issue: deployment models), as properties.

Worlds of shared and dedicated Gateways with overlapping hostnames, cross-namespace routes,
shared TLS Secrets and Ingresses. Properties:
(a) the SharedPool snapshot holds nothing of a ready dedicated Gateway;
(b) a Gateway scope holds only that Gateway and an empty Ingress table;
(c) objects that do not attach to Gateway G leave G's scope snapshot byte-identical;
(d) internal ports are never shared between Gateways (also in test_gateway_props);
(e) across any sequence of Gateway additions and removals, with the VIP Services the
    controller would apply fed back, a surviving Gateway's internal ports never change;
(f) compile, status and provision are deterministic and permutation-invariant.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile import SharedPool, build_state, compile, status
from coxswain.compile.config import CompileConfig
from coxswain.compile.provision import provision
from coxswain.compile.scope import GatewayScope
from coxswain.compile.snapshot_json import dump_snapshot

from .gateway_strategies import OUR_CLASS
from .scope_strategies import GW, NAMES, NAMESPACES, ROUTE_KINDS, gateway, gateways, worlds

pytestmark = pytest.mark.property


def _dedicated_ready(bodies: list[dict[str, Any]]) -> set[str]:
    ready = {
        (b["metadata"]["namespace"], b["metadata"]["name"])
        for b in bodies
        if b["kind"] == "Deployment"
    }
    return {
        f"{b['metadata']['namespace']}/{b['metadata']['name']}"
        for b in bodies
        if b["kind"] == "Gateway"
        and "infrastructure" in b["spec"]
        and (b["metadata"]["namespace"], f"{b['metadata']['name']}-coxswain") in ready
    }


def _gateway_keys(bodies: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (b["metadata"]["namespace"], b["metadata"]["name"])
        for b in bodies
        if b["kind"] == "Gateway"
    ]


@given(worlds())
def test_shared_pool_holds_nothing_of_a_ready_dedicated_gateway(bodies):
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    ready = _dedicated_ready(bodies)
    assert not {h.gateway for h in snapshot.listener_health} & ready
    for tables in snapshot.gateways.values():
        assert not {t.gateway for t in tables.values()} & ready
        for table in tables.values():
            for rules in table.hosts.values():
                assert all(r.action.route.kind in ROUTE_KINDS for r in rules)
    gateway_ports = set(snapshot.gateways)
    for port in snapshot.tls:
        assert port == snapshot.ingress.https_port or port in gateway_ports
    assert set(snapshot.client_certs) <= gateway_ports


@given(worlds())
def test_a_gateway_scope_holds_only_its_gateway_and_no_ingress(bodies):
    state = build_state(bodies)
    for namespace, name in _gateway_keys(bodies):
        snapshot = compile(state, GatewayScope(namespace, name)).snapshot
        assert not snapshot.ingress.hosts
        assert {h.gateway for h in snapshot.listener_health} <= {f"{namespace}/{name}"}
        for tables in snapshot.gateways.values():
            assert {t.gateway for t in tables.values()} == {f"{namespace}/{name}"}
        assert all(h.target_port == h.port for h in snapshot.listener_health)
        assert snapshot.ingress.https_port not in snapshot.tls or any(
            h.port == snapshot.ingress.https_port for h in snapshot.listener_health
        )


@given(worlds(), st.data())
def test_objects_that_do_not_attach_leave_a_gateway_scope_byte_identical(bodies, data):
    state = build_state(bodies)
    keys = _gateway_keys(bodies)
    namespace, name = data.draw(st.sampled_from(keys))
    before = dump_snapshot(compile(state, GatewayScope(namespace, name)).snapshot)
    others = [k for k in ((n, g) for g in NAMES for n in NAMESPACES) if k != (namespace, name)]
    noise: list[dict[str, Any]] = []
    for i, (ns, gw) in enumerate(
        data.draw(st.lists(st.sampled_from(others), max_size=3, unique=True))
    ):
        noise.extend(data.draw(gateways(gw, ns)))
        noise.append(
            {
                "apiVersion": GW,
                "kind": data.draw(st.sampled_from(("HTTPRoute", "GRPCRoute"))),
                "metadata": {"name": f"noise{i}", "namespace": ns},
                "spec": {
                    "parentRefs": [{"name": gw, "namespace": ns}],
                    "hostnames": ["foo.test"],
                    "rules": [{}],
                },
            }
        )
    existing = {(b["kind"], b["metadata"].get("namespace"), b["metadata"]["name"]) for b in bodies}
    noise = [
        b
        for b in noise
        if (b["kind"], b["metadata"].get("namespace"), b["metadata"]["name"]) not in existing
    ]
    after = dump_snapshot(
        compile(build_state([*bodies, *noise]), GatewayScope(namespace, name)).snapshot
    )
    assert after == before


def _vip_services(bodies: list[dict[str, Any]], config: CompileConfig) -> list[dict[str, Any]]:
    desired = provision(build_state(bodies), config)
    return [
        json.loads(o.body)
        for o in desired.objects
        if o.kind == "Service" and o.namespace == config.namespace
    ]


def _internal_ports(bodies: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    return {(h.gateway, h.port): h.target_port for h in snapshot.listener_health if h.target_port}


@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from(NAMES),
            st.sampled_from(NAMESPACES),
            st.sampled_from((80, 8080)),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_surviving_gateways_keep_their_internal_ports(operations):
    config = CompileConfig()
    present: dict[tuple[str, str], dict[str, Any]] = {}
    vips: list[dict[str, Any]] = []
    previous: dict[tuple[str, int], int] = {}
    for add, name, namespace, port in operations:
        if add:
            present.setdefault(
                (namespace, name),
                gateway(name, namespace, dedicated=False, ports=[port], https=False, streams=False),
            )
        else:
            present.pop((namespace, name), None)
        bodies = [OUR_CLASS, *present.values(), *vips]
        ports = _internal_ports(bodies)
        for pair, target in ports.items():
            if pair in previous:
                assert previous[pair] == target, f"{pair} moved from {previous[pair]} to {target}"
        assert len(set(ports.values())) == len(ports)
        previous = ports
        # The controller applies the desired VIP Services and deletes the others.
        vips = _vip_services(bodies, config)


@given(worlds(), st.data())
def test_compile_status_and_provision_are_permutation_invariant(bodies, data):
    shuffled = data.draw(st.permutations(bodies))

    def everything(items: list[dict[str, Any]]) -> tuple[Any, ...]:
        state = build_state(items)
        desired = provision(state, CompileConfig())
        return (
            dump_snapshot(compile(state, SharedPool()).snapshot),
            [s.body for s in status(state)],
            [o.body for o in desired.objects],
            list(desired.deletions),
            *(
                dump_snapshot(compile(state, GatewayScope(ns, n)).snapshot)
                for ns, n in sorted(_gateway_keys(items))
            ),
        )

    assert everything(shuffled) == everything(bodies)
