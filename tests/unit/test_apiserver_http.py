"""The emulator over real HTTP: lifecycle, kubeconfig, discovery, CRDs, faults and outages."""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from typing import TYPE_CHECKING, Any

import kubernetes.config
import pytest
import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer
from tests.unit import apiserver_fixtures

if TYPE_CHECKING:
    from pathlib import Path

# The emulator fixtures this module uses (see tests/unit/apiserver_fixtures.py).
api = apiserver_fixtures.api
client = apiserver_fixtures.client

PARAMS = "coxswaingatewayparameters"
PARAMS_GROUP = "gateway.coxswain-labs.dev"
TIMEOUT = 5
LONG = {"timeout_seconds": 30, "_request_timeout": 30}


def our_crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(
        (COXSWAIN_CRDS / f"{PARAMS_GROUP}_{PARAMS}.yaml").read_text()
    )
    return crd


def test_listens_on_loopback_and_writes_a_loadable_kubeconfig(
    api: ApiServer, tmp_path: Path
) -> None:
    assert api.url.startswith("http://127.0.0.1:")
    assert not api.url.endswith(":0")
    configuration = k8s.Configuration()
    path = api.kubeconfig(tmp_path / "kubeconfig")
    kubernetes.config.load_kube_config(config_file=str(path), client_configuration=configuration)
    assert configuration.host == api.url
    with k8s.ApiClient(configuration) as api_client:
        k8s.CoreV1Api(api_client).create_namespace({"metadata": {"name": "team"}})
        names = [n.metadata.name for n in k8s.CoreV1Api(api_client).list_namespace().items]
    assert names == ["team"]


def test_discovery_documents_list_the_builtin_kinds(client: k8s.ApiClient) -> None:
    assert k8s.CoreApi(client).get_api_versions().versions == ["v1"]
    core = {r.name: r for r in k8s.CoreV1Api(client).get_api_resources().resources}
    assert {"namespaces", "services", "services/status", "secrets", "configmaps"} <= core.keys()
    assert core["services"].namespaced
    assert not core["namespaces"].namespaced
    assert core["services"].kind == "Service"
    groups = {g.name: g for g in k8s.ApisApi(client).get_api_versions().groups}
    expected = {
        "discovery.k8s.io": "v1",
        "networking.k8s.io": "v1",
        "apps": "v1",
        "coordination.k8s.io": "v1",
        "autoscaling": "v2",
        "policy": "v1",
        "apiextensions.k8s.io": "v1",
    }
    assert {name: groups[name].preferred_version.version for name in expected} == expected
    networking = k8s.NetworkingV1Api(client).get_api_resources().resources
    assert {r.name for r in networking} == {"ingresses", "ingresses/status", "ingressclasses"}
    assert k8s.VersionApi(client).get_code().major == "1"


def test_a_created_crd_is_served_until_deleted(api: ApiServer, client: k8s.ApiClient) -> None:
    extensions, custom = k8s.ApiextensionsV1Api(client), k8s.CustomObjectsApi(client)
    with pytest.raises(ApiException) as absent:
        custom.list_namespaced_custom_object(PARAMS_GROUP, "v1alpha1", "default", PARAMS)
    assert absent.value.status == 404
    crd = extensions.create_custom_resource_definition(our_crd())
    assert {c.type for c in crd.status.conditions} == {"Established", "NamesAccepted"}
    body = {
        "apiVersion": f"{PARAMS_GROUP}/v1alpha1",
        "kind": "CoxswainGatewayParameters",
        "metadata": {"name": "p"},
        "spec": {"replicas": 2},
    }
    custom.create_namespaced_custom_object(PARAMS_GROUP, "v1alpha1", "default", PARAMS, body)
    found = custom.get_namespaced_custom_object(PARAMS_GROUP, "v1alpha1", "default", PARAMS, "p")
    assert found["spec"] == {"replicas": 2}
    assert found["metadata"]["generation"] == 1
    listed = custom.list_cluster_custom_object(PARAMS_GROUP, "v1alpha1", PARAMS)["items"]
    assert [i["kind"] for i in listed] == ["CoxswainGatewayParameters"]
    groups = {g.name for g in k8s.ApisApi(client).get_api_versions().groups}
    assert PARAMS_GROUP in groups

    extensions.delete_custom_resource_definition(crd.metadata.name)
    assert api.objects("CustomResourceDefinition") == []
    groups = {g.name for g in k8s.ApisApi(client).get_api_versions().groups}
    assert PARAMS_GROUP not in groups
    with pytest.raises(ApiException) as gone:
        custom.get_namespaced_custom_object(PARAMS_GROUP, "v1alpha1", "default", PARAMS, "p")
    assert gone.value.status == 404


def test_install_crds_serves_gateway_api_scopes_versions_and_status(
    api: ApiServer, client: k8s.ApiClient
) -> None:
    names = api.install_crds(GATEWAY_API_CRDS, COXSWAIN_CRDS)
    assert "gateways.gateway.networking.k8s.io" in names
    assert len(names) == 11
    custom, group = k8s.CustomObjectsApi(client), "gateway.networking.k8s.io"
    gatewayclass = {"metadata": {"name": "coxswain"}, "spec": {"controllerName": "x/y"}}
    custom.create_cluster_custom_object(group, "v1", "gatewayclasses", gatewayclass)
    with pytest.raises(ApiException) as namespaced:
        custom.create_namespaced_custom_object(group, "v1", "default", "gatewayclasses", {})
    assert namespaced.value.status == 404
    older = custom.get_cluster_custom_object(group, "v1beta1", "gatewayclasses", "coxswain")
    assert older["apiVersion"] == f"{group}/v1beta1"
    resources = {r.name for r in custom.get_api_resources(group, "v1").resources}
    assert {"gateways", "gateways/status", "referencegrants"} <= resources
    assert "referencegrants/status" not in resources
    assert api.install_crds(GATEWAY_API_CRDS / "gateway.networking.k8s.io_gateways.yaml") == [
        "gateways.gateway.networking.k8s.io"
    ]


