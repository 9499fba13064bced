"""Informers: a list-and-watch per resource, each keeping its objects raw (docs/architecture.md).

An informer lists its resource, then watches from the list's ``resourceVersion``; each event
replaces or removes one raw object and calls ``on_change``. A watch the server ends normally
(its ``timeoutSeconds``) is reopened from the last version seen (bookmarks keep it fresh); an
``ERROR`` event with 410 Gone (the version fell out of the server's history) or a broken
connection leads to a new list, after a jittered, growing delay when something failed (as
client-go's reflector does), so that a restarted API server is not met by every informer of
every controller at once.

The informer keeps no objects, only which exist and at which resourceVersion: each change
goes to the :class:`Sink` (the body, or None for a deletion), and the controller decodes it
there into its state (``compile.model.state.apply``), so that an object means the same whether
it came from a cluster or a file, and 10,000 routes are not held twice. A new list reports what
disappeared meanwhile and what changed: an item at the resourceVersion last handed on is the
same object (the API server changes the version on every write), so a resync of a large, quiet
cluster costs a comparison per object, not a decode. A list's items are compared with a checkpoint
every few milliseconds (:mod:`.pacing`), and a page's changes are handed on together, for the
sink to fold in off the event loop, so the first list of 15,000 Services does not hold the
loop that renews the Lease; and no full collection runs while a list does (:mod:`.heap`).

A list item or watch event whose JSON cannot be decoded (nested past
``json_bodies.MAX_BODY_DEPTH``) is logged, naming the object, and counted (``on_refused``); it
changes nothing, so the controller keeps the last good state of that object, and the other
objects are served as usual. A refused deletion still deletes, and an event too unreadable to
say which object it changed ends the watch for a new list.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol

import trio

from coxswain.compile.provision import MANAGED_BY
from coxswain.shell.backoff import Backoff
from coxswain.shell.control import heap, kinds
from coxswain.shell.control.json_bodies import Refused
from coxswain.shell.control.kube import ApiFailure, Kube, Resource, Unreachable, WatchEvent
from coxswain.shell.control.pacing import Pacer

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.shell.control.cluster_view import Change

__all__ = ["GATEWAY_API", "GATEWAY_API_OPTIONAL", "INFORMED", "PROVISIONING", "Informer", "Watched"]

log = logging.getLogger("coxswain.informers")

WATCH_SECONDS: Final = 300
PAGE: Final = 500  # objects per list page (client-go's reflector asks for as many)
BACKOFF: Final = (0.2, 30.0)


@dataclass(frozen=True, slots=True)
class Watched:
    """A resource to inform on, and an optional label selector."""

    resource: Resource
    label_selector: str = ""


_OWNED: Final = f"{MANAGED_BY[0]}={MANAGED_BY[1]}"
INFORMED: Final = (
    Watched(kinds.SERVICE),
    Watched(kinds.SECRET),
    Watched(kinds.NAMESPACE),
    Watched(kinds.CONFIG_MAP),
    Watched(kinds.ENDPOINT_SLICE),
    Watched(kinds.INGRESS),
    Watched(kinds.INGRESS_CLASS),
)
"""What Ingress needs: watched in every mode (whenever the resource is served)."""

GATEWAY_API: Final = (
    Watched(kinds.GATEWAY_CLASS),
    Watched(kinds.GATEWAY),
    Watched(kinds.HTTP_ROUTE),
    Watched(kinds.REFERENCE_GRANT),
)
"""The Gateway API resources (standard channel); full mode needs every one of them served."""

GATEWAY_API_OPTIONAL: Final = (
    Watched(kinds.LISTENER_SET),
    Watched(kinds.BACKEND_TLS_POLICY),
    Watched(kinds.GRPC_ROUTE),
    Watched(kinds.TLS_ROUTE),
    Watched(kinds.TCP_ROUTE),
    Watched(kinds.UDP_ROUTE),
)
"""Gateway API resources read in full mode when the cluster serves them: ListenerSet joined the
standard channel in v1.5, BackendTLSPolicy's v1 in v1.4, GRPCRoute's v1 in v1.1, TLSRoute's v1
in v1.5 and TCPRoute's and UDPRoute's v1 in v1.6, so a cluster with older CRDs, or without
GRPCRoute's, runs full mode without them."""

PROVISIONING: Final = (
    Watched(kinds.SERVICE_ACCOUNT, _OWNED),
    Watched(kinds.DEPLOYMENT, _OWNED),
    Watched(kinds.GATEWAY_PARAMETERS),
)
"""What provisioning Gateways reads (owned identities and proxies, parameters): watched unless
the Gateway API is disabled, so an Ingress-only installation needs no right on them."""


