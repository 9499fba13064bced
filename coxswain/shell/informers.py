"""Informers: one list-and-watch per resource, each keeping its objects raw (ARCHITECTURE §2).

An informer lists its resource, then watches from the list's ``resourceVersion``; each event
replaces or removes one raw object and calls ``on_change``. A watch the server ends normally
(its ``timeoutSeconds``) is reopened from the last version seen (bookmarks keep it fresh); an
``ERROR`` event with 410 Gone (the version fell out of the server's history) or a broken
connection leads to a new list, after a jittered, growing delay when something failed (as
client-go's reflector does), so that a restarted API server is not met by every informer of
every controller at once.

The objects stay raw dicts: the compiler decodes them (``compile.build_state``), so that an
object means the same whether it came from a cluster or a file.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NoReturn

import trio

from coxswain.shell.kube import ApiFailure, Kube, Resource, Unreachable

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["GATEWAY_API", "INFORMED", "PROVISIONING", "Informer", "Watched"]

log = logging.getLogger("coxswain.informers")

WATCH_SECONDS: Final = 300
BACKOFF: Final = (0.2, 30.0)


@dataclass(frozen=True, slots=True)
class Watched:
    """A resource to inform on, and an optional label selector."""

    resource: Resource
    label_selector: str = ""


_OWNED: Final = "app.kubernetes.io/managed-by=coxswain"
INFORMED: Final = (
    Watched(Resource("", "v1", "services", "Service", True)),
    Watched(Resource("", "v1", "secrets", "Secret", True)),
    Watched(Resource("", "v1", "namespaces", "Namespace", False)),
    Watched(Resource("", "v1", "configmaps", "ConfigMap", True)),
    Watched(Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)),
    Watched(Resource("networking.k8s.io", "v1", "ingresses", "Ingress", True)),
    Watched(Resource("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False)),
)
"""What Ingress needs: watched in every mode (whenever the resource is served)."""

GATEWAY_API: Final = (
    Watched(Resource("gateway.networking.k8s.io", "v1", "gatewayclasses", "GatewayClass", False)),
    Watched(Resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway", True)),
    Watched(Resource("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", True)),
    Watched(
        Resource("gateway.networking.k8s.io", "v1beta1", "referencegrants", "ReferenceGrant", True)
    ),
)
"""The Gateway API resources (standard channel); full mode needs every one of them served."""

PROVISIONING: Final = (
    Watched(Resource("", "v1", "serviceaccounts", "ServiceAccount", True), _OWNED),
    Watched(Resource("apps", "v1", "deployments", "Deployment", True), _OWNED),
    Watched(
        Resource(
            "gateway.coxswain-labs.dev",
            "v1alpha1",
            "coxswaingatewayparameters",
            "CoxswainGatewayParameters",
            True,
        )
    ),
)
"""What provisioning Gateways reads (owned identities and proxies, parameters): watched unless
the Gateway API is disabled, so an Ingress-only installation needs no right on them."""


class Informer:
    """The objects of one resource, kept current by list and watch."""

    def __init__(self, kube: Kube, watched: Watched, on_change: Callable[[], None]) -> None:
        self.watched = watched
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.synced = trio.Event()
        self.relists = 0
        self._kube = kube
        self._on_change = on_change
        self._version = ""

    def bodies(self) -> Iterator[dict[str, Any]]:
        """Every object, with ``kind`` and ``apiVersion`` filled (list items lack them)."""
        resource = self.watched.resource
        for body in self.objects.values():
            yield {**body, "kind": resource.kind, "apiVersion": resource.api_version}

    async def run(self) -> NoReturn:
        """List, then watch, forever; ``synced`` is set after the first list."""
        delay = BACKOFF[0]
        while True:
            try:
                await self._list()
                delay = BACKOFF[0]
                while await self._watch():
                    pass
            except (ApiFailure, Unreachable) as err:
                log.warning("%s: %s; listing again", self.watched.resource.plural, err)
                await trio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, BACKOFF[1])

    def _query(self) -> list[tuple[str, str]]:
        return (
            [("labelSelector", self.watched.label_selector)] if self.watched.label_selector else []
        )

    async def _list(self) -> None:
        answer = await self._kube.request("GET", self.watched.resource.path(), query=self._query())
        items = answer.get("items") or []
        self.objects = {key: item for item in items if (key := _key(item)) is not None}
        self._version = str((answer.get("metadata") or {}).get("resourceVersion") or "")
        self.relists += 1
        self.synced.set()
        self._on_change()

    async def _watch(self) -> bool:
        """One watch; True when it ended normally and may be reopened from where it was."""
        expired = False

        async def on_event(event: dict[str, Any]) -> bool:
            nonlocal expired
            kind, body = event.get("type"), event.get("object") or {}
            if kind == "ERROR":  # 410 Gone, in practice: the history no longer reaches back
                log.info("%s: watch ended: %s", self.watched.resource.plural, body.get("message"))
                expired = True
                return False
            version = (body.get("metadata") or {}).get("resourceVersion")
            if version:
                self._version = str(version)
            if kind == "BOOKMARK" or (key := _key(body)) is None:
                return True
            if kind == "DELETED":
                self.objects.pop(key, None)
            else:
                self.objects[key] = body
            self._on_change()
            return True

        await self._kube.watch(
            self.watched.resource.path(),
            query=self._query(),
            resource_version=self._version,
            timeout_seconds=WATCH_SECONDS,
            on_event=on_event,
        )
        return not expired


def _key(body: dict[str, Any]) -> tuple[str, str] | None:
    meta = body.get("metadata") or {}
    name = meta.get("name")
    return (str(meta.get("namespace") or ""), str(name)) if name else None
