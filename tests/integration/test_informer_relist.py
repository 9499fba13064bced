"""An informer's new list after 410 Gone, against the API emulator (real REST, official client).

A relist (the watch history expired: ``ApiServer.expire``) hands on only what changed while the
informer was not watching: the objects it had at the same resourceVersion are the same objects
and are not decoded or applied again, an object changed meanwhile is, and one deleted meanwhile
is reported gone. So a resync of a large, quiet cluster leaves the controller's state as it was
(docs/architecture.md, informers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from coxswain.shell.control import kinds
from coxswain.shell.control.informers import Informer, Watched
from coxswain.shell.control.kube import Kube
from tests.apiserver import ApiServer

from .controller_harness import TIMEOUT, EachChange

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.shell.control.kube import Resource


def config_map(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "app"},
        "data": {"value": value},
    }


async def eventually(check: Callable[[], bool], what: str) -> None:
    with trio.move_on_after(TIMEOUT):
        while not check():  # noqa: ASYNC110 - the informer's sink is a list: nothing to wait on
            await trio.sleep(0.05)
        return
    raise AssertionError(f"never: {what}")


def test_a_relist_after_410_hands_on_only_what_changed_meanwhile() -> None:
    events: list[tuple[str, str | None]] = []  # (name, value or None when gone)

    def sink(resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        events.append((key[1], None if body is None else body["data"]["value"]))

    async def main(api: ApiServer, kube: Kube) -> None:
        for name in ("same", "edited", "deleted"):
            api.put_object(config_map(name, "1"))
        informer = Informer(kube, Watched(kinds.CONFIG_MAP), EachChange(sink), lambda _: None)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.synced.wait()
            assert sorted(events) == [("deleted", "1"), ("edited", "1"), ("same", "1")]
            events.clear()
            lists = _lists(api)

            with api.outage():  # changes the informer does not see as watch events
                api.put_object(config_map("edited", "2"))
                api.delete_object("ConfigMap", "deleted", "app")
                api.expire()
            await eventually(lambda: _lists(api) > lists, "a new list after 410 Gone")
            await eventually(lambda: len(events) == 2, "the changes handed on")
            await trio.sleep(0.2)
            assert sorted(events) == [("deleted", None), ("edited", "2")]
            assert informer.versions.keys() == {("app", "same"), ("app", "edited")}
            nursery.cancel_scope.cancel()

    with ApiServer() as api, api.client() as client:
        trio.run(main, api, Kube(client))


def _lists(api: ApiServer) -> int:
    return sum(
        1
        for r in api.requests
        if r.method == "GET" and r.path.endswith("/configmaps") and "watch" not in r.query
    )
