"""``compile.memo`` reuses fragments by identity and invalidates exactly what a change reaches:
a listener table (``gateway.cells.Fragment``) whose routes did not change is the very object of
the previous compile, an edited route's table is new, the endpoints map is the same object
while the backends and their endpoints are, and an EndpointSlice or Service change replaces
only its Service's entry in the endpoints cell."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from coxswain.compile import CompileConfig, SharedPool, build_state, compile
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.state import Upserted, apply
from coxswain.compile.snapshot_json import dump_snapshot
from tests.integration.manifests import gateway, gateway_class, http_route

if TYPE_CHECKING:
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.snapshot import Snapshot

CONFIG = CompileConfig()


def _service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {"ports": [{"port": 80}]},
    }


def _slice(service: str, address: str) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-1",
            "namespace": "app",
            "labels": {"kubernetes.io/service-name": service},
        },
        "ports": [{"name": "", "port": 8080}],
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
    }


def _world() -> list[dict[str, Any]]:
    """Two shared-pool Gateways, one route each, each to its own Service."""
    return [
        gateway_class(),
        gateway("one", 80),
        gateway("two", 81),
        http_route("r1", "one", "svc1", hostnames=["one.example.com"]),
        http_route("r2", "two", "svc2", hostnames=["two.example.com"]),
        _service("svc1"),
        _service("svc2"),
        _slice("svc1", "10.0.0.1"),
        _slice("svc2", "10.0.0.2"),
    ]


def _upsert(state: ClusterState, body: dict[str, Any]) -> ClusterState:
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    return apply(state, Upserted(decoded.obj))


def _tables(snapshot: Snapshot) -> dict[str, object]:
    """Each listener's table by its Gateway."""
    return {t.gateway: t for tables in snapshot.gateways.values() for t in tables.values()}


def _compiled(memo: CompileMemo, state: ClusterState) -> Snapshot:
    snapshot = memo.compile(state, SharedPool(), CONFIG).snapshot
    assert dump_snapshot(snapshot) == dump_snapshot(compile(state, SharedPool(), CONFIG).snapshot)
    return snapshot


@pytest.mark.parametrize(
    ("body", "rebuilt", "reused"),
    [
        (http_route("r1", "one", "svc1", hostnames=["edited.example.com"]), "app/one", "app/two"),
        (http_route("r3", "two", "svc2", hostnames=["three.example.com"]), "app/two", "app/one"),
    ],
    ids=["route-edited", "route-added-to-the-other-gateway"],
)
def test_a_route_change_rebuilds_its_listener_table_and_reuses_the_other(
    body: dict[str, Any], rebuilt: str, reused: str
) -> None:
    memo = CompileMemo()
    state = build_state(_world())
    first = _compiled(memo, state)
    second = _compiled(memo, _upsert(state, body))
    before, after = _tables(first), _tables(second)
    assert after[reused] is before[reused]
    assert after[rebuilt] is not before[rebuilt]
    assert second.endpoints is first.endpoints  # the same backends: the same map


def test_an_endpoint_change_replaces_only_its_services_entry() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    before = _compiled(memo, state)
    after = _compiled(memo, _upsert(state, _slice("svc1", "10.0.0.9")))
    assert after.endpoints["app/svc2/80"] is before.endpoints["app/svc2/80"]
    assert after.endpoints["app/svc1/80"] != before.endpoints["app/svc1/80"]
    assert _tables(after) == _tables(before)
    for gateway_ref, table in _tables(after).items():
        assert table is _tables(before)[gateway_ref]
    assert after.version != before.version


def test_a_service_edit_invalidates_its_endpoints_not_the_others() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    before = _compiled(memo, state)
    moved = copy.deepcopy(_service("svc1"))
    moved["spec"]["ports"] = [{"port": 80, "targetPort": 9090}]
    after = _compiled(memo, _upsert(state, moved))
    assert after.endpoints["app/svc2/80"] is before.endpoints["app/svc2/80"]
    assert after.endpoints["app/svc1/80"] is not before.endpoints["app/svc1/80"]


def test_a_route_and_a_slice_changed_together_report_the_slices_new_findings() -> None:
    """One step that edits a route and breaks an EndpointSlice of a Service the scope reads
    compiles the scope again; the slice's findings are those of the new slice."""
    memo = CompileMemo()
    base = build_state(_world())
    _compiled(memo, base)
    broken = _slice("svc1", "10.0.0.1")
    broken["ports"] = [{"name": "", "port": "x"}]
    edited = http_route("r1", "one", "svc1", hostnames=["edited.example.com"])
    state = _upsert(_upsert(base, edited), broken)
    memo.changed(base, state, {*state.endpoint_slices, *state.httproutes})
    found = memo.compile(state, SharedPool(), CONFIG).diagnostics
    assert found == compile(state, SharedPool(), CONFIG).diagnostics
    assert any(d.key.kind == "EndpointSlice" for d in found)
