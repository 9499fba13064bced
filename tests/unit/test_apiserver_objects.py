"""Object semantics through the official client: CRUD, concurrency, status, GC, finalizers."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.apiserver import GATEWAY_API_CRDS, ApiServer
from tests.unit import apiserver_fixtures

# The emulator fixtures this module uses (see tests/unit/apiserver_fixtures.py).
api = apiserver_fixtures.api
core = apiserver_fixtures.core


def status_of(error: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.value.body)
    return body


def service(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"ports": [{"port": 80}]}}


def test_create_fills_server_metadata(api: ApiServer, core: k8s.CoreV1Api) -> None:
    created = core.create_namespaced_service("default", service("web"))
    assert created.metadata.uid
    stored = api.get("Service", "web")
    assert stored is not None
    # RFC 3339 to the second, as Kubernetes writes it, and the client reads it back
    assert created.metadata.creation_timestamp == datetime.fromisoformat(
        stored["metadata"]["creationTimestamp"]
    )
    assert stored["metadata"]["creationTimestamp"].endswith("Z")
    assert created.metadata.resource_version == str(api.resource_version)
    assert created.metadata.generation == 1
    config = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert config.metadata.generation is None
    generated = core.create_namespaced_config_map("default", {"metadata": {"generateName": "x-"}})
    assert generated.metadata.name.startswith("x-")
    assert len(generated.metadata.name) == 7
    assert len({created.metadata.uid, config.metadata.uid, generated.metadata.uid}) == 3


def test_create_of_a_taken_name_is_409_already_exists(core: k8s.CoreV1Api) -> None:
    core.create_namespaced_service("default", service("web"))
    with pytest.raises(ApiException) as taken:
        core.create_namespaced_service("default", service("web"))
    assert taken.value.status == 409
    assert status_of(taken)["reason"] == "AlreadyExists"
    assert status_of(taken)["details"] == {"name": "web", "kind": "services"}


def test_get_of_a_missing_object_is_a_404_status(core: k8s.CoreV1Api) -> None:
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_service("nope", "default")
    assert missing.value.status == 404
    body = status_of(missing)
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert (body["reason"], body["code"]) == ("NotFound", 404)
    assert body["message"] == 'services "nope" not found'


def test_updates_are_optimistic_and_unconditional_without_a_version(
    api: ApiServer, core: k8s.CoreV1Api
) -> None:
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    created.data = {"a": "1"}
    updated = core.replace_namespaced_config_map("c", "default", created)
    created.data = {"a": "2"}
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("c", "default", created)
    assert (stale.value.status, status_of(stale)["reason"]) == (409, "Conflict")
    unconditional = {"metadata": {"name": "c"}, "data": {"a": "3"}}
    assert core.replace_namespaced_config_map("c", "default", unconditional).data == {"a": "3"}
    version = api.resource_version
    core.replace_namespaced_config_map("c", "default", unconditional)
    assert api.resource_version == version, "an update that changes nothing writes nothing"
    assert updated.metadata.resource_version != created.metadata.resource_version


def test_status_subresource_is_kept_apart_and_generation_tracks_spec(
    core: k8s.CoreV1Api,
) -> None:
    core.create_namespaced_service("default", service("web"))
    lb = {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}
    body = {**service("web"), "spec": {"ports": [{"port": 81}]}, "status": lb}
    after_status = core.replace_namespaced_service_status("web", "default", body)
    assert after_status.status.load_balancer.ingress[0].ip == "10.0.0.1"
    assert after_status.spec.ports[0].port == 80, "a status write ignores the spec"
    assert after_status.metadata.generation == 1

    ignored = {"status": {"loadBalancer": {}}, "metadata": {"labels": {"a": "b"}}}
    after_labels = core.patch_namespaced_service("web", "default", ignored)
    assert after_labels.status.load_balancer.ingress[0].ip == "10.0.0.1"
    assert after_labels.metadata.labels == {"a": "b"}
    assert after_labels.metadata.generation == 1, "metadata changes do not bump generation"

    after_spec = core.patch_namespaced_service("web", "default", {"spec": {"type": "NodePort"}})
    assert after_spec.metadata.generation == 2


def test_custom_resources_have_a_status_subresource_when_declared(api: ApiServer) -> None:
    api.install_crds(GATEWAY_API_CRDS / "gateway.networking.k8s.io_httproutes.yaml")
    group, version, plural = "gateway.networking.k8s.io", "v1", "httproutes"
    route = {
        "apiVersion": f"{group}/{version}",
        "kind": "HTTPRoute",
        "metadata": {"name": "r"},
        "spec": {"hostnames": ["a.example"]},
        "status": {"parents": ["dropped on create"]},
    }
    with api.client() as api_client:
        custom = k8s.CustomObjectsApi(api_client)
        created = custom.create_namespaced_custom_object(group, version, "default", plural, route)
        assert "status" not in created
        status = {"status": {"parents": []}, "spec": {"hostnames": ["ignored"]}}
        patched = custom.patch_namespaced_custom_object_status(
            group, version, "default", plural, "r", status
        )
    assert patched["status"] == {"parents": []}
    assert patched["spec"] == {"hostnames": ["a.example"]}
    assert patched["metadata"]["generation"] == 1


def test_lists_filter_by_labels_fields_and_namespace(api: ApiServer, core: k8s.CoreV1Api) -> None:
    core.create_namespaced_service("default", service("a", tier="web", env="prod"))
    core.create_namespaced_service("default", service("b", tier="db"))
    core.create_namespaced_service("other", service("c", tier="web"))

    def names(namespace: str | None = None, **selectors: str) -> list[str]:
        if namespace is None:
            listed = core.list_service_for_all_namespaces(**selectors)
        else:
            listed = core.list_namespaced_service(namespace, **selectors)
        assert listed.metadata.resource_version == str(api.resource_version)
        return [s.metadata.name for s in listed.items]

    assert names() == ["a", "b", "c"]
    assert names("default") == ["a", "b"]
    assert names(label_selector="tier=web") == ["a", "c"]
    assert names(label_selector="tier==web,env") == ["a"]
    assert names(label_selector="tier!=web") == ["b"]
    assert names(label_selector="tier in (db, cache)") == ["b"]
    assert names(label_selector="tier notin (db),!env") == ["c"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.namespace!=default") == ["c"]
    assert names("default", field_selector="metadata.name!=a", label_selector="tier") == ["b"]
    with pytest.raises(ApiException) as unsupported:
        names(field_selector="spec.type=ClusterIP")
    assert unsupported.value.status == 400


def test_delete_waits_for_finalizers(api: ApiServer, core: k8s.CoreV1Api) -> None:
    body = {"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}
    core.create_namespaced_config_map("default", body)
    pending = core.delete_namespaced_config_map("c", "default")
    assert pending["metadata"]["deletionTimestamp"]
    held = core.read_namespaced_config_map("c", "default")
    assert held.metadata.deletion_timestamp == datetime.fromisoformat(
        pending["metadata"]["deletionTimestamp"]
    )
    core.patch_namespaced_config_map("c", "default", {"metadata": {"finalizers": None}})
    assert api.get("ConfigMap", "c") is None
    core.create_namespaced_config_map("default", {"metadata": {"name": "plain"}})
    deleted = core.delete_namespaced_config_map("plain", "default")
    assert deleted["metadata"]["name"] == "plain"


def owned(name: str, *owners: k8s.V1ObjectMeta) -> dict[str, Any]:
    refs = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": o.name, "uid": o.uid}
        for o in owners
    ]
    return {"metadata": {"name": name, "ownerReferences": refs}}


def test_garbage_collection_follows_owner_references(api: ApiServer, core: k8s.CoreV1Api) -> None:
    first = api.put_object(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "one"}, "spec": {}}
    )
    second = api.put_object(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "two"}, "spec": {}}
    )
    one, two = (k8s.V1ObjectMeta(**o["metadata"]) for o in (first, second))
    core.create_namespaced_config_map("default", owned("single", one))
    core.create_namespaced_config_map("default", owned("shared", one, two))
    core.create_namespaced_config_map("default", owned("orphan", two))
    with api.client() as api_client:
        apps = k8s.AppsV1Api(api_client)
        apps.delete_namespaced_deployment("one", "default")
        assert [c["metadata"]["name"] for c in api.objects("ConfigMap")] == ["orphan", "shared"]
        apps.delete_namespaced_deployment("two", "default", propagation_policy="Orphan")
    remaining = {c["metadata"]["name"]: c["metadata"] for c in api.objects("ConfigMap")}
    assert remaining.keys() == {"orphan", "shared"}
    assert not any("ownerReferences" in metadata for metadata in remaining.values())


def test_racing_lease_updates_get_one_conflict(api: ApiServer) -> None:
    lease = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "nobody"}}
    with api.client() as first_client, api.client() as second_client:
        first, second = k8s.CoordinationV1Api(first_client), k8s.CoordinationV1Api(second_client)
        first.create_namespaced_lease("default", lease)
        mine = first.read_namespaced_lease("leader", "default")
        theirs = second.read_namespaced_lease("leader", "default")
        mine.spec.holder_identity, theirs.spec.holder_identity = "me", "them"
        first.replace_namespaced_lease("leader", "default", mine)
        with pytest.raises(ApiException) as lost:
            second.replace_namespaced_lease("leader", "default", theirs)
        assert lost.value.status == 409
        assert second.read_namespaced_lease("leader", "default").spec.holder_identity == "me"


def test_direct_store_access_bypasses_http(api: ApiServer, core: k8s.CoreV1Api) -> None:
    before = len(api.requests)
    api.put_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}},
        }
    )
    assert len(api.requests) == before
    read = core.read_namespaced_service("web", "apps")
    assert read.status.load_balancer.ingress[0].hostname == "lb.example"
    assert [s["metadata"]["name"] for s in api.objects("Service", namespace="apps")] == ["web"]
    assert api.get("Service", "web") is None, "the default namespace is default"
    api.delete_object("Service", "web", namespace="apps")
    assert api.get("Service", "web", namespace="apps") is None


def test_put_object_cannot_undelete_but_can_release_finalizers(api: ApiServer) -> None:
    held = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["x"]}}
    api.put_object(held)
    api.delete_object("ConfigMap", "c")
    api.put_object({**held, "data": {"k": "v"}})
    kept = api.get("ConfigMap", "c")
    assert kept is not None
    assert "deletionTimestamp" in kept["metadata"]
    api.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    assert api.get("ConfigMap", "c") is None
