"""compile.podspec: pod security re-asserted and strategic merge, with exact results.

The goldens (tests/golden/cases/provision/provision-pod-security-*) show one risky template;
these pin each rule alone: every flag and field ``secure_pod`` removes or overrides and the
sentence it reports, and that ``strategic_merge`` never shares structure with its inputs.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from coxswain.compile.podspec import secure_pod, strategic_merge

SECURE_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
}
POD_CONTEXT = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def test_an_empty_spec_gets_the_pod_context_only():
    assert secure_pod({}, bind_low_ports=False) == ({"securityContext": POD_CONTEXT}, [])


@pytest.mark.parametrize("flag", ["hostNetwork", "hostPID", "hostIPC"])
def test_host_namespaces_are_removed_and_reported(flag):
    spec, dropped = secure_pod({flag: True}, bind_low_ports=False)
    assert (spec, dropped) == ({"securityContext": POD_CONTEXT}, [f"spec.{flag}"])
    assert secure_pod({flag: False}, bind_low_ports=False) == ({"securityContext": POD_CONTEXT}, [])


@pytest.mark.parametrize(
    ("context", "kept", "dropped"),
    [
        ({"runAsNonRoot": False}, {}, ["spec.securityContext.runAsNonRoot: false"]),
        ({"runAsUser": 0}, {}, ["spec.securityContext.runAsUser: 0"]),
        ({"runAsUser": 1000, "fsGroup": 2}, {"runAsUser": 1000, "fsGroup": 2}, []),
        ({"seccompProfile": {"type": "Localhost"}}, {"seccompProfile": {"type": "Localhost"}}, []),
        ("not a map", {}, []),
    ],
)
def test_the_pod_context_runs_as_non_root(context, kept, dropped):
    spec, found = secure_pod({"securityContext": context}, bind_low_ports=False)
    assert spec == {"securityContext": {**POD_CONTEXT, **kept}}
    assert found == dropped


@pytest.mark.parametrize(
    ("context", "dropped"),
    [
        ({"privileged": True}, ["privileged"]),
        ({"privileged": False}, []),
        ({"allowPrivilegeEscalation": True}, ["allowPrivilegeEscalation"]),
        ({"readOnlyRootFilesystem": False}, ["readOnlyRootFilesystem: false"]),
        ({"runAsUser": 0}, ["runAsUser: 0"]),
        (
            {"capabilities": {"add": ["NET_ADMIN", "SYS_TIME"]}},
            ["capabilities.add NET_ADMIN", "capabilities.add SYS_TIME"],
        ),
    ],
)
def test_each_container_context_is_secured_and_what_went_is_reported(context, dropped):
    spec, found = secure_pod(
        {"containers": [{"name": "c", "securityContext": context}]}, bind_low_ports=False
    )
    assert spec["containers"] == [{"name": "c", "securityContext": SECURE_CONTEXT}]
    assert found == [f"spec.containers[c].securityContext.{d}" for d in dropped]


def test_a_container_keeps_its_user_when_it_is_not_root():
    spec, found = secure_pod(
        {"containers": [{"securityContext": {"runAsUser": 1}}]}, bind_low_ports=False
    )
    assert spec["containers"] == [{"securityContext": {"runAsUser": 1, **SECURE_CONTEXT}}]
    assert found == []


@pytest.mark.parametrize(
    ("added", "low", "capabilities", "dropped"),
    [
        ([], True, {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}, []),
        (["NET_BIND_SERVICE"], False, {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}, []),
        (["NET_BIND_SERVICE"], True, {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}, []),
        ("NET_ADMIN", False, {"drop": ["ALL"]}, ["N", "E", "T", "_", "A", "D", "M", "I", "N"]),
    ],
)
def test_only_net_bind_service_may_be_added_and_only_low_ports_add_it(
    added, low, capabilities, dropped
):
    container = {"securityContext": {"capabilities": {"add": added}}}
    spec, found = secure_pod({"initContainers": [container]}, bind_low_ports=low)
    assert spec["initContainers"][0]["securityContext"]["capabilities"] == capabilities
    assert found == [
        f"spec.initContainers[0].securityContext.capabilities.add {c}" for c in dropped
    ]


def test_host_ports_are_removed_and_named_by_their_container_port():
    ports = [{"containerPort": 80, "hostPort": 80}, {"containerPort": 81}, "junk"]
    spec, found = secure_pod({"containers": [{"name": "c", "ports": ports}]}, bind_low_ports=False)
    assert spec["containers"][0]["ports"] == [{"containerPort": 80}, {"containerPort": 81}, "junk"]
    assert found == ["spec.containers[c].ports[80].hostPort"]


def test_containers_are_named_by_name_or_index_and_init_containers_come_first():
    spec = {
        "containers": [{"securityContext": {"privileged": True}}, "junk"],
        "initContainers": [{"name": "i", "securityContext": {"privileged": True}}],
    }
    _, found = secure_pod(spec, bind_low_ports=False)
    assert found == [
        "spec.initContainers[i].securityContext.privileged",
        "spec.containers[0].securityContext.privileged",
    ]


def test_secure_pod_leaves_its_input_alone():
    spec = {"containers": [{"name": "c", "securityContext": {"privileged": True}}], "hostPID": True}
    before = copy.deepcopy(spec)
    secure_pod(spec, bind_low_ports=True)
    assert spec == before


def test_strategic_merge_merges_named_items_and_replaces_other_lists():
    base = {
        "containers": [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "args": ["1", "2"],
        "keep": {"x": 1},
    }
    patch = {
        "containers": [
            {"name": "a", "env": [{"name": "E", "value": "2"}, {"name": "F", "value": "3"}]},
            {"name": "b", "image": "y"},
            "raw",
        ],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k"}],
        "args": ["3"],
        "new": [1],
    }
    assert strategic_merge(base, patch) == {
        "containers": [
            {
                "name": "a",
                "image": "x",
                "env": [{"name": "E", "value": "2"}, {"name": "F", "value": "3"}],
            },
            {"name": "b", "image": "y"},
            "raw",
        ],
        "tolerations": [
            {"key": "k", "operator": "Exists", "effect": "NoExecute"},
            {"key": "k"},
        ],
        "args": ["3"],
        "keep": {"x": 1},
        "new": [1],
    }


def test_a_scalar_or_map_patch_replaces_what_it_does_not_merge_with():
    assert strategic_merge({"a": 1}, [1]) == [1]
    assert strategic_merge([1], {"a": 1}) == {"a": 1}
    assert strategic_merge({"a": {"b": 1}}, {"a": 2}) == {"a": 2}


def test_strategic_merge_copies_the_patch_and_the_merged_lists():
    base: dict[str, Any] = {
        "containers": [{"name": "a", "env": [{"name": "E"}]}],
        "m": {"x": [1]},
        "args": [1],
    }
    patch: dict[str, Any] = {
        "containers": [[["deep"]], {"name": "b", "env": [{"name": "F"}]}, {"name": "a"}],
        "n": {"y": [2]},
        "volumes": [{"name": "v", "x": {"z": 1}}],
        "args": [[3]],
    }
    before = copy.deepcopy((base, patch))
    merged = strategic_merge(base, patch)
    assert merged["containers"] == [
        {"name": "a", "env": [{"name": "E"}]},
        [["deep"]],
        {"name": "b", "env": [{"name": "F"}]},
    ]
    merged["containers"][0]["env"][0]["name"] = "changed"
    merged["containers"][1][0].append("changed")
    merged["containers"][2]["env"][0]["name"] = "changed"
    merged["n"]["y"].append(9)
    merged["volumes"][0]["x"]["z"] = 9
    merged["args"][0].append(9)
    assert (base, patch) == before


def test_added_capabilities_that_are_not_a_list_are_all_dropped():
    container = {"securityContext": {"capabilities": {"add": {"NET_BIND_SERVICE": True}}}}
    spec, found = secure_pod({"containers": [container]}, bind_low_ports=False)
    assert spec["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert found == ["spec.containers[0].securityContext.capabilities.add NET_BIND_SERVICE"]
