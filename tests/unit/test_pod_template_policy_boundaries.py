"""What a pod template may set, at its edges (``compile.pod_template_policy``): each field of
the wrong shape is named with its path and the exact words of why."""

from __future__ import annotations

from coxswain.compile.pod_template_policy import forbidden_fields


def test_each_wrong_shape_is_named_with_its_path_and_why() -> None:
    template = {
        "spec": {
            "priorityClassName": {"high": True},
            "terminationGracePeriodSeconds": 30,
            "nodeSelector": {"zone": 1, "disk": "ssd"},
            "tolerations": {"key": "x"},
            "containers": {"name": "app"},
            "affinity": {"anything": ["goes"]},
        }
    }
    assert forbidden_fields(template) == [
        ("spec.podTemplate.spec.priorityClassName", "must be a single value"),
        ("spec.podTemplate.spec.nodeSelector[zone]", "must be a string"),
        ("spec.podTemplate.spec.tolerations", "must be a list"),
        ("spec.podTemplate.spec.containers", "must be a list"),
    ]
