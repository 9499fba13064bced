"""Hostile objects against the controller and the API emulator: the controller keeps running
and keeps serving every other object.

- A CoxswainGatewayParameters whose ``podTemplate`` nests 200 levels (past the compiler's bound,
  within the shell's), named by a Gateway: its body reaches the controller through the API (as
  JSON), is refused by the compiler (logged, naming the object and the field) and provisions
  nothing, while the other Gateway's routes are accepted and a route changed afterwards is
  seen: one object does not stop the round.
- Parameters nested 2,000 levels, past what Python's JSON decoder can read: in the first list,
  in a watch event adding one, and in a watch event replacing good parameters. Each is refused
  alone when its JSON is decoded (logged with its kind, namespace and name), the proxy the good
  parameters provisioned keeps running as it was, and every other object is still served.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
import trio

from coxswain.shell.control import kinds
from coxswain.shell.control.informers import Informer, Watched
from coxswain.shell.control.kube import Kube, Resource
from coxswain.shell.controller import run_controller
from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer
from tests.integration.controller_harness import EachChange, settings
from tests.integration.manifests import (
    backend,
    gateway,
    gateway_class,
    http_route,
    own_infrastructure,
    own_parameters,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

pytestmark = pytest.mark.fixed_ports  # the shared pool's internal port 30000 (tests/conftest.py)

TIMEOUT = 30
DEPTH = 200  # past the compiler's bound (MAX_OBJECT_DEPTH), within the shell's (MAX_BODY_DEPTH)
UNREADABLE = 2000  # past what json.loads can decode (Python's recursion limit, about 1,000)


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def run(main: Callable[[ApiServer, Kube], Awaitable[None]]) -> None:
    """``main`` against an API emulator serving Coxswain's CRD."""
    with ApiServer() as api, api.client() as client:
        api.install_crds(COXSWAIN_CRDS)
        trio.run(main, api, Kube(client))


def accepted(api: ApiServer, name: str) -> bool:
    body: dict[str, Any] = api.get("HTTPRoute", name, "app") or {}
    parents = (body.get("status") or {}).get("parents") or []
    return any(
        c["type"] == "Accepted" and c["status"] == "True"
        for parent in parents
        for c in parent["conditions"]
    )


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Poll the emulator's store until ``check`` holds."""
    with trio.move_on_after(TIMEOUT):
        while not check():  # noqa: ASYNC110 - the store is read directly: nothing to wait on
            await trio.sleep(0.05)
        return
    raise AssertionError(f"never: {what}")


def test_a_deep_pod_template_is_logged_and_every_other_object_is_served(caplog) -> None:
    hostile = own_parameters({"podTemplate": nested(DEPTH)})

    async def main(api: ApiServer, kube: Kube) -> None:
        api.install_crds(GATEWAY_API_CRDS)
        for body in [
            gateway_class(),
            *backend("echo", 9),
            hostile,
            gateway("own", 81, infrastructure=own_infrastructure()),
            gateway("web", 80),
            http_route("shop", "web", "echo"),
        ]:
            api.put_object(body)
        async with trio.open_nursery() as nursery:
            await nursery.start(run_controller, kube, settings())
            await eventually(lambda: accepted(api, "shop"), "the route on web is accepted")
            api.put_object(http_route("later", "web", "echo"))
            await eventually(lambda: accepted(api, "later"), "a route added later is accepted")
            assert api.get("Deployment", "own-coxswain", "app") is None
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.WARNING, logger="coxswain.controller"):
        run(main)
    assert any(
        "CoxswainGatewayParameters app/own" in r.getMessage()
        and "spec.podTemplate" in r.getMessage()
        and "ObjectTooDeep" in r.getMessage()
        for r in caplog.records
    )


def relist(api: ApiServer) -> None:
    """End the parameters' watch and fail the next one: their informer lists them again."""
    api.fail(500, "GET", kinds.GATEWAY_PARAMETERS.path())
    api.drop_watches()


