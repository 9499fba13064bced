"""The cluster as the controller sees it, kept current one informer event at a time.

Each event is decoded once, when it arrives, and folded into the immutable ``ClusterState``
with the compiler's own ``apply``: a reconcile round then starts from a state that is already
built, instead of decoding every object again (at 10,000 routes that rebuild was a quarter of
a round, and the raw objects it needed were 40 MB held beside the state). Kept raw beside the
state: only what the shell itself reads, the current ``status`` of the objects whose status it
writes and the proxies' certificate Secrets.

A body the decoder cannot read as an object (no kind or name) replaces nothing and is logged;
objects of kinds the compiler does not read are ignored.

The view also keeps the keys of the objects its events changed since the last ``take``: a
round hands them to ``compile.memo.CompileMemo.changed``, so that finding what changed costs
what the change costs, not a comparison of every table of two states. After every
``heap.BULK`` events folded in, what is alive is frozen (:mod:`.heap`): a status written by a
round and watched back changes no state, yet its body stays, one per written object.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from coxswain.compile import ClusterState
from coxswain.compile.model.decode import Decoded, Malformed, decode_object
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.state import Deleted, Upserted, apply
from coxswain.compile.provision import ROLE
from coxswain.shell.control import heap
from coxswain.shell.control.cluster_ca import CERTIFICATE_ROLE
from coxswain.shell.control.status_writer import STATUS_RESOURCES
from coxswain.shell.offload import offload

if TYPE_CHECKING:
    from coxswain.shell.control.kube import Resource

__all__ = ["Change", "ClusterView"]

log = logging.getLogger("coxswain.controller")


Change = tuple[tuple[str, str], "dict[str, Any] | None"]
"""One object's change, as informers hand it on: ``(namespace, name)`` and the body or None."""


class ClusterView:
    """The decoded state, the written kinds' current status, and the certificate Secrets."""

    def __init__(self) -> None:
        self.state = ClusterState()
        self.statuses: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.certificates: dict[tuple[str, str], dict[str, Any]] = {}
        self._base = self.state
        self._changed: set[ObjectKey] = set()
        self._unfrozen = 0  # events folded in since what is alive was last frozen
        self._paging = trio.Lock()
        self._deferred: list[tuple[Resource, tuple[str, str], dict[str, Any] | None]] | None = None

    def take(self) -> tuple[ClusterState, ClusterState, frozenset[ObjectKey]]:
        """The state of the last ``take`` (or the empty state), the state now, and the keys of
        the objects changed between the two; the next ``take`` starts from now."""
        taken = (self._base, self.state, frozenset(self._changed))
        self._base = self.state
        self._changed.clear()
        return taken

    def event(self, resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        """Fold one watch event in (``informers.Sink``); while a page is folded in, after it."""
        if self._deferred is not None:
            self._deferred.append((resource, key, body))
            return
        self._keep(resource, key, body)
        self._adopt(*_folded(self.state, resource, [(key, body)]), 1)

    async def page(self, resource: Resource, changes: list[Change]) -> None:
        """Fold a list page's changes in (``informers.Sink``), in a worker thread: decoding and
        folding 500 HTTPRoutes holds the interpreter for 0.3 s, in stretches of up to 45 ms
        (a table of the state growing, a route of many rules) that a checkpoint between two
        objects would not cut (docs/benchmarks.md, "Controller"); in the thread, the lock
        changes hands every switch interval. The result is that of ``event`` for each change
        in turn: watch events that come meanwhile are folded in after the page."""
        async with self._paging:
            for key, body in changes:
                self._keep(resource, key, body)
            self._deferred = []
            try:
                with trio.CancelScope(shield=True):  # a page half folded in is never lost
                    async with heap.paced():
                        folded = await offload(_folded, self.state, resource, changes)
                self._adopt(*folded, len(changes))
            finally:
                deferred, self._deferred = self._deferred, None
                for event in deferred:
                    self.event(*event)

    def _keep(self, resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        """What the shell reads raw: the status of written kinds, certificate Secrets."""
        namespace, name = key
        if resource.kind in STATUS_RESOURCES:
            if body is None:
                self.statuses.pop((resource.kind, namespace, name), None)
            else:
                self.statuses[(resource.kind, namespace, name)] = body.get("status") or {}
        if resource.kind == "Secret":
            labels = (body or {}).get("metadata", {}).get("labels") or {}
            if body is not None and labels.get(ROLE) == CERTIFICATE_ROLE:
                self.certificates[key] = body
            else:
                self.certificates.pop(key, None)

    def _adopt(self, state: ClusterState, changed: list[ObjectKey], events: int) -> None:
        self.state = state
        self._changed.update(changed)
        self._unfrozen += events
        if self._unfrozen >= heap.BULK:
            heap.settle()
            self._unfrozen = 0


def _folded(
    state: ClusterState, resource: Resource, changes: list[Change]
) -> tuple[ClusterState, list[ObjectKey]]:
    """``state`` with ``changes`` folded in, and the keys of the objects that changed it.
    Touches nothing else (it runs in a worker thread) but the log."""
    changed = []
    for (namespace, name), body in changes:
        event: Upserted | Deleted
        if body is None:
            event = Deleted(ObjectKey(resource.kind, namespace, name))
        else:
            decoded = decode_object(body)
            if isinstance(decoded, Malformed):
                log.warning("%s %s/%s: %s", resource.kind, namespace, name, decoded.diagnostic)
            if not isinstance(decoded, Decoded):
                continue
            event = Upserted(decoded.obj)
        folded = apply(state, event)
        if folded is not state:
            changed.append(event.key if isinstance(event, Deleted) else event.obj.meta.key)
            state = folded
    return state, changed
