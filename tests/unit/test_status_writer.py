"""StatusWriter remembers what it settled only for objects that still exist: a controller that
runs for months among routes that come and go must not keep one entry per object ever seen."""

from __future__ import annotations

import datetime
import json

import trio

from coxswain.compile.status import ObjectStatus
from coxswain.shell.control.status_writer import StatusWriter, merged_status

NOW = datetime.datetime(2026, 12, 3, tzinfo=datetime.UTC)
BODY = {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}


def _desired(name: str) -> ObjectStatus:
    return ObjectStatus(
        api_version="networking.k8s.io/v1",
        kind="Ingress",
        namespace="app",
        name=name,
        generation=1,
        body=json.dumps(BODY, sort_keys=True),
    )


def test_objects_gone_from_the_cluster_are_forgotten() -> None:
    # the statuses already hold what is desired: nothing is patched, so no API is needed
    writer = StatusWriter(kube=None, controller="coxswain.dev/controller")  # type: ignore[arg-type]

    async def main() -> None:
        for round_ in range(50):  # each round, one Ingress replaced by a new one
            name = f"web-{round_}"
            written = await writer.write(
                [_desired(name)], {("Ingress", "app", name): BODY}, now=NOW
            )
            assert written == 0
            assert writer.remembered == 1

    trio.run(main)


OURS = "coxswain-labs.dev/gateway-controller"
STAMP = "2026-12-03T00:00:00Z"


def _ancestor(name: str, controller: str, status: str = "True", **extra: str) -> dict[str, object]:
    condition = {"type": "Accepted", "status": status, "reason": "Accepted", **extra}
    return {
        "ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name},
        "controllerName": controller,
        "conditions": [condition],
    }


def test_another_controllers_ancestors_are_kept_and_ours_replaced() -> None:
    theirs = _ancestor("gw", "example.com/other", lastTransitionTime="2025-01-01T00:00:00Z")
    old_ours = _ancestor("stale", OURS, lastTransitionTime="2025-01-01T00:00:00Z")
    current = {"ancestors": [theirs, old_ours]}
    desired = {"ancestors": [_ancestor("edge", OURS)]}
    merged = merged_status(desired, current, controller=OURS, now=STAMP)
    assert merged == {
        "ancestors": [theirs, _ancestor("edge", OURS, lastTransitionTime=STAMP)],
    }


def test_a_condition_keeps_its_time_until_its_status_changes() -> None:
    old = _ancestor("edge", OURS, lastTransitionTime="2025-01-01T00:00:00Z")
    same = merged_status(
        {"ancestors": [_ancestor("edge", OURS)]}, {"ancestors": [old]}, controller=OURS, now=STAMP
    )
    assert same == {"ancestors": [old]}
    flipped = merged_status(
        {"ancestors": [_ancestor("edge", OURS, "False")]},
        {"ancestors": [old]},
        controller=OURS,
        now=STAMP,
    )
    assert flipped["ancestors"][0]["conditions"][0]["lastTransitionTime"] == STAMP


def test_an_empty_list_of_ours_is_not_added_to_an_object_without_one() -> None:
    assert merged_status({"ancestors": []}, {}, controller=OURS, now=STAMP) == {}
    assert merged_status({"ancestors": []}, {"ancestors": []}, controller=OURS, now=STAMP) == {
        "ancestors": []
    }
    stale = {"ancestors": [_ancestor("edge", OURS)]}
    assert merged_status({"ancestors": []}, stale, controller=OURS, now=STAMP) == {"ancestors": []}