def parameters(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = own_parameters(spec)
    body["metadata"]["name"] = name
    return body


def gateway_accepted(api: ApiServer, name: str) -> bool:
    body: dict[str, Any] = api.get("Gateway", name, "app") or {}
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Accepted" and c["status"] == "True" for c in conditions)


def test_json_too_deep_to_decode_is_refused_alone_and_the_last_good_state_is_kept(caplog):
    def refusals(name: str) -> int:
        return sum(
            f"CoxswainGatewayParameters app/{name} nests deeper than" in r.getMessage()
            for r in caplog.records
        )

    async def changed_and_served(api: ApiServer, route: str) -> None:
        """Two changes after what came before, each seen, one after the other: the informers
        and the rounds go on, and the round that saw what came before is over."""
        for name in (f"{route}-1", f"{route}-2"):
            api.put_object(http_route(name, "web", "echo"))
            await eventually(partial(accepted, api, name), f"route {name} is accepted")

    async def main(api: ApiServer, kube: Kube) -> None:
        api.install_crds(GATEWAY_API_CRDS)
        for body in [
            gateway_class(),
            *backend("echo", 9),
            own_parameters({"replicas": 2}),
            gateway("own", 81, infrastructure=own_infrastructure()),
            parameters("listed", {"podTemplate": nested(UNREADABLE)}),
            gateway("web", 80),
            http_route("shop", "web", "echo"),
        ]:
            api.put_object(body)
        async with trio.open_nursery() as nursery:
            await nursery.start(run_controller, kube, settings())  # after the first list
            assert refusals("listed") == 1
            await eventually(lambda: accepted(api, "shop"), "the route on web is accepted")
            await eventually(lambda: gateway_accepted(api, "own"), "Gateway own is accepted")
            await eventually(
                lambda: api.get("Deployment", "own-coxswain", "app") is not None,
                "the good parameters provision a proxy",
            )

            api.put_object(parameters("watched", {"podTemplate": nested(UNREADABLE)}))
            api.put_object(own_parameters({"replicas": 3, "podTemplate": nested(UNREADABLE)}))
            await eventually(lambda: refusals("watched") == 1, "the added ones are refused")
            await eventually(lambda: refusals("own") == 1, "the replaced ones are refused")
            await changed_and_served(api, "later")
            assert gateway_accepted(api, "own")  # its parameters: the last good ones
            deployment = api.get("Deployment", "own-coxswain", "app") or {}
            assert deployment["spec"]["replicas"] == 2

            relist(api)
            await eventually(lambda: refusals("own") == 2, "a new list refuses them again")
            await changed_and_served(api, "last")
            assert gateway_accepted(api, "own")  # refused in the list: kept, not deleted
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.WARNING, logger="coxswain.informers"):
        run(main)


def test_an_informer_skips_what_it_cannot_decode_yet_a_deletion_still_deletes() -> None:
    events: list[tuple[str, bool]] = []  # (name, present)
    refused: list[Resource] = []

    def sink(resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        events.append((key[1], body is not None))

    async def main(api: ApiServer, kube: Kube) -> None:
        api.put_object(parameters("a", {"replicas": 1}))
        api.put_object(parameters("deep", {"podTemplate": nested(UNREADABLE)}))
        informer = Informer(
            kube, Watched(kinds.GATEWAY_PARAMETERS), EachChange(sink), refused.append
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.synced.wait()
            assert (events, len(refused)) == ([("a", True)], 1)

            api.put_object(parameters("a", {"podTemplate": nested(UNREADABLE)}))
            api.delete_object("CoxswainGatewayParameters", "deep", "app")
            api.put_object(parameters("b", {"replicas": 1}))
            await eventually(lambda: ("b", True) in events, "b is added")
            assert (events, len(refused)) == ([("a", True), ("deep", False), ("b", True)], 3)
            assert informer.versions.keys() == {("app", "a"), ("app", "b")}

            relist(api)
            await eventually(lambda: len(refused) == 4, "the new list refuses a again")
            assert events[3:] == []  # a is kept as it was, not deleted; b did not change
            assert informer.versions.keys() == {("app", "a"), ("app", "b")}
            assert {r.plural for r in refused} == {kinds.GATEWAY_PARAMETERS.plural}
            nursery.cancel_scope.cancel()

    run(main)
