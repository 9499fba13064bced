"""Properties of the Gateway API passes over random small worlds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot_json import dump_snapshot, snapshot_from_data, snapshot_to_data
from tests.parity import unreported

from .gateway_strategies import ADDRESS_RANGES, OURS, messy_worlds, worlds

pytestmark = pytest.mark.property

RANGED = CompileConfig(gateway_address_ranges=ADDRESS_RANGES)  # static addresses in play


def _compiled(bodies: list[dict[str, Any]]) -> tuple[str, list[str], list[str]]:
    state = build_state(bodies)
    result = compile(state, SharedPool(), RANGED)
    statuses = [f"{s.kind} {s.namespace}/{s.name} {s.body}" for s in status(state, RANGED)]
    return dump_snapshot(result.snapshot), statuses, [str(d) for d in result.diagnostics]


@given(messy_worlds)
def test_compile_and_status_are_total_on_malformed_gateway_objects(bodies):
    text, statuses, _ = _compiled(bodies)
    assert snapshot_from_data(json.loads(text)).version.startswith("sha256:")
    for line in statuses:
        json.loads(line.split(" ", 2)[2])


@given(st.one_of(worlds, messy_worlds))
def test_every_problem_in_status_is_a_diagnostic(bodies):
    assert unreported(build_state(bodies), RANGED) == []


@given(st.data(), worlds)
def test_gateway_output_is_permutation_invariant(data, bodies):
    shuffled = data.draw(st.permutations(bodies))
    assert _compiled(shuffled) == _compiled(bodies)


@given(worlds)
def test_every_owned_object_gets_exactly_one_status(bodies):
    state = build_state(bodies)
    statuses = status(state)
    keys = [(s.kind, s.namespace, s.name) for s in statuses]
    assert len(keys) == len(set(keys))
    ours = {k.name for k, c in state.gateway_classes.items() if c.controller_name == OURS}
    expected = {("GatewayClass", "", name) for name in ours}
    owned_gateways = {k for k, g in state.gateways.items() if g.class_name in ours}
    expected |= {("Gateway", k.namespace, k.name) for k in owned_gateways}
    owned_sets = {
        k
        for k, s in state.listener_sets.items()
        if s.parent is not None
        and (s.parent.group, s.parent.kind) == ("gateway.networking.k8s.io", "Gateway")
        and ObjectKey("Gateway", s.parent.namespace or k.namespace, s.parent.name) in owned_gateways
    }
    expected |= {("ListenerSet", k.namespace, k.name) for k in owned_sets}
    parents = owned_gateways | owned_sets
    routes = [*state.httproutes.items(), *state.grpcroutes.items(), *state.streamroutes.items()]
    for key, route in routes:
        for ref in route.parent_refs:
            parent = ObjectKey(ref.kind, ref.namespace or key.namespace, ref.name)
            if ref.group == "gateway.networking.k8s.io" and parent in parents:
                expected.add((key.kind, key.namespace, key.name))
    # every policy: with no ancestor of ours, its status is how our stale entries go
    expected |= {("BackendTLSPolicy", k.namespace, k.name) for k in state.backend_tls_policies}
    assert set(keys) == expected


@given(worlds)
def test_gateway_tables_are_referentially_closed_and_isolated_by_port(bodies):
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    for port, tables in snapshot.gateways.items():
        assert len({t.gateway for t in tables.values()}) == 1, "one Gateway per internal port"
        for hostname, table in tables.items():
            if table.protocol == "HTTPS":
                assert hostname in snapshot.tls.get(port, {}), (
                    "an HTTPS listener has its certificate"
                )
            for rules in table.hosts.values():
                for rule in rules:
                    for backend in (
                        *rule.action.backends,
                        *(m.backend for m in rule.action.mirrors),
                    ):
                        if backend.valid:
                            assert backend.endpoints_key in snapshot.endpoints
    ports = [(h.gateway, h.port, h.target_port) for h in snapshot.listener_health if h.target_port]
    by_target: dict[int, set[tuple[str, int]]] = {}
    for gateway, port, target in ports:
        by_target.setdefault(target, set()).add((gateway, port))
    assert all(len(pairs) == 1 for pairs in by_target.values()), (
        "an internal port is one (Gateway, port)"
    )


@given(worlds)
def test_gateway_snapshot_json_round_trips(bodies):
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    assert snapshot_from_data(json.loads(json.dumps(snapshot_to_data(snapshot)))) == snapshot
