"""What incremental compilation relies on in the state and the publisher: an event that
changes nothing gives back the same state; a folder read again keeps its unchanged objects;
a publisher's second round over the same state compiles nothing again."""

from __future__ import annotations

import copy
import gc
from typing import Any

import trio
import trio.testing

from coxswain.compile import CompileConfig, build_state
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.state import Deleted, Upserted, apply, carried_over
from coxswain.shell.control import heap, kinds
from coxswain.shell.control.cluster_view import ClusterView
from coxswain.shell.offload import offload
from coxswain.shell.publisher import Publisher
from tests.integration.manifests import gateway, gateway_class, http_route


def _route(name: str, host: str = "a.example.com") -> dict[str, Any]:
    return http_route(name, "gw", "svc", hostnames=[host])


def _decoded(body: dict[str, Any]) -> Any:
    found = decode_object(body)
    assert isinstance(found, Decoded)
    return found.obj


def test_an_event_that_changes_nothing_gives_back_the_same_state() -> None:
    state = build_state([_route("r1")])
    assert apply(state, Upserted(_decoded(_route("r1")))) is state
    assert apply(state, Deleted(ObjectKey("HTTPRoute", "app", "absent"))) is state
    changed = apply(state, Upserted(_decoded(_route("r1", "b.example.com"))))
    assert changed is not state
    assert changed.httproutes[ObjectKey("HTTPRoute", "app", "r1")].hostnames == ["b.example.com"]


def test_every_route_kind_is_deleted_and_re_sent_as_its_table_holds_it() -> None:
    """The layer-4 kinds share one table: a delete must find them there, and an unchanged
    re-send must be a no-op (a table missing from ``TABLES`` made deletes vanish)."""
    for kind in ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"):
        body = {**_route("r1"), "kind": kind}
        if kind != "HTTPRoute":
            body["spec"] = {
                **body["spec"],
                "rules": [{"backendRefs": [{"name": "svc", "port": 80}]}],
            }
        state = build_state([body])
        key = ObjectKey(kind, "app", "r1")
        assert apply(state, Upserted(_decoded(body))) is state, kind
        emptied = apply(state, Deleted(key))
        assert emptied is not state, kind
        assert emptied == build_state([]), kind


def test_carried_over_keeps_unchanged_objects_and_equals_the_new_state() -> None:
    before = build_state([_route("r1"), _route("r2")])
    after = build_state([_route("r1"), _route("r2", "b.example.com"), _route("r3")])
    carried = carried_over(before, after)
    assert carried == after
    r1, r2 = ObjectKey("HTTPRoute", "app", "r1"), ObjectKey("HTTPRoute", "app", "r2")
    assert carried.httproutes[r1] is before.httproutes[r1]
    assert carried.httproutes[r2] is after.httproutes[r2]
    assert carried_over(after, build_state([_route("r1")])) == build_state([_route("r1")])


def test_a_second_round_over_the_same_state_reuses_every_scope() -> None:
    bodies = [gateway_class(), gateway("gw", 80), _route("r1")]
    publisher = Publisher(CompileConfig())
    state = build_state(bodies)
    first = publisher.compile(state)
    assert publisher.outcomes == (len(first), 0)
    again = carried_over(state, build_state(copy.deepcopy(bodies)))
    assert publisher.compile(again) == first
    assert publisher.outcomes == (0, len(first))


def test_offload_gives_the_result_of_the_call() -> None:
    async def main() -> None:
        assert await offload(sorted, [3, 1, 2]) == [1, 2, 3]

    trio.run(main)


def test_the_cluster_view_hands_out_the_keys_its_events_changed() -> None:
    view = ClusterView()
    first = view.state
    view.event(kinds.HTTP_ROUTE, ("app", "r1"), _route("r1"))
    view.event(kinds.HTTP_ROUTE, ("app", "r2"), _route("r2"))
    base, state, changed = view.take()
    assert base is first
    assert state is view.state
    assert changed == {ObjectKey("HTTPRoute", "app", "r1"), ObjectKey("HTTPRoute", "app", "r2")}
    view.event(kinds.HTTP_ROUTE, ("app", "r1"), _route("r1"))  # a resync: nothing changed
    view.event(kinds.HTTP_ROUTE, ("app", "r2"), None)
    base, _, changed = view.take()
    assert base is state
    assert changed == {ObjectKey("HTTPRoute", "app", "r2")}


def test_the_cluster_view_freezes_what_is_alive_after_a_bulk_of_events() -> None:
    """Statuses watched back change no state but stay (heap.py): a bulk of them is frozen."""
    try:
        gc.unfreeze()
        view = ClusterView()
        for _ in range(heap.BULK - 1):
            view.event(kinds.HTTP_ROUTE, ("app", "r1"), _route("r1"))
        assert gc.get_freeze_count() == 0
        view.event(kinds.HTTP_ROUTE, ("app", "r1"), _route("r1"))
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_list_page_folds_in_as_its_events_would_and_a_watch_event_meanwhile_after_it() -> None:
    changes = [(("app", f"r{n}"), _route(f"r{n}")) for n in range(5)]
    one_by_one = ClusterView()
    for key, body in changes:
        one_by_one.event(kinds.HTTP_ROUTE, key, body)
    paged = ClusterView()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(paged.page, kinds.HTTP_ROUTE, changes)
            await trio.testing.wait_all_tasks_blocked()  # the page is in its worker thread
            paged.event(kinds.HTTP_ROUTE, ("app", "r0"), None)  # another informer's, say
            assert ObjectKey("HTTPRoute", "app", "r0") not in paged.state.httproutes

    trio.run(main)
    one_by_one.event(kinds.HTTP_ROUTE, ("app", "r0"), None)
    assert paged.state == one_by_one.state
    assert paged.take()[2] == one_by_one.take()[2]
