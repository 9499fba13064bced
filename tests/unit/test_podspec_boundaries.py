"""compile.podspec: the merge and the securing of a pod spec modify neither input, and share
no part with them (the provisioned object is edited afterwards), at any depth."""

from __future__ import annotations

import copy
from typing import Any

from coxswain.compile.podspec import secure_pod, strategic_merge


def _scribble(value: Any) -> None:
    """Change every dict and list inside ``value``, in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _scribble(item)
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")


BASE: dict[str, Any] = {
    "containers": [
        {"name": "proxy", "ports": [{"containerPort": 8080, "extra": {"a": 1}}]},
        {"name": "kept", "env": [{"name": "A", "valueFrom": {"x": [1]}}]},
    ],
    "args": ["--a"],
    "nodeSelector": {"zone": "a"},
}
PATCH: dict[str, Any] = {
    "containers": [
        ["not", {"an": "object"}],
        {"name": "proxy", "ports": [{"containerPort": 9090, "extra": {"b": [2]}}]},
        {"name": "added", "env": [{"name": "B", "valueFrom": {"y": [3]}}]},
    ],
    "args": [["--b"]],
    "affinity": {"nodeAffinity": {"terms": [{"k": "v"}]}},
    "nodeSelector": "replaced",
}


def test_a_merge_keeps_every_entry_and_shares_nothing_with_its_inputs() -> None:
    base, patch = copy.deepcopy(BASE), copy.deepcopy(PATCH)
    merged = strategic_merge(base, patch)
    assert merged == {
        "containers": [
            {
                "name": "proxy",
                "ports": [
                    {"containerPort": 8080, "extra": {"a": 1}},
                    {"containerPort": 9090, "extra": {"b": [2]}},
                ],
            },
            {"name": "kept", "env": [{"name": "A", "valueFrom": {"x": [1]}}]},
            ["not", {"an": "object"}],
            {"name": "added", "env": [{"name": "B", "valueFrom": {"y": [3]}}]},
        ],
        "args": [["--b"]],
        "affinity": {"nodeAffinity": {"terms": [{"k": "v"}]}},
        "nodeSelector": "replaced",
    }
    _scribble(merged)
    assert (base, patch) == (BASE, PATCH)


def test_securing_a_pod_leaves_the_spec_it_was_given_as_it_was() -> None:
    spec = copy.deepcopy(BASE)
    secured = secure_pod(spec, service_account="proxy", lowest_port=80)
    assert secured["serviceAccountName"] == "proxy"
    assert spec == BASE
