"""``compile.memo`` at its edges, one event at a time: what an EndpointSlice change carries
(the analysis, the status, the scope's result, its endpoint pieces) and what it recomputes
(the changed Service's endpoints and slice findings only), the provision asked with
different acks from the shared pool, and the grants kept while the analysis' Gateways and
placements are (docs/architecture.md, "Rules of the core": the answers are the pure
functions', and unaffected results are neither computed nor encoded again)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, snapshot_json, status
from coxswain.compile import grants as grants_module
from coxswain.compile import memo as memo_module
from coxswain.compile import provision as provision_module
from coxswain.compile.api import analyse
from coxswain.compile.grants import subscription_grants
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.state import Upserted, apply
from coxswain.compile.provision import GATEWAY_ANNOTATION, MANAGED_BY, ROLE, ROLE_DEDICATED
from coxswain.compile.snapshot import Endpoint
from tests.integration.manifests import backend, gateway, gateway_class, http_route

if TYPE_CHECKING:
    import pytest

    from coxswain.compile.api import CompileResult
    from coxswain.compile.model.state import ClusterState

CONFIG = CompileConfig()


def _world(*also: str) -> list[dict[str, Any]]:
    """One shared-pool Gateway; route ``one`` to Service ``a`` and those of ``also`` (listed
    in the endpoints), route ``two`` to Service ``b``, whose only port is 81, so that ``b`` is
    read and not listed."""
    one = http_route("one", "gw", "a", hostnames=["one.example.com"])
    one["spec"]["rules"] = [{"backendRefs": [{"name": name, "port": 80} for name in ("a", *also)]}]
    lonely = backend("b", 9002)
    lonely[0]["spec"]["ports"] = [{"port": 81, "targetPort": 9002}]
    return [
        gateway_class(),
        gateway("gw", 80),
        one,
        http_route("two", "gw", "b", hostnames=["two.example.com"]),
        *backend("a", 9001),
        *lonely,
        *(body for name in also for body in backend(name, 9003)),
    ]


def _upsert(state: ClusterState, body: dict[str, Any]) -> ClusterState:
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    return apply(state, Upserted(decoded.obj))


def _slice(service: str, port: int | str) -> dict[str, Any]:
    """The EndpointSlice of ``backend(service, ...)`` with ``port``; a text port is refused."""
    body = copy.deepcopy(backend(service, 9000)[1])
    body["ports"] = [{"name": "", "port": port}]
    return body


def _pool(memo: CompileMemo, state: ClusterState) -> CompileResult:
    result = memo.compile(state, SharedPool(), CONFIG)
    fresh = compile(state, SharedPool(), CONFIG)
    assert result.snapshot == fresh.snapshot
    assert result.diagnostics == fresh.diagnostics
    return result


def _slice_findings(result: CompileResult) -> list[tuple[str, str]]:
    return [(d.key.name, d.field) for d in result.diagnostics if d.key.kind == "EndpointSlice"]


def test_the_same_state_asked_again_answers_the_same_status_object() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    first = memo.status(state, CONFIG)
    assert memo.status(state, CONFIG) is first
    assert memo.analyse(state, CONFIG) is memo.analyse(state, CONFIG)


def test_an_endpoint_slice_change_carries_the_analysis_and_the_status() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    model = memo.analyse(state, CONFIG)
    first = memo.status(state, CONFIG)
    made = memo.statuses_made
    moved = _upsert(state, _slice("a", 9101))
    assert memo.analyse(moved, CONFIG) is model
    assert memo.status(moved, CONFIG) is first
    assert memo.statuses_made == made


def test_a_slice_change_after_an_unseen_route_edit_analyses_again() -> None:
    """The analysis was of the state before the previous one: a slice change since the
    previous does not carry it over the route edit in between."""
    memo = CompileMemo()
    state = build_state(_world())
    memo.analyse(state, CONFIG)
    edited = _upsert(state, http_route("one", "gw", "a", hostnames=["edited.example.com"]))
    _pool(memo, edited)  # the memo moves to `edited` without analysing it for the cluster
    moved = _upsert(edited, _slice("a", 9101))
    assert memo.analyse(moved, CONFIG) == analyse(moved, CONFIG)
    assert memo.status(moved, CONFIG) == status(moved, CONFIG)


def test_a_slice_change_after_an_unseen_route_edit_compiles_the_pool_again() -> None:
    """The shared pool's analysis was of an older state than the cluster's; a slice change
    carries the cluster's only."""
    memo = CompileMemo()
    state = build_state(_world())
    _pool(memo, state)
    edited = _upsert(state, http_route("one", "gw", "a", hostnames=["edited.example.com"]))
    memo.analyse(edited, CONFIG)
    moved = _upsert(edited, _slice("a", 9101))
    memo.analyse(moved, CONFIG)
    tables = _pool(memo, moved).snapshot.gateways[30000]
    assert set(tables["*"].hosts) == {"edited.example.com", "two.example.com"}


