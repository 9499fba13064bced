"""compile.provision and compile.gateway.status at their edges: what is deleted when, which
Gateways are skipped, canonical bodies, and the Programmed condition's reasons.
"""

from __future__ import annotations

import json
from typing import Any

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.api import analyse
from coxswain.compile.gateway.ports import PORT_BAND
from coxswain.compile.gateway.vip import VIP_SUFFIX
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.provision import (
    GATEWAY_ANNOTATION,
    MANAGED_BY,
    ROLE,
    ROLE_DEDICATED,
    provision,
)
from tests.integration.manifests import gateway, gateway_class

CONFIG = CompileConfig()
EDGE = "app/edge"


def _owned(kind: str, name: str, namespace: str, role: str, **extra: Any) -> dict[str, Any]:
    labels = {MANAGED_BY[0]: MANAGED_BY[1], ROLE: role}
    return {
        "apiVersion": "apps/v1" if kind == "Deployment" else "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {GATEWAY_ANNOTATION: EDGE},
        },
        **extra,
    }


# Gateway app/edge, served by the shared pool, with what its dedicated proxy left behind, and
# leftovers of Gateways that no longer exist.
WORLD = [
    gateway_class(),
    gateway("edge", 80),
    _owned("Service", "edge-coxswain", "app", ROLE_DEDICATED, spec={"ports": [{"port": 80}]}),
    _owned("ServiceAccount", "edge-coxswain", "app", ROLE_DEDICATED),
    _owned("Deployment", "edge-coxswain", "app", ROLE_DEDICATED),
    _owned("Service", "gone-vip", "coxswain-system", "shared-vip", spec={"ports": [{"port": 80}]}),
    _owned("ServiceAccount", "gone-identity", "app", "shared-identity"),
]
DEDICATED = {
    ObjectKey("Service", "app", "edge-coxswain"),
    ObjectKey("ServiceAccount", "app", "edge-coxswain"),
    ObjectKey("Deployment", "app", "edge-coxswain"),
}
LEFTOVERS = {
    ObjectKey("Service", "coxswain-system", "gone-vip"),
    ObjectKey("ServiceAccount", "app", "gone-identity"),
}


def _deletions(world: list[dict[str, Any]], shared_served: set[str] | None) -> set[ObjectKey]:
    return set(provision(build_state(world), CONFIG, shared_served).deletions)


def test_offline_a_dedicated_proxy_back_in_the_pool_is_deleted_with_the_leftovers():
    assert _deletions(WORLD, None) == DEDICATED | LEFTOVERS


def test_a_dedicated_proxy_stays_until_the_shared_pool_serves_its_gateway():
    assert _deletions(WORLD, set()) == LEFTOVERS
    assert _deletions(WORLD, {"app/other"}) == LEFTOVERS
    assert _deletions(WORLD, {EDGE}) == DEDICATED | LEFTOVERS


def test_only_objects_we_manage_and_vips_in_our_namespace_are_deleted():
    unmanaged = _owned("Service", "theirs", "coxswain-system", "shared-vip")
    del unmanaged["metadata"]["labels"][MANAGED_BY[0]]
    foreign_manager = _owned("Service", "foreign", "coxswain-system", "shared-vip")
    foreign_manager["metadata"]["labels"][MANAGED_BY[0]] = "helm"
    elsewhere = _owned("Service", "vip-elsewhere", "other", "shared-vip")
    no_role = _owned("Service", "no-role", "coxswain-system", "something-else")
    world = [*WORLD, unmanaged, foreign_manager, elsewhere, no_role]
    assert _deletions(world, None) == DEDICATED | LEFTOVERS


def test_a_refused_gateway_gets_nothing_and_the_next_one_is_still_provisioned():
    refused = gateway("aaa", 81)
    refused["spec"]["infrastructure"] = {
        "parametersRef": {
            "group": "gateway.coxswain-labs.dev",
            "kind": "CoxswainGatewayParameters",
            "name": "missing",
        }
    }
    desired = provision(build_state([gateway_class(), refused, gateway("edge", 80)]), CONFIG)
    owners = {
        json.loads(o.body)["metadata"]["annotations"][GATEWAY_ANNOTATION] for o in desired.objects
    }
    assert owners == {EDGE}


def test_desired_bodies_and_statuses_are_canonical_json():
    state = build_state(WORLD)
    desired = provision(state, CONFIG)
    assert desired.objects
    for found in desired.objects:
        manifest = json.loads(found.body)
        assert found.body == json.dumps(manifest, sort_keys=True, separators=(",", ":"))
        assert (found.api_version, found.kind, found.name) == (
            manifest["apiVersion"],
            manifest["kind"],
            manifest["metadata"]["name"],
        )
        assert found.namespace == manifest["metadata"]["namespace"]
    for found in status(state, CONFIG):
        assert found.body == json.dumps(
            json.loads(found.body), sort_keys=True, separators=(",", ":")
        )


