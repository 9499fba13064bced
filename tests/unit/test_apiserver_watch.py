"""Watches through `kubernetes.watch.Watch`: replay, live events, bookmarks, expiry, drops.

Every stream has `timeout_seconds` and `_request_timeout`, so a broken emulator fails a test
instead of hanging it; most tests stop the stream as soon as they have what they expect.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from tests.apiserver import COXSWAIN_CRDS, ApiServer
from tests.unit import apiserver_fixtures

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

# The emulator fixtures this module uses (see tests/unit/apiserver_fixtures.py); `core` runs on
# this module's own `api` below.
core = apiserver_fixtures.core

LIMITS: dict[str, Any] = {"timeout_seconds": 5, "_request_timeout": 10}


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer(bookmark_interval=60) as server:
        yield server


def config_map(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def collect(
    stream_of: Callable[..., Any],
    count: int,
    on_event: Callable[[dict[str, Any]], None] = lambda _: None,
    **kwargs: Any,
) -> list[tuple[str, str]]:
    """The first `count` events' (type, name or resourceVersion) of a watch, then stop it."""
    watcher, seen = watch.Watch(), []
    for event in watcher.stream(stream_of, **LIMITS, **kwargs):
        metadata = event["raw_object"]["metadata"]
        seen.append((event["type"], metadata.get("name", metadata["resourceVersion"])))
        on_event(event)
        if len(seen) == count:
            watcher.stop()
    return seen


def test_watch_replays_history_newer_than_the_resource_version(core: k8s.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("a"))
    since = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", config_map("b"))
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("b", "default")
    events = collect(
        core.list_namespaced_config_map, 3, namespace="default", resource_version=since
    )
    assert events == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]


def test_watch_without_a_version_lists_then_streams_live_events(core: k8s.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("a"))
    core.create_namespaced_config_map("elsewhere", config_map("hidden"))

    def write(event: dict[str, Any]) -> None:
        if event["raw_object"]["metadata"]["name"] == "a":
            core.create_namespaced_config_map("elsewhere", config_map("hidden2"))
            core.create_namespaced_config_map("default", config_map("b"))

    events = collect(core.list_namespaced_config_map, 2, write, namespace="default")
    assert events == [("ADDED", "a"), ("ADDED", "b")]


def test_label_selected_watches_see_objects_enter_and_leave(core: k8s.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("a"))
    since = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "x"}}})
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": None}}})
    events = collect(
        core.list_namespaced_config_map,
        3,
        namespace="default",
        resource_version=since,
        label_selector="app=x",
    )
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_bookmarks_are_sent_on_demand(api: ApiServer, core: k8s.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("a"))
    version = str(api.resource_version)
    events = collect(
        core.list_namespaced_config_map,
        2,
        lambda _: api.bookmark(),
        namespace="default",
        allow_watch_bookmarks=True,
    )
    assert events == [("ADDED", "a"), ("BOOKMARK", version)]


def test_bookmarks_are_sent_periodically_when_allowed() -> None:
    with ApiServer(bookmark_interval=0.05) as api, api.client() as api_client:
        core = k8s.CoreV1Api(api_client)
        version = str(api.resource_version)
        events = collect(core.list_config_map_for_all_namespaces, 1, allow_watch_bookmarks=True)
    assert events == [("BOOKMARK", version)]


def test_timeout_seconds_ends_the_stream_cleanly(core: k8s.CoreV1Api) -> None:
    started = time.monotonic()
    events = list(
        watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=1)
    )
    assert events == []
    assert 0.9 < time.monotonic() - started < 3


def test_watching_from_a_compacted_version_is_410_expired(
    api: ApiServer, core: k8s.CoreV1Api
) -> None:
    core.create_namespaced_config_map("default", config_map("a"))
    since = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", config_map("b"))
    api.compact()
    with pytest.raises(ApiException) as expired:
        collect(core.list_namespaced_config_map, 1, namespace="default", resource_version=since)
    assert expired.value.status == 410
    assert str(expired.value.reason).startswith("Expired: too old resource version")
    with pytest.raises(ApiException) as listed:
        core.list_namespaced_config_map(
            "default", resource_version=since, resource_version_match="Exact"
        )
    assert listed.value.status == 410
    current = str(api.resource_version)
    core.create_namespaced_config_map("default", config_map("c"))
    assert collect(
        core.list_namespaced_config_map, 1, namespace="default", resource_version=current
    ) == [("ADDED", "c")]


def test_the_history_window_is_bounded() -> None:
    with ApiServer(history_limit=2) as api, api.client() as api_client:
        core = k8s.CoreV1Api(api_client)
        since = str(api.resource_version)
        for name in "abc":
            core.create_namespaced_config_map("default", config_map(name))
        with pytest.raises(ApiException) as expired:
            collect(core.list_namespaced_config_map, 1, namespace="default", resource_version=since)
        assert expired.value.status == 410
        recent = collect(
            core.list_namespaced_config_map,
            2,
            namespace="default",
            resource_version=str(api.resource_version - 2),
        )
    assert recent == [("ADDED", "b"), ("ADDED", "c")]


