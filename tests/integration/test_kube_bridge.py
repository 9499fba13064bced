"""The bridge to the official client (``shell.control.kube``) against the API emulator: raw JSON
requests, failures mapped, and a watch that ends, thread and all, when it is cancelled."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from coxswain.shell.control.kube import ApiFailure, Kube, Resource, Unreachable
from tests.apiserver import ApiServer

SERVICES = Resource("", "v1", "services", "Service", True)


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {"ports": [{"port": 80}]},
    }


def test_requests_answer_raw_json_and_failures_say_why() -> None:
    async def main(api: ApiServer, kube: Kube) -> None:
        await kube.request("POST", SERVICES.path("app"), body=service("a"))
        got = await kube.request("GET", SERVICES.path("app", "a"))
        assert got["metadata"]["name"] == "a"
        with pytest.raises(ApiFailure) as missing:
            await kube.request("GET", SERVICES.path("app", "b"))
        assert (missing.value.status, missing.value.reason) == (404, "NotFound")
        with pytest.raises(ApiFailure) as taken:
            await kube.request("POST", SERVICES.path("app"), body=service("a"))
        assert taken.value.status == 409
        with api.outage(), pytest.raises(Unreachable):
            await kube.request("GET", SERVICES.path("app", "a"), read_timeout=2)

    run(main)


def test_a_cancelled_watch_returns_at_once_and_leaves_no_reader_thread() -> None:
    async def main(api: ApiServer, kube: Kube) -> None:
        events: list[str] = []

        async def on_event(event: dict[str, Any]) -> bool:
            events.append(f"{event['type']} {event['object']['metadata']['name']}")
            return True

        deadline = trio.current_time() + 0.5
        with trio.move_on_at(deadline):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    lambda: kube.watch(
                        SERVICES.path(),
                        resource_version="0",
                        timeout_seconds=300,
                        on_event=on_event,
                    )
                )
                await trio.sleep(0.1)
                api.put_object(service("c"))
        assert events == ["ADDED c"]
        # The watch returns only once its reader thread has (shielded), and that thread was
        # blocked reading a stream with nothing more to say: returning at all, and promptly,
        # means cancelling shut the response down and the thread ended.
        assert trio.current_time() - deadline < 5

    run(main)


def run(main: Any) -> None:
    with ApiServer() as api, api.client() as client:
        trio.run(main, api, Kube(client))