def _listener_programmed(world: list[dict[str, Any]], programmed: Any = None) -> dict[str, Any]:
    [found] = [s for s in status(build_state(world), CONFIG, programmed) if s.kind == "Gateway"]
    [listener] = json.loads(found.body)["listeners"]
    [condition] = [c for c in listener["conditions"] if c["type"] == "Programmed"]
    return {k: condition[k] for k in ("status", "reason", "message")}


def test_a_listener_is_programmed_once_a_proxy_has_bound_its_port():
    world = [gateway_class(), gateway("edge", 80)]
    programmed = {"status": "True", "reason": "Programmed", "message": ""}
    assert _listener_programmed(world) == programmed
    assert _listener_programmed(world, {(EDGE, 30000)}) == programmed
    assert _listener_programmed(world, {(EDGE, 30001), ("app/other", 30000)}) == {
        "status": "False",
        "reason": "Pending",
        "message": "no proxy has bound port 30000 and acked this generation yet",
    }


def test_a_listener_without_a_free_internal_port_is_not_programmed():
    # a VIP Service of a Gateway that is gone still holds every port of the band: the listener
    # is refused (Accepted=False, PortUnavailable), so it is not programmed
    held = _owned(
        "Service",
        "old" + VIP_SUFFIX,
        CONFIG.namespace,
        "shared-vip",
        spec={"ports": [{"port": p - 29000, "targetPort": p} for p in PORT_BAND]},
    )
    assert _listener_programmed([gateway_class(), gateway("edge", 80), held]) == {
        "status": "False",
        "reason": "Invalid",
        "message": "the listener is not valid",
    }


def _dedicated(parameters_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Gateway app/edge with a proxy of its own, configured by ``parameters_spec``."""
    parameters = {
        "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
        "kind": "CoxswainGatewayParameters",
        "metadata": {"name": "own", "namespace": "app"},
        "spec": parameters_spec,
    }
    edge = gateway("edge", 8080)
    edge["spec"]["infrastructure"] = {
        "parametersRef": {
            "group": "gateway.coxswain-labs.dev",
            "kind": "CoxswainGatewayParameters",
            "name": "own",
        }
    }
    return [gateway_class(), parameters, edge]


def _autoscaler(autoscaling: Any) -> dict[str, Any]:
    desired = provision(build_state(_dedicated({"autoscaling": autoscaling})), CONFIG)
    [found] = [o for o in desired.objects if o.kind == "HorizontalPodAutoscaler"]
    spec: dict[str, Any] = json.loads(found.body)["spec"]
    return {k: spec[k] for k in ("minReplicas", "maxReplicas")}


def test_autoscaling_bounds_default_to_the_replicas_and_at_least_one():
    # offline input the CRD would refuse: no maxReplicas, or a minReplicas that is no number
    assert _autoscaler({}) == {"minReplicas": 1, "maxReplicas": 1}
    assert _autoscaler({"minReplicas": 0}) == {"minReplicas": 0, "maxReplicas": 1}
    assert _autoscaler({"minReplicas": "2"}) == {"minReplicas": "2", "maxReplicas": 1}
    assert _autoscaler({"minReplicas": 4}) == {"minReplicas": 4, "maxReplicas": 4}


def test_the_shared_analysis_gives_what_each_call_computes_alone():
    config = CompileConfig(namespace="elsewhere", shared_vip_service_type="ClusterIP")
    state = build_state(WORLD)
    model = analyse(state, config)
    assert status(state, config, model=model) == status(state, config)
    assert provision(state, config, model=model) == provision(state, config)


def test_a_parameters_reference_of_another_kind_is_refused_naming_its_group():
    edge = gateway("edge", 80)
    edge["spec"]["infrastructure"] = {
        "parametersRef": {"group": "", "kind": "ConfigMap", "name": "cfg"}
    }
    [found] = [
        s for s in status(build_state([gateway_class(), edge]), CONFIG) if s.kind == "Gateway"
    ]
    [accepted] = [c for c in json.loads(found.body)["conditions"] if c["type"] == "Accepted"]
    assert (accepted["status"], accepted["reason"]) == ("False", "InvalidParameters")
    assert accepted["message"].endswith(
        "core/ConfigMap cfg: only gateway.coxswain-labs.dev/CoxswainGatewayParameters is supported"
    )


def test_a_pod_template_without_object_metadata_is_refused_and_nothing_is_provisioned():
    state = build_state(_dedicated({"podTemplate": {"metadata": 7}}))
    desired = provision(state, CONFIG)
    assert (list(desired.objects), list(desired.diagnostics)) == ([], [])
    found = compile(state, SharedPool(), CONFIG).diagnostics
    assert [(d.key.kind if d.key else None, d.field, d.reason) for d in found] == [
        ("CoxswainGatewayParameters", "spec.podTemplate.metadata", "InvalidParameters"),
        ("Gateway", "spec.infrastructure.parametersRef", "InvalidParameters"),
    ]