def test_dynamic_client_discovers_builtins_and_crds_installed_later(
    api: ApiServer, client: k8s.ApiClient, tmp_path: Path
) -> None:
    dynamic = DynamicClient(client, cache_file=str(tmp_path / "discovery.json"))
    services = dynamic.resources.get(api_version="v1", kind="Service")
    services.create(namespace="default", body={"metadata": {"name": "web"}, "spec": {}})
    assert [s.metadata.name for s in services.get(namespace="default").items] == ["web"]

    api.install_crds(COXSWAIN_CRDS)
    params = dynamic.resources.get(
        api_version=f"{PARAMS_GROUP}/v1alpha1", kind="CoxswainGatewayParameters"
    )
    applied = params.server_side_apply(
        namespace="default",
        body={
            "apiVersion": f"{PARAMS_GROUP}/v1alpha1",
            "kind": "CoxswainGatewayParameters",
            "metadata": {"name": "p"},
            "spec": {"replicas": 3},
        },
        field_manager="coxswain",
    )
    assert applied.spec.replicas == 3
    assert api.get("CoxswainGatewayParameters", "p")["spec"] == {"replicas": 3}


def test_injected_faults_fail_matching_requests_then_stop(
    api: ApiServer, client: k8s.ApiClient
) -> None:
    core = k8s.CoreV1Api(client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    api.fail(500, method="PATCH", path_prefix="/api/v1/namespaces/default/configmaps", times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as failed:
            core.patch_namespaced_config_map("c", "default", {"data": {"k": "v"}})
        assert failed.value.status == 500
        assert json.loads(failed.value.body)["reason"] == "InternalError"
    core.read_namespaced_config_map("c", "default")
    assert core.patch_namespaced_config_map("c", "default", {"data": {"k": "v"}}).data == {"k": "v"}
    api.fail(409)
    with pytest.raises(ApiException) as conflict:
        core.read_namespaced_config_map("c", "default")
    assert conflict.value.status == 409


def test_dry_run_is_refused_rather_than_persisted(api: ApiServer, client: k8s.ApiClient) -> None:
    with pytest.raises(ApiException) as refused:
        k8s.CoreV1Api(client).create_namespaced_config_map(
            "default", {"metadata": {"name": "c"}}, dry_run="All"
        )
    assert refused.value.status == 400
    assert api.objects("ConfigMap") == []


def test_an_outage_refuses_connections_and_recovers_on_the_same_port(
    api: ApiServer, client: k8s.ApiClient
) -> None:
    core, url = k8s.CoreV1Api(client), api.url
    core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}})
    with api.outage(), pytest.raises(urllib3.exceptions.MaxRetryError):
        core.list_namespaced_config_map("default", _request_timeout=TIMEOUT)
    assert api.url == url
    listed = core.list_namespaced_config_map("default", _request_timeout=TIMEOUT)
    assert [c.metadata.name for c in listed.items] == ["kept"]


def test_the_request_log_records_method_path_and_content_type(
    api: ApiServer, client: k8s.ApiClient
) -> None:
    core = k8s.CoreV1Api(client)
    core.create_namespaced_service("default", {"metadata": {"name": "web"}, "spec": {}})
    status = {"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}}
    core.patch_namespaced_service_status("web", "default", status)
    core.patch_namespaced_service_status("web", "default", status)
    status_patches = [
        r for r in api.requests if r.method == "PATCH" and r.path.endswith("/web/status")
    ]
    assert len(status_patches) == 2
    assert status_patches[0].content_type == "application/strategic-merge-patch+json"
    assert api.requests[0].method == "POST"
    assert api.requests[0].path == "/api/v1/namespaces/default/services"


def test_watches_stream_chunked_json_lines_over_keep_alive(api: ApiServer) -> None:
    api.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    connection = http.client.HTTPConnection("127.0.0.1", int(api.url.rsplit(":", 1)[1]), timeout=5)
    try:
        connection.request("GET", "/api/v1/namespaces/default/configmaps?watch=1")
        response = connection.getresponse()
        assert response.getheader("Transfer-Encoding") == "chunked"
        first = json.loads(response.readline())
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "c")
        api.drop_watches()
        assert response.read() == b""
        connection.request("GET", "/api/v1/namespaces/default/configmaps/c")
        again = connection.getresponse()
        assert (again.status, json.loads(again.read())["kind"]) == (200, "ConfigMap")
    finally:
        connection.close()


def test_stopping_ends_open_watches_promptly(api: ApiServer, client: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    opened, ended = threading.Event(), threading.Event()

    def follow() -> None:
        with contextlib.suppress(urllib3.exceptions.HTTPError):
            for _ in watch.Watch().stream(core.list_namespaced_config_map, "default", **LONG):
                opened.set()
        ended.set()

    thread = threading.Thread(target=follow)
    thread.start()
    assert opened.wait(TIMEOUT)
    started = time.monotonic()
    api.stop()
    thread.join(TIMEOUT)
    assert ended.is_set()
    assert time.monotonic() - started < TIMEOUT
    api.start()
    assert core.read_namespaced_config_map("c", "default").metadata.name == "c"