def test_a_listed_service_s_slice_change_replaces_its_endpoints_and_keeps_the_findings() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    before = _pool(memo, state)
    after = _pool(memo, _upsert(state, _slice("a", 9101)))
    assert after.snapshot.endpoints == {"app/a/80": [Endpoint("127.0.0.1", 9101)]}
    assert after.diagnostics is before.diagnostics
    assert memo.reused == 1


def test_a_listed_service_s_broken_slice_is_reported_by_the_patch() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    assert _slice_findings(_pool(memo, state)) == []
    broken = _pool(memo, _upsert(state, _slice("a", "x")))
    assert _slice_findings(broken) == [("a-1", "ports[0].port")]
    assert broken.snapshot.endpoints == {"app/a/80": []}
    assert memo.reused == 1


def test_a_read_unlisted_service_s_broken_slice_changes_the_findings_only() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    before = _pool(memo, state)
    broken = _pool(memo, _upsert(state, _slice("b", "x")))
    assert _slice_findings(broken) == [("b-1", "ports[0].port")]
    assert broken.snapshot is before.snapshot
    assert memo.reused == 1


def test_a_read_unlisted_service_s_slice_change_keeps_the_very_result() -> None:
    memo = CompileMemo()
    state = build_state(_world())
    before = _pool(memo, state)
    assert _pool(memo, _upsert(state, _slice("b", 9102))) is before


def test_two_slice_changes_in_turn_keep_both_services_entries() -> None:
    memo = CompileMemo()
    state = build_state(_world("c"))
    _pool(memo, state)
    first = _upsert(state, _slice("a", 9101))
    _pool(memo, first)
    second = _upsert(first, _slice("c", 9103))
    assert _pool(memo, second).snapshot.endpoints == {
        "app/a/80": [Endpoint("127.0.0.1", 9101)],
        "app/c/80": [Endpoint("127.0.0.1", 9103)],
    }
    assert memo.reused == 2


def test_a_slice_change_encodes_its_entry_s_piece_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = CompileMemo()
    state = build_state(_world("c"))
    _pool(memo, state)
    moved = _upsert(state, _slice("a", 9101))
    encoded: list[str] = []
    piece = snapshot_json.endpoint_piece

    def counted(key: str, endpoints: Any) -> Any:
        encoded.append(key)
        return piece(key, endpoints)

    monkeypatch.setattr(snapshot_json, "endpoint_piece", counted)
    monkeypatch.setattr(memo_module, "endpoint_piece", counted)
    result = memo.compile(moved, SharedPool(), CONFIG)
    monkeypatch.undo()
    assert encoded == ["app/a/80"]
    assert result.snapshot == compile(moved, SharedPool(), CONFIG).snapshot


def _dedicated_left() -> dict[str, Any]:
    """A ServiceAccount the dedicated proxy of Gateway app/gw left when it went back to the
    shared pool."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "gw-coxswain",
            "namespace": "app",
            "labels": {MANAGED_BY[0]: MANAGED_BY[1], ROLE: ROLE_DEDICATED},
            "annotations": {GATEWAY_ANNOTATION: "app/gw"},
        },
    }


def test_the_provision_is_asked_again_for_other_acks_of_the_shared_pool() -> None:
    """Its dedicated proxy is deleted once the shared pool serves the Gateway, offline (None)
    at once (``provision``'s ``shared_served``)."""
    memo = CompileMemo()
    state = build_state([*_world(), _dedicated_left()])
    left = {ObjectKey("ServiceAccount", "app", "gw-coxswain")}
    assert set(memo.provision(state, CONFIG, set()).deletions) == set()
    assert set(memo.provision(state, CONFIG, {"app/gw"}).deletions) == left
    assert set(memo.provision(state, CONFIG, {"app/other"}).deletions) == set()
    assert set(memo.provision(state, CONFIG).deletions) == left


def test_the_provision_reads_the_memo_s_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = CompileMemo()
    state = build_state(_world())
    memo.analyse(state, CONFIG)

    def refused(*_args: object) -> None:
        raise AssertionError("analysed again")

    monkeypatch.setattr(provision_module, "analyse_gateways", refused)
    found = memo.provision(state, CONFIG, set())
    monkeypatch.undo()
    assert found == provision_module.provision(state, CONFIG, set())


def test_the_grants_are_kept_while_the_analysis_s_gateways_and_placements_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = build_state(_world())
    expected = subscription_grants(state, CONFIG)
    memo = CompileMemo()

    def refused(*_args: object) -> None:
        raise AssertionError("analysed again")

    monkeypatch.setattr(grants_module, "analyse_gateways", refused)
    first = memo.grants(state, CONFIG)
    monkeypatch.undo()
    assert first == expected
    assert memo.grants(state, CONFIG) is first
    model = memo.analyse(state, CONFIG)
    other = CompileConfig(shared_proxy_service_account="other")
    assert memo.grants(state, other, model) == subscription_grants(state, other, model)
    assert memo.grants(state, other, model) != first
