"""A hostile object against the controller and the API emulator: the controller keeps running
and keeps serving every other object.

A CoxswainGatewayParameters whose ``podTemplate`` nests 280 levels, named by a Gateway: its
body reaches the controller through the API (as JSON), is refused when decoded (logged, naming
the object and the field) and provisions nothing, while the other Gateway's routes are accepted
and a route changed afterwards is seen: one object does not stop the round.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
import trio

from coxswain.compile import CompileConfig
from coxswain.shell.control.kube import Kube
from coxswain.shell.controller import ControllerSettings, run_controller
from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer
from tests.integration.manifests import (
    backend,
    gateway,
    gateway_class,
    http_route,
    own_infrastructure,
    own_parameters,
)

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.fixed_ports  # the shared pool's internal port 30000 (tests/conftest.py)

NAMESPACE = "coxswain-system"
TIMEOUT = 30
DEPTH = 280  # past the bound, and as deep as the emulator can copy (copy.deepcopy recurses)


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


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
        settings = ControllerSettings(
            compile=CompileConfig(namespace=NAMESPACE),
            identity="controller-a",
            discovery_bind="127.0.0.1",
            discovery_port=0,
            health_port=None,
            debounce=(0.02, 0.2),
            crd_probe_every=0.2,
            lease_seconds=3,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(run_controller, kube, settings)
            await eventually(lambda: accepted(api, "shop"), "the route on web is accepted")
            api.put_object(http_route("later", "web", "echo"))
            await eventually(lambda: accepted(api, "later"), "a route added later is accepted")
            assert not any(
                d["metadata"]["name"].startswith("coxswain-own")
                for d in api.objects("Deployment", "app")
            )
            nursery.cancel_scope.cancel()

    with (
        caplog.at_level(logging.WARNING, logger="coxswain.controller"),
        ApiServer() as api,
        api.client() as client,
    ):
        api.install_crds(COXSWAIN_CRDS)
        trio.run(main, api, Kube(client))
    assert any(
        "CoxswainGatewayParameters app/own" in r.getMessage()
        and "spec.podTemplate" in r.getMessage()
        and "ObjectTooDeep" in r.getMessage()
        for r in caplog.records
    )
