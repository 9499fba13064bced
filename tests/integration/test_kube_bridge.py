"""The bridge to the official client (``shell.control.kube``) against the API emulator: raw JSON
requests, failures mapped, a watch that ends, thread and all, when it is cancelled or its reader
waits for room, and JSON too deep to decode refused alone: an answer, a list item, a watch
event."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from coxswain.shell.control.json_bodies import MAX_BODY_DEPTH, Refused
from coxswain.shell.control.kube import (
    WATCH_BUFFER,
    ApiFailure,
    Kube,
    Resource,
    Undecodable,
    Unreachable,
)
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


def test_a_watch_ahead_of_its_consumer_waits_loses_nothing_and_ends_when_told() -> None:
    async def main(api: ApiServer, kube: Kube) -> None:
        start = str(api.resource_version)
        names = [f"s{n:04d}" for n in range(2 * WATCH_BUFFER + 10)]
        for name in names:
            api.put_object(service(name))

        async def watched(enough: int) -> list[str]:
            seen: list[str] = []

            async def on_event(event: dict[str, Any]) -> bool:
                if not seen:
                    await trio.sleep(0.5)  # the reader fills the buffer and waits for room
                seen.append(event["object"]["metadata"]["name"])
                return len(seen) < enough

            await kube.watch(
                SERVICES.path(), resource_version=start, timeout_seconds=300, on_event=on_event
            )
            return seen

        assert await watched(len(names)) == names
        # told to stop while the reader waits for room: the watch returns, the thread let go
        assert await watched(1) == names[:1]

    run(main)


def deep_service(name: str, depth: int) -> dict[str, Any]:
    """Service ``app/name`` whose body nests ``depth`` levels (the emulator checks no schema)."""
    value: object = 1
    for _ in range(depth - 2):  # the Service and its spec count too
        value = {"a": value}
    body = service(name)
    body["spec"]["extra"] = value
    return body


def test_json_too_deep_to_decode_is_refused_alone() -> None:
    async def main(api: ApiServer, kube: Kube) -> None:
        for body in (
            service("a"),
            deep_service("deep", 2000),
            deep_service("edge", MAX_BODY_DEPTH),
        ):
            api.put_object(body)
        with pytest.raises(Undecodable, match="the answer nests deeper than 256 levels"):
            await kube.request("GET", SERVICES.path("app", "deep"))
        listing = await kube.list(SERVICES.path())
        assert [i["metadata"]["name"] for i in listing.items] == ["a", "edge"]
        assert [(r.namespace, r.name) for r in listing.refused] == [("app", "deep")]
        assert listing.version == str(api.resource_version)

        api.put_object(deep_service("deeper", MAX_BODY_DEPTH + 1))
        api.delete_object("Service", "deep", "app")
        api.put_object(service("b"))
        events: list[tuple[str, str]] = []

        async def on_event(event: dict[str, Any] | Refused) -> bool:
            if isinstance(event, Refused):
                events.append((f"refused {event.event}", f"{event} at {event.version}"))
            else:
                events.append((event["type"], event["object"]["metadata"]["name"]))
            return len(events) < 3

        await kube.watch(
            SERVICES.path(),
            resource_version=listing.version,
            timeout_seconds=30,
            on_event=on_event,
        )
        version = int(listing.version)
        assert events == [
            ("refused ADDED", f"app/deeper nests deeper than 256 levels at {version + 1}"),
            ("refused DELETED", f"app/deep nests deeper than 256 levels at {version + 2}"),
            ("ADDED", "b"),
        ]

    run(main)


def run(main: Any) -> None:
    with ApiServer() as api, api.client() as client:
        trio.run(main, api, Kube(client))