class Sink(Protocol):
    """Where an informer's changes go: the resource, ``(namespace, name)``, and the object (with
    ``kind`` and ``apiVersion`` filled in, which list items lack) or None when it is gone."""

    def event(self, resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        """One watch event's change."""

    async def page(self, resource: Resource, changes: list[Change]) -> None:
        """The changes a list page found, in order, together: the sink may fold them in off
        the event loop (``cluster_view.ClusterView.page``)."""


_CHANGES: Final = ("ADDED", "MODIFIED", "DELETED")
_KEPT: Final = "the last good state of it is kept"


class Informer:
    """The objects of one resource, followed by list and watch."""

    def __init__(
        self,
        kube: Kube,
        watched: Watched,
        sink: Sink,
        on_refused: Callable[[Resource], None],
    ) -> None:
        self.watched = watched
        # the resourceVersion of each object last handed on: a new list hands on only what
        # changed since (every write changes it), so a relist of an unchanged cluster is cheap
        self.versions: dict[tuple[str, str], str] = {}
        self.synced = trio.Event()
        self._kube = kube
        self._sink = sink
        self._on_refused = on_refused
        self._version = ""

    def _handed(self, key: tuple[str, str], body: dict[str, Any] | None) -> Change:
        """The change to hand on, its version noted."""
        resource = self.watched.resource
        if body is None:
            self.versions.pop(key, None)
        else:
            self.versions[key] = _version(body)
            body = {**_trimmed(body), "kind": resource.kind, "apiVersion": resource.api_version}
        return key, body

    def _emit(self, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        self._sink.event(self.watched.resource, *self._handed(key, body))

    def _refuse(self, refused: Refused, outcome: str) -> None:
        resource = self.watched.resource
        log.warning("%s %s; not decoded: %s", resource.kind, refused, outcome)
        self._on_refused(resource)

    async def run(self) -> NoReturn:
        """List, then watch, forever; ``synced`` is set after the first list."""
        backoff = Backoff(*BACKOFF)
        while True:
            try:
                with heap.quiet():
                    await self._list()
                backoff.reset()
                while await self._watch():
                    pass
            except (ApiFailure, Unreachable) as err:
                log.warning("%s: %s; listing again", self.watched.resource.plural, err)
                await backoff.wait()

    def _query(self) -> list[tuple[str, str]]:
        return (
            [("labelSelector", self.watched.label_selector)] if self.watched.label_selector else []
        )

    async def _list(self) -> None:
        """List in pages of ``PAGE`` (as client-go's reflector does): each page is decoded on
        its own, in the request's thread, so no decode of a whole resource holds the
        interpreter for long, and only one page of raw objects is held at a time."""
        seen: set[tuple[str, str]] = set()
        pacer = Pacer()
        token, version = "", ""
        while True:
            paging = [("limit", str(PAGE)), *([("continue", token)] if token else [])]
            listing = await self._kube.list(
                self.watched.resource.path(), query=[*self._query(), *paging]
            )
            version = version or listing.version
            for refused in listing.refused:
                self._refuse(refused, _KEPT)
                if (key := refused.key) is not None:
                    seen.add(key)
            changes: list[Change] = []
            for item in listing.items:
                if (key := _key(item)) is None:
                    continue
                seen.add(key)
                listed = _version(item)
                if not listed or self.versions.get(key) != listed:
                    changes.append(self._handed(key, item))
                await pacer.tick()
            if changes:
                await self._sink.page(self.watched.resource, changes)
            if not (token := listing.next):
                break
        gone = [self._handed(key, None) for key in self.versions.keys() - seen]
        if gone:
            await self._sink.page(self.watched.resource, gone)
        self._version = version
        self.synced.set()

    def _skipped(self, refused: Refused) -> bool:
        """Log and count a watch event that could not be decoded; when it says which object
        it changed, and at which version, move past it (a deletion still deletes) and say
        True."""
        key = refused.key
        if refused.event not in _CHANGES or not refused.version or key is None:
            self._refuse(refused, "which object it changed is unknown, listing again")
            return False
        self._version = refused.version
        if refused.event == "DELETED":
            self._refuse(refused, "its deletion is applied")
            self._emit(key, None)
        else:
            self._refuse(refused, _KEPT)
        return True

    async def _watch(self) -> bool:
        """One watch; True when it ended normally and may be reopened from where it was."""
        expired = False

        async def on_event(event: WatchEvent) -> bool:
            nonlocal expired
            if isinstance(event, Refused):
                if self._skipped(event):
                    return True
                expired = True
                return False
            kind, body = event.get("type"), event.get("object")
            if not isinstance(body, dict):
                body = {}
            if kind == "ERROR":  # 410 Gone, in practice: the history no longer reaches back
                log.info("%s: watch ended: %s", self.watched.resource.plural, body.get("message"))
                expired = True
                return False
            version = (body.get("metadata") or {}).get("resourceVersion")
            if version:
                self._version = str(version)
            if kind == "BOOKMARK" or (key := _key(body)) is None:
                return True
            self._emit(key, None if kind == "DELETED" else body)
            return True

        await self._kube.watch(
            self.watched.resource.path(),
            query=self._query(),
            resource_version=self._version,
            timeout_seconds=WATCH_SECONDS,
            on_event=on_event,
        )
        return not expired


_UNREAD: Final = ("kubectl.kubernetes.io/last-applied-configuration",)


def _trimmed(body: dict[str, Any]) -> dict[str, Any]:
    """The object without what nothing here reads and what weighs most: ``managedFields``
    and kubectl's copy of the last applied manifest."""
    meta = body.get("metadata")
    if not isinstance(meta, dict) or not ("managedFields" in meta or _has_unread(meta)):
        return body
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    if isinstance(annotations := meta.get("annotations"), dict):
        meta["annotations"] = {k: v for k, v in annotations.items() if k not in _UNREAD}
    return {**body, "metadata": meta}


def _has_unread(meta: dict[str, Any]) -> bool:
    annotations = meta.get("annotations")
    return isinstance(annotations, dict) and any(k in annotations for k in _UNREAD)


def _version(body: dict[str, Any]) -> str:
    """The object's resourceVersion ("" when it has none: always handed on)."""
    meta = body.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""


def _key(body: dict[str, Any]) -> tuple[str, str] | None:
    meta = body.get("metadata") or {}
    name = meta.get("name")
    return (str(meta.get("namespace") or ""), str(name)) if name else None
