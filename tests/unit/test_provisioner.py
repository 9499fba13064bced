"""The provisioner lists owned autoscalers once (those an earlier controller left), then
follows what it applies and deletes itself, rather than listing them at every round."""

from __future__ import annotations

from typing import Any

import trio
from pyrsistent import pvector

from coxswain.compile.provision import DesiredObject, DesiredObjects
from coxswain.shell.control.kube import Unreachable
from coxswain.shell.control.provisioner import Provisioner

HPAS = "/apis/autoscaling/v2/horizontalpodautoscalers"


class _Kube:
    """Answers like the API server and records each request as (method, path)."""

    def __init__(self, owned: list[tuple[str, str]]) -> None:
        self.owned = owned
        self.calls: list[tuple[str, str]] = []
        self.unreachable = False

    async def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.calls.append((method, path))
        if self.unreachable:
            raise Unreachable("connection refused")
        if method == "GET":
            items = [{"metadata": {"namespace": ns, "name": name}} for ns, name in self.owned]
            return {"items": items}
        return {}


def _hpa(name: str) -> DesiredObject:
    return DesiredObject(
        api_version="autoscaling/v2",
        kind="HorizontalPodAutoscaler",
        namespace="app",
        name=name,
        body=f'{{"name":"{name}"}}',
    )


def _desired(*names: str) -> DesiredObjects:
    return DesiredObjects(
        objects=pvector(_hpa(name) for name in names), deletions=pvector(), diagnostics=pvector()
    )


def _path(name: str) -> str:
    return f"/apis/autoscaling/v2/namespaces/app/horizontalpodautoscalers/{name}"


def test_owned_autoscalers_are_listed_once_then_followed() -> None:
    kube = _Kube(owned=[("app", "left-over"), ("app", "kept")])
    provisioner = Provisioner(kube)  # type: ignore[arg-type]

    async def main() -> None:
        kube.unreachable = True  # the first list fails: nothing deleted, tried again
        await provisioner.reconcile(_desired(), autoscalers=True)
        assert not [c for c in kube.calls if c[0] == "DELETE"]
        kube.unreachable = False
        kube.calls.clear()
        await provisioner.reconcile(_desired("kept", "new"), autoscalers=True)
        assert ("GET", HPAS) in kube.calls
        assert ("DELETE", _path("left-over")) in kube.calls
        kube.calls.clear()
        for _ in range(3):  # nothing changes: no list, no delete
            await provisioner.reconcile(_desired("kept", "new"), autoscalers=True)
        assert kube.calls == []
        await provisioner.reconcile(_desired("kept"), autoscalers=True)  # "new" dropped
        assert kube.calls == [("DELETE", _path("new"))]

    trio.run(main)


def test_the_autoscaler_of_a_refused_gateway_is_held() -> None:
    """A Gateway refused for invalid parameters keeps what runs for it: its autoscaler is no
    longer desired, yet not deleted while it is held."""
    kube = _Kube(owned=[("app", "edge")])
    provisioner = Provisioner(kube)  # type: ignore[arg-type]

    async def main() -> None:
        held = DesiredObjects(
            objects=pvector(),
            deletions=pvector(),
            diagnostics=pvector(),
            held=pvector([("app", "edge")]),
        )
        await provisioner.reconcile(held, autoscalers=True)
        assert not [c for c in kube.calls if c[0] == "DELETE"]
        await provisioner.reconcile(_desired(), autoscalers=True)  # no longer held: deleted
        assert ("DELETE", _path("edge")) in kube.calls

    trio.run(main)
