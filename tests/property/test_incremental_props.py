"""Incremental compilation equals compiling from scratch (``compile.memo``), as a property.

Random event sequences (objects of every kind the compiler reads added, edited and deleted,
some re-sent unchanged as a resync does) are folded into a state with ``apply``, one at a time;
after each, one ``CompileMemo`` kept across the whole sequence answers ``compile`` for the
shared pool and every Gateway's scope, ``status``, ``provision`` and ``grants``, and each
answer must be byte-identical to the pure function's on the same state. The memo is told the
keys each event touched at some steps (as the controller tells it), and finds them itself at
the others.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.grants import subscription_grants
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.state import ClusterState, Deleted, Upserted, apply
from coxswain.compile.provision import provision
from coxswain.compile.scope import GatewayScope, Scope
from coxswain.compile.snapshot_json import dump_snapshot

from . import gateway_strategies as gw
from . import scope_strategies as sc
from .strategies import endpoint_slices, ingress_classes, ingresses, services

if TYPE_CHECKING:
    from coxswain.compile.model.keys import ObjectKey

pytestmark = pytest.mark.property

CONFIG = CompileConfig(gateway_address_ranges=gw.ADDRESS_RANGES)


@st.composite
def _svc_slices(draw: st.DrawFn) -> dict[str, Any]:
    """An EndpointSlice of the Service every generated world's routes and Ingress use."""
    addresses = draw(st.sets(st.sampled_from(("10.0.0.1", "10.0.0.2", "10.0.0.3")), max_size=2))
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": draw(st.sampled_from(("svc-1", "svc-2"))),
            "namespace": "a",
            "labels": {"kubernetes.io/service-name": "svc"},
        },
        "ports": [{"name": "", "port": draw(st.sampled_from((9000, 9001)))}],
        "endpoints": [
            {"addresses": [a], "conditions": {"ready": draw(st.booleans())}}
            for a in sorted(addresses)
        ],
    }


@st.composite
def _svc_services(draw: st.DrawFn) -> dict[str, Any]:
    """The Service every generated world's routes and Ingress use, its port moved or its
    protocol changed (backends become invalid, or HTTP/2)."""
    port: dict[str, Any] = {"port": draw(st.sampled_from((80, 8080)))}
    if draw(st.booleans()):
        port["appProtocol"] = "kubernetes.io/h2c"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": "a"},
        "spec": {"ports": [port]},
    }


_HOSTNAMES = ("a.example.com", "*.example.com", "b.example.com")

_bodies = st.one_of(
    _svc_services(),
    _svc_slices(),
    _svc_slices(),
    _svc_slices(),
    gw.gateways(),
    gw.listener_sets(),
    gw.httproutes(),
    gw.grpcroutes(),
    gw.stream_routes(),
    gw.backend_tls_policies(),
    gw.supporting(),
    gw.supporting(),
    gw.gateway_classes(),
    sc.routes(0),
    sc.routes(1),
    st.tuples(st.sampled_from(sc.NAMES), st.sampled_from(sc.NAMESPACES)).flatmap(
        lambda key: sc.gateways(*key)
    ),
    ingresses(mostly_ours=True),
    ingress_classes(),
    services(),
    endpoint_slices(),
)
"""Bodies of every kind; a few names per kind, so that later bodies edit earlier ones."""

_reroutes = st.tuples(
    st.integers(0, 1_000), st.lists(st.sampled_from(_HOSTNAMES), max_size=2, unique=True)
).map(lambda e: ("reroute", e))

_events = st.one_of(
    _bodies.map(lambda b: ("upsert", b if isinstance(b, list) else [b])),
    st.integers(0, 1_000).map(lambda i: ("delete", i)),
    st.integers(0, 1_000).map(lambda i: ("resend", i)),
    _reroutes,
    _reroutes,
)
"""Events: bodies upserted, objects deleted or re-sent unchanged, and an existing HTTPRoute or
GRPCRoute given other hostnames (a change to routes only: ``compile.analysis_memo`` patches
the analysis for it)."""


