"""``compile.memo`` patches the Gateway API analysis when only routes changed
(``compile.analysis_memo``): the listener verdicts and the unchanged routes' verdicts are the
very objects of the earlier analysis, only the changed route is attached again, and the model
equals a fresh ``analyse``; a change to what routes attach against runs the analysis whole.
The patched analysis says which verdicts went and came, and the shared pool's cells patched
for them alone (``gateway.cells.RouteDelta``) equal cells built afresh."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.analysis_memo import AnalysisMemory
from coxswain.compile.api import analyse
from coxswain.compile.gateway.cells import build_cells
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.state import Deleted, Upserted, apply
from coxswain.compile.provision import provision
from tests.integration.manifests import gateway, gateway_class, http_route

if TYPE_CHECKING:
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.state import ClusterState

CONFIG = CompileConfig()


def _world() -> list[dict[str, Any]]:
    """Two shared-pool Gateways, one route each."""
    return [
        gateway_class(),
        gateway("east", 82),
        gateway("west", 83),
        http_route("r1", "east", "svc1", hostnames=["one.example.com"]),
        http_route("r2", "west", "svc2", hostnames=["two.example.com"]),
    ]


def _upsert(state: ClusterState, body: dict[str, Any]) -> ClusterState:
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    return apply(state, Upserted(decoded.obj))


def _routes(model: GatewayModel) -> dict[str, object]:
    return {r.compiled.route.meta.key.name: r for r in model.routes}


def _told(
    memo: CompileMemo, base: ClusterState, state: ClusterState, keys: set[ObjectKey]
) -> GatewayModel:
    """The memo told the keys changed, as the controller tells it; its answers checked
    against the pure functions'."""
    memo.changed(base, state, keys)
    model = memo.analyse(state, CONFIG)
    assert model == analyse(state, CONFIG)
    assert memo.status(state, CONFIG) == status(state, CONFIG)
    assert memo.provision(state, CONFIG) == provision(state, CONFIG)
    pool = memo.compile(state, SharedPool(), CONFIG)
    assert pool.snapshot.version == compile(state, SharedPool(), CONFIG).snapshot.version
    return model


def _first(memo: CompileMemo) -> tuple[ClusterState, GatewayModel]:
    state = build_state(_world())
    model = memo.analyse(state, CONFIG)
    memo.compile(state, SharedPool(), CONFIG)
    return state, model


def test_a_route_edit_patches_the_analysis_and_reuses_the_rest_by_identity() -> None:
    memo = CompileMemo()
    state, before = _first(memo)
    edited = _upsert(state, http_route("r1", "east", "svc1", hostnames=["edited.example.com"]))
    after = _told(memo, state, edited, {ObjectKey("HTTPRoute", "app", "r1")})
    assert memo.analyses_patched == 2  # the cluster's and the shared pool's
    assert after.listeners is before.listeners
    assert after.gateway_refs is before.gateway_refs
    assert _routes(after)["r2"] is _routes(before)["r2"]
    assert _routes(after)["r1"] is not _routes(before)["r1"]


def test_a_route_added_and_deleted_is_patched_in_key_order() -> None:
    memo = CompileMemo()
    state, _ = _first(memo)
    added = _upsert(state, http_route("r0", "west", "svc2", hostnames=["zero.example.com"]))
    model = _told(memo, state, added, {ObjectKey("HTTPRoute", "app", "r0")})
    assert list(_routes(model)) == ["r0", "r1", "r2"]
    gone = apply(added, Deleted(ObjectKey("HTTPRoute", "app", "r1")))
    model = _told(memo, added, gone, {ObjectKey("HTTPRoute", "app", "r1")})
    assert list(_routes(model)) == ["r0", "r2"]
    assert memo.analyses_patched == 4


def test_a_gateway_edit_runs_the_analysis_whole() -> None:
    memo = CompileMemo()
    state, before = _first(memo)
    moved = _upsert(state, gateway("east", 8080))
    after = _told(memo, state, moved, {ObjectKey("Gateway", "app", "east")})
    assert memo.analyses_patched == 0
    assert after.listeners is not before.listeners


def test_after_a_route_edit_only_its_status_is_made_again() -> None:
    memo = CompileMemo()
    state, _ = _first(memo)
    before = {s.name: s for s in memo.status(state, CONFIG)}
    made = memo.statuses_made
    edited = _upsert(state, http_route("r1", "east", "svc1", hostnames=["edited.example.com"]))
    _told(memo, state, edited, {ObjectKey("HTTPRoute", "app", "r1")})
    after = {s.name: s for s in memo.status(edited, CONFIG)}
    assert memo.statuses_made == made + 1  # the route's; its Gateway still counts one route
    assert after["r2"] is before["r2"]
    assert after["east"] is before["east"]
    assert after["r1"] is not before["r1"]  # made again, equal: the same conditions


def test_a_route_moved_to_another_gateway_makes_both_gateways_statuses_again() -> None:
    memo = CompileMemo()
    state, _ = _first(memo)
    memo.status(state, CONFIG)
    made = memo.statuses_made
    moved = _upsert(state, http_route("r1", "west", "svc1", hostnames=["one.example.com"]))
    _told(memo, state, moved, {ObjectKey("HTTPRoute", "app", "r1")})
    assert memo.statuses_made == made + 3  # the route and both Gateways' attachedRoutes


def test_a_route_edit_reuses_the_provision_and_a_gateway_edit_does_not() -> None:
    memo = CompileMemo()
    state, _ = _first(memo)
    before = memo.provision(state, CONFIG)
    edited = _upsert(state, http_route("r1", "east", "svc1", hostnames=["edited.example.com"]))
    _told(memo, state, edited, {ObjectKey("HTTPRoute", "app", "r1")})
    assert memo.provision(edited, CONFIG) is before
    moved = _upsert(edited, gateway("east", 8080))
    _told(memo, edited, moved, {ObjectKey("Gateway", "app", "east")})
    assert memo.provision(moved, CONFIG) is not before


def test_the_shared_pool_s_cells_are_patched_for_the_edited_route_alone() -> None:
    memory, routes = AnalysisMemory(), CompileMemo()
    state = build_state(_world())
    before = memory.model(state, CONFIG, SharedPool(), None, routes)
    cells = build_cells(before)
    edited = _upsert(state, http_route("r1", "east", "svc1", hostnames=["edited.example.com"]))
    key = ObjectKey("HTTPRoute", "app", "r1")
    after = memory.model(edited, CONFIG, SharedPool(), (state, frozenset({key})), routes)
    delta = memory.delta(SharedPool(), after)
    assert delta is not None
    assert [r.compiled.route.meta.key for r in (*delta.gone, *delta.fresh)] == [key, key]
    patched = build_cells(after, cells, delta)
    fresh = build_cells(after)
    assert (patched.gateways, patched.tls, patched.client_certs) == (
        fresh.gateways,
        fresh.tls,
        fresh.client_certs,
    )
    assert patched.listener_health == fresh.listener_health
    assert patched.change is not None
    assert [part.route for part in patched.change[1]] == list(delta.fresh)
    west = {slot[0] for slot, f in cells.fragments.items() if f.head[0].endswith("/west")}
    assert west
    assert all(patched.gateways[port] is cells.gateways[port] for port in west)  # not visited
    assert patched.renewed
    assert set(patched.renewed) <= {slot for slot in cells.fragments if slot[0] not in west}
