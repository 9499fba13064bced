"""Owning objects: server-side apply of what ``compile.provision`` desires, and pruning.

Every desired object is applied with field manager ``coxswain-controller`` and ``force``
(the controller is the one owner of what it provisions; a user's ``kubectl edit`` of an owned
field is put back, as Envoy Gateway and Contour do). An object is applied again only when its
desired manifest changed since the last successful apply, so a resync writes nothing; the
first round after a start applies everything once (server-side apply of an unchanged manifest
is a no-op on the server). Deletions are the objects ``provision`` lists: owned (labelled
``app.kubernetes.io/managed-by=coxswain``) and no longer desired, minus those a mode switch
still needs, so a Gateway moving between the shared pool and a dedicated proxy is never
unserved.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.provision import MANAGED_BY
from coxswain.shell.control import kinds
from coxswain.shell.control.kube import APPLY_PATCH, ApiFailure, Kube, Resource, Unreachable

if TYPE_CHECKING:
    from coxswain.compile.provision import DesiredObjects

__all__ = ["FIELD_MANAGER", "PROVISIONED", "Provisioner"]

log = logging.getLogger("coxswain.provision")

FIELD_MANAGER: Final = "coxswain-controller"
PROVISIONED: Final = {
    resource.kind: resource
    for resource in (
        kinds.SERVICE,
        kinds.SERVICE_ACCOUNT,
        kinds.SECRET,
        kinds.DEPLOYMENT,
        kinds.HORIZONTAL_POD_AUTOSCALER,
        kinds.POD_DISRUPTION_BUDGET,
    )
}
_HPA: Final = kinds.HORIZONTAL_POD_AUTOSCALER


class Provisioner:
    """Applies desired objects and deletes unwanted ones; remembers what it applied."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self._applied: dict[tuple[str, str, str], str] = {}
        # (namespace, name) of the owned autoscalers: listed once, then followed by what this
        # process applies and deletes (None until the list succeeded)
        self._autoscalers: set[tuple[str, str]] | None = None
        self.failures = 0  # API calls that failed: the controller retries at a next round

    async def apply(self, kind: str, namespace: str, name: str, body: str) -> bool:
        """Apply one manifest (JSON text) unless it is the one applied last; True when it was
        written. Failures are logged and retried at the next round."""
        key = (kind, namespace, name)
        if self._applied.get(key) == body or (resource := PROVISIONED.get(kind)) is None:
            return False
        try:
            await self._kube.request(
                "PATCH",
                resource.path(namespace, name),
                query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
                body=body,
                content_type=APPLY_PATCH,
            )
        except (ApiFailure, Unreachable) as err:
            log.warning("apply %s %s/%s: %s", kind, namespace, name, err)
            self.failures += 1
            return False
        self._applied[key] = body
        return True

    async def reconcile(self, desired: DesiredObjects, *, autoscalers: bool = False) -> None:
        """Apply every desired object, then delete what is no longer wanted. With
        ``autoscalers``, also the owned HorizontalPodAutoscalers no longer desired (a Gateway's
        parameters dropped ``autoscaling``), except those of refused Gateways
        (``desired.held``): the compiler's state does not hold them, so they are listed, once
        (those a controller before this one left), and followed after that by what this one
        applies; the leader is the only writer of owned objects."""
        for obj in desired.objects:
            await self.apply(obj.kind, obj.namespace, obj.name, obj.body)
        deletions = list(desired.deletions)
        if autoscalers:
            if self._autoscalers is None:
                owned = await self._owned(_HPA)
                self._autoscalers = set(owned) if owned is not None else None
            wanted = {(o.namespace, o.name) for o in desired.objects if o.kind == _HPA.kind}
            known = (self._autoscalers or set()) | wanted
            unwanted = known - wanted - set(desired.held)
            deletions += [ObjectKey(_HPA.kind, *key) for key in sorted(unwanted)]
            if self._autoscalers is not None:
                self._autoscalers = known
        for key in deletions:
            await self.delete(key)

    async def _owned(self, resource: Resource) -> list[tuple[str, str]] | None:
        """``(namespace, name)`` of every object of ``resource`` labelled as ours; None when
        the list failed."""
        try:
            answer = await self._kube.request(
                "GET",
                resource.path(),
                query=[("labelSelector", f"{MANAGED_BY[0]}={MANAGED_BY[1]}")],
            )
        except (ApiFailure, Unreachable) as err:
            log.warning("list %s: %s", resource.plural, err)
            self.failures += 1
            return None
        return [
            (str(meta.get("namespace") or ""), str(meta["name"]))
            for item in answer.get("items") or []
            if "name" in (meta := item.get("metadata") or {})
        ]

    async def delete(self, key: ObjectKey) -> None:
        """Delete one owned object (gone already is fine); failures are logged and counted."""
        resource = PROVISIONED.get(key.kind)
        if resource is not None:
            try:
                await self._kube.request(
                    "DELETE",
                    resource.path(key.namespace, key.name),
                    query=[("propagationPolicy", "Background")],
                )
            except ApiFailure as err:
                if err.status != 404:
                    log.warning("delete %s: %s", key, err)
                    self.failures += 1
                    return
            except Unreachable as err:
                log.warning("delete %s: %s", key, err)
                self.failures += 1
                return
            self._applied.pop((key.kind, key.namespace, key.name), None)
            if key.kind == _HPA.kind and self._autoscalers is not None:
                self._autoscalers.discard((key.namespace, key.name))
            log.info("deleted %s", key)
