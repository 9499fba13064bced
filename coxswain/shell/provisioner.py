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

from coxswain.shell.kube import APPLY_PATCH, ApiFailure, Kube, Resource, Unreachable

if TYPE_CHECKING:
    from coxswain.compile.provision import DesiredObjects

__all__ = ["FIELD_MANAGER", "PROVISIONED", "Provisioner"]

log = logging.getLogger("coxswain.provision")

FIELD_MANAGER: Final = "coxswain-controller"
PROVISIONED: Final = {
    "Service": Resource("", "v1", "services", "Service", True),
    "ServiceAccount": Resource("", "v1", "serviceaccounts", "ServiceAccount", True),
    "Secret": Resource("", "v1", "secrets", "Secret", True),
    "Deployment": Resource("apps", "v1", "deployments", "Deployment", True),
    "HorizontalPodAutoscaler": Resource(
        "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True
    ),
    "PodDisruptionBudget": Resource(
        "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True
    ),
}


class Provisioner:
    """Applies desired objects and deletes unwanted ones; remembers what it applied."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self._applied: dict[tuple[str, str, str], str] = {}
        self.applies = 0
        self.deletes = 0
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
        self.applies += 1
        return True

    async def reconcile(self, desired: DesiredObjects) -> None:
        """Apply every desired object, then delete what is no longer wanted."""
        for obj in desired.objects:
            await self.apply(obj.kind, obj.namespace, obj.name, obj.body)
        for key in desired.deletions:
            resource = PROVISIONED.get(key.kind)
            if resource is None:
                continue
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
                    continue
            except Unreachable as err:
                log.warning("delete %s: %s", key, err)
                self.failures += 1
                continue
            self._applied.pop((key.kind, key.namespace, key.name), None)
            self.deletes += 1
            log.info("deleted %s", key)