def test_dropped_watches_end_so_clients_rewatch(api: ApiServer, core: k8s.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", config_map("a"))
    started, seen = time.monotonic(), []
    stream = watch.Watch().stream(
        core.list_namespaced_config_map, "default", timeout_seconds=30, _request_timeout=30
    )
    for event in stream:
        seen.append(event["raw_object"]["metadata"]["resourceVersion"])
        api.drop_watches()
    assert len(seen) == 1
    assert time.monotonic() - started < 5
    core.create_namespaced_config_map("default", config_map("b"))
    resumed = collect(
        core.list_namespaced_config_map, 1, namespace="default", resource_version=seen[0]
    )
    assert resumed == [("ADDED", "b")]


def test_finalizers_show_as_modified_then_deleted(core: k8s.CoreV1Api) -> None:
    body = {"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}
    core.create_namespaced_config_map("default", body)
    since = core.list_namespaced_config_map("default").metadata.resource_version
    core.delete_namespaced_config_map("c", "default")
    core.patch_namespaced_config_map("c", "default", {"metadata": {"finalizers": []}})
    watcher, seen = watch.Watch(), []
    for event in watcher.stream(
        core.list_namespaced_config_map, "default", resource_version=since, **LIMITS
    ):
        seen.append((event["type"], event["object"].metadata.deletion_timestamp is not None))
        if len(seen) == 2:
            watcher.stop()
    assert seen == [("MODIFIED", True), ("DELETED", True)]


def test_deleting_a_crd_deletes_its_objects_and_ends_its_watches(api: ApiServer) -> None:
    api.install_crds(COXSWAIN_CRDS)
    group, version, plural = "gateway.coxswain-labs.dev", "v1alpha1", "coxswaingatewayparameters"
    api.put_object(
        {
            "apiVersion": f"{group}/{version}",
            "kind": "CoxswainGatewayParameters",
            "metadata": {"name": "p"},
            "spec": {},
        }
    )

    def delete_crd(event: dict[str, Any]) -> None:
        if event["type"] == "ADDED":
            api.delete_object("CustomResourceDefinition", f"{plural}.{group}")

    with api.client() as api_client:
        custom = k8s.CustomObjectsApi(api_client)
        events = collect(
            custom.list_namespaced_custom_object,
            3,
            delete_crd,
            group=group,
            version=version,
            namespace="default",
            plural=plural,
        )
    assert events == [("ADDED", "p"), ("DELETED", "p")], "the stream ended after the deletion"


def test_faults_can_target_watch_requests(api: ApiServer, core: k8s.CoreV1Api) -> None:
    api.fail(503, method="GET", path_prefix="/api/v1/namespaces/default/configmaps")
    with pytest.raises(ApiException) as unavailable:
        collect(core.list_namespaced_config_map, 1, namespace="default")
    assert unavailable.value.status == 503
    core.create_namespaced_config_map("default", config_map("a"))
    assert collect(core.list_namespaced_config_map, 1, namespace="default") == [("ADDED", "a")]


def test_expire_makes_even_the_latest_version_too_old_and_a_new_list_watchable(
    api: ApiServer, core: k8s.CoreV1Api
) -> None:
    core.create_namespaced_config_map("default", config_map("a"))
    latest = core.list_namespaced_config_map("default").metadata.resource_version
    api.expire()
    with pytest.raises(ApiException) as expired:
        collect(core.list_namespaced_config_map, 1, namespace="default", resource_version=latest)
    assert expired.value.status == 410
    relisted = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", config_map("b"))
    assert collect(
        core.list_namespaced_config_map, 1, namespace="default", resource_version=relisted
    ) == [("ADDED", "b")]


def test_a_list_in_pages_gives_every_object_once_at_the_first_pages_version(
    core: k8s.CoreV1Api,
) -> None:
    for name in "edcba":
        core.create_namespaced_config_map("default", config_map(name))
    first = core.list_namespaced_config_map("default", limit=2)
    names = [item.metadata.name for item in first.items]
    version, token = first.metadata.resource_version, first.metadata._continue
    assert names == ["a", "b"]
    assert token
    while token:
        page = core.list_namespaced_config_map("default", limit=2, _continue=token)
        assert page.metadata.resource_version == version
        names += [item.metadata.name for item in page.items]
        token = page.metadata._continue
    assert names == ["a", "b", "c", "d", "e"]
    with pytest.raises(ApiException) as refused:
        core.list_namespaced_config_map("default", limit=2, _continue="not-a-token")
    assert refused.value.status == 400
