"""StatusWriter remembers what it settled only for objects that still exist: a controller that
runs for months among routes that come and go must not keep one entry per object ever seen."""

from __future__ import annotations

import datetime
import json

import trio

from coxswain.compile.status import ObjectStatus
from coxswain.shell.control.status_writer import StatusWriter

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