def _step(
    state: ClusterState,
    bodies: dict[ObjectKey, dict[str, Any]],
    event: tuple[str, Any],
    touched: set[ObjectKey] | None = None,
) -> ClusterState:
    """Fold one event in, keeping ``bodies`` (the objects present, raw) in step; the keys of
    the objects upserted or deleted are added to ``touched``."""
    touched = set() if touched is None else touched
    kind, value = event
    if kind == "upsert":
        for body in value:
            decoded = decode_object(body)
            if isinstance(decoded, Decoded):
                bodies[decoded.obj.meta.key] = body
                touched.add(decoded.obj.meta.key)
                state = apply(state, Upserted(decoded.obj))
        return state
    if not bodies:
        return state
    if kind == "reroute":
        routes = sorted(k for k in bodies if k.kind in ("HTTPRoute", "GRPCRoute"))
        if not routes:
            return state
        index, hostnames = value
        body = json.loads(json.dumps(bodies[routes[index % len(routes)]]))
        body.setdefault("spec", {})["hostnames"] = hostnames
        return _step(state, bodies, ("upsert", [body]), touched)
    key = sorted(bodies)[value % len(bodies)]
    touched.add(key)
    if kind == "delete":
        del bodies[key]
        return apply(state, Deleted(key))
    decoded = decode_object(json.loads(json.dumps(bodies[key])))  # the same object, re-sent
    assert isinstance(decoded, Decoded)
    again = apply(state, Upserted(decoded.obj))
    assert again is state  # a resync of an unchanged object changes nothing
    return again


def _scopes(state: ClusterState) -> list[Scope]:
    return [SharedPool(), *(GatewayScope(k.namespace, k.name) for k in sorted(state.gateways))]


def _same(memo: CompileMemo, state: ClusterState, bound: int = 0) -> None:
    """``bound``: which Gateways' ports a proxy has bound (bit ``i`` of it: the ``i``-th
    Gateway's port 443; every Gateway's port 80), so that the programmed ports change between
    steps as a fleet's acks do."""
    for scope in _scopes(state):
        fresh = compile(state, scope, CONFIG)
        incremental = memo.compile(state, scope, CONFIG)
        assert incremental.snapshot.version == fresh.snapshot.version, scope
        assert dump_snapshot(incremental.snapshot) == dump_snapshot(fresh.snapshot), scope
        assert incremental.diagnostics == fresh.diagnostics, scope
    memo.forget(_scopes(state))
    assert memo.status(state, CONFIG) == status(state, CONFIG)
    programmed = {(f"{k.namespace}/{k.name}", 80) for k in state.gateways}
    programmed |= {
        (f"{k.namespace}/{k.name}", 443)
        for i, k in enumerate(sorted(state.gateways))
        if bound >> i & 1
    }
    assert memo.status(state, CONFIG, programmed) == status(state, CONFIG, programmed)
    assert memo.provision(state, CONFIG) == provision(state, CONFIG)
    served = {f"{k.namespace}/{k.name}" for k in state.gateways}
    assert memo.provision(state, CONFIG, served) == provision(state, CONFIG, served)
    assert memo.grants(state, CONFIG) == subscription_grants(state, CONFIG)


@settings(max_examples=150)
@given(
    world=sc.worlds(),
    extra=gw.worlds,
    events=st.lists(_events, min_size=1, max_size=8),
    hinted=st.lists(st.booleans(), min_size=8, max_size=8),
    bound=st.lists(st.integers(0, 15), min_size=8, max_size=8),
)
def test_incremental_compile_equals_compile_from_scratch(
    world: list[dict[str, Any]],
    extra: list[dict[str, Any]],
    events: list[tuple[str, Any]],
    hinted: list[bool],
    bound: list[int],
) -> None:
    """Each step either tells the memo which keys its event touched (``CompileMemo.changed``,
    as the controller does) or leaves it to compare the two states."""
    bodies: dict[ObjectKey, dict[str, Any]] = {}
    state = _step(build_state([]), bodies, ("upsert", [*world, *extra]))
    memo = CompileMemo()
    _same(memo, state)
    for event, hint, ports in zip(events, hinted, bound, strict=False):
        touched: set[ObjectKey] = set()
        base, state = state, _step(state, bodies, event, touched)
        if hint:
            memo.changed(base, state, touched)
        _same(memo, state, ports)
