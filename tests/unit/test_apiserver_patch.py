"""PATCH in its four content types, and server-side apply's field ownership."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.apiserver import COXSWAIN_CRDS, ApiError, ApiServer
from tests.apiserver.patch import json_patch, merge_patch
from tests.unit import apiserver_fixtures

# The emulator fixtures this module uses (see tests/unit/apiserver_fixtures.py).
api = apiserver_fixtures.api
core = apiserver_fixtures.core

APPLY = "application/apply-patch+yaml"
PARAMS_GROUP, PARAMS_VERSION, PARAMS = (
    "gateway.coxswain-labs.dev",
    "v1alpha1",
    "coxswaingatewayparameters",
)


def apply(
    core: k8s.CoreV1Api, manager: str, data: dict[str, str], force: bool = False, **labels: str
) -> k8s.V1ConfigMap:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": data,
    }
    if labels:
        body["metadata"]["labels"] = labels
    return core.patch_namespaced_config_map(
        "c", "default", body, field_manager=manager, force=force, _content_type=APPLY
    )


def managers(obj: k8s.V1ConfigMap) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e.manager, e.operation): e.fields_v1 for e in obj.metadata.managed_fields}


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [  # RFC 7386, appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_follows_rfc_7386(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


def test_json_patch_follows_rfc_6902() -> None:
    document = {"a": {"b": [1, 2]}, "c": "d"}
    operations = [
        {"op": "add", "path": "/a/b/1", "value": 9},
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "replace", "path": "/c", "value": "e"},
        {"op": "move", "from": "/c", "path": "/f~1g"},
        {"op": "copy", "from": "/a", "path": "/h"},
        {"op": "test", "path": "/h/b", "value": [9, 2, 3]},
    ]
    patched = json_patch(document, operations)
    assert patched == {"a": {"b": [9, 2, 3]}, "f/g": "e", "h": {"b": [9, 2, 3]}}
    assert document == {"a": {"b": [1, 2]}, "c": "d"}, "the input is not mutated"
    with pytest.raises(ApiError) as failed:
        json_patch(document, [{"op": "test", "path": "/c", "value": "x"}])
    assert failed.value.code == 422


def test_patch_content_types_through_the_client(api: ApiServer, core: k8s.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    strategic = core.patch_namespaced_config_map("c", "default", {"data": {"b": "2"}})
    assert strategic.data == {"a": "1", "b": "2"}
    merged = core.patch_namespaced_config_map(
        "c", "default", {"data": {"a": None}}, _content_type="application/merge-patch+json"
    )
    assert merged.data == {"b": "2"}
    operations = [
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "remove", "path": "/data/b"},
    ]
    assert core.patch_namespaced_config_map("c", "default", operations).data == {"c": "3"}
    with pytest.raises(ApiException) as failed:
        core.patch_namespaced_config_map("c", "default", [{"op": "remove", "path": "/nope"}])
    assert failed.value.status == 422
    content_types = [r.content_type for r in api.requests if r.method == "PATCH"]
    assert content_types == [
        "application/strategic-merge-patch+json",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/json-patch+json",
    ]


def test_strategic_merge_patch_is_refused_for_custom_resources(api: ApiServer) -> None:
    api.install_crds(COXSWAIN_CRDS)
    params = {
        "apiVersion": f"{PARAMS_GROUP}/{PARAMS_VERSION}",
        "kind": "CoxswainGatewayParameters",
        "metadata": {"name": "p"},
        "spec": {"replicas": 1},
    }
    with api.client() as api_client:
        custom = k8s.CustomObjectsApi(api_client)
        args = (PARAMS_GROUP, PARAMS_VERSION, "default", PARAMS)
        custom.create_namespaced_custom_object(*args, params)
        merged = custom.patch_namespaced_custom_object(*args, "p", {"spec": {"replicas": 2}})
        assert merged["spec"] == {"replicas": 2}
        assert merged["metadata"]["generation"] == 2
        with pytest.raises(ApiException) as refused:
            custom.patch_namespaced_custom_object(
                *args, "p", {"spec": {}}, _content_type="application/strategic-merge-patch+json"
            )
    assert refused.value.status == 415


def test_apply_requires_a_field_manager(core: k8s.CoreV1Api) -> None:
    with pytest.raises(ApiException) as refused:
        core.patch_namespaced_config_map(
            "c", "default", {"metadata": {"name": "c"}}, _content_type=APPLY
        )
    assert refused.value.status == 400


def test_apply_creates_and_records_managed_fields(core: k8s.CoreV1Api) -> None:
    created = apply(core, "alice", {"a": "1"}, app="x")
    assert created.data == {"a": "1"}
    assert created.metadata.labels == {"app": "x"}
    assert managers(created) == {
        ("alice", "Apply"): {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    }
    version = created.metadata.resource_version
    assert apply(core, "alice", {"a": "1"}, app="x").metadata.resource_version == version


def test_apply_conflicts_unless_forced_and_shares_equal_values(core: k8s.CoreV1Api) -> None:
    apply(core, "alice", {"a": "1", "b": "1"})
    shared = apply(core, "bob", {"a": "1"})
    assert set(managers(shared)) == {("alice", "Apply"), ("bob", "Apply")}
    with pytest.raises(ApiException) as conflict:
        apply(core, "bob", {"a": "2", "b": "2"})
    body = json.loads(conflict.value.body)
    assert (conflict.value.status, body["reason"]) == (409, "Conflict")
    assert [c["field"] for c in body["details"]["causes"]] == [".data.a", ".data.b"]
    forced = apply(core, "bob", {"a": "2", "b": "2"}, force=True)
    assert forced.data == {"a": "2", "b": "2"}
    assert set(managers(forced)) == {("bob", "Apply")}, "alice lost every field she set"


def test_apply_removes_fields_a_manager_stops_setting(core: k8s.CoreV1Api) -> None:
    apply(core, "alice", {"a": "1", "b": "1", "c": "1"})
    apply(core, "bob", {"c": "1"})
    assert apply(core, "alice", {"a": "1"}).data == {"a": "1", "c": "1"}


def test_updates_take_ownership_from_appliers(core: k8s.CoreV1Api) -> None:
    apply(core, "alice", {"a": "1"})
    core.patch_namespaced_config_map("c", "default", {"data": {"a": "2"}}, field_manager="kubectl")
    with pytest.raises(ApiException) as conflict:
        apply(core, "alice", {"a": "3"})
    assert conflict.value.status == 409


def test_apply_to_status_changes_only_status(core: k8s.CoreV1Api) -> None:
    core.create_namespaced_service(
        "default", {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    )
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 9}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}},
    }
    applied = core.patch_namespaced_service_status(
        "web", "default", body, field_manager="lb", _content_type=APPLY
    )
    assert applied.status.load_balancer.ingress[0].ip == "10.0.0.9"
    assert applied.spec.ports[0].port == 80
    entry = next(e for e in applied.metadata.managed_fields if e.manager == "lb")
    assert (entry.operation, entry.subresource) == ("Apply", "status")
