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

from coxswain.compile import ClusterState
from coxswain.compile.model.decode import Decoded, Malformed, decode_object
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.state import Deleted, Upserted, apply
from coxswain.compile.provision import ROLE
from coxswain.shell.control import heap
from coxswain.shell.control.cluster_ca import CERTIFICATE_ROLE
from coxswain.shell.control.status_writer import STATUS_RESOURCES

if TYPE_CHECKING:
    from coxswain.shell.control.kube import Resource

__all__ = ["ClusterView"]

log = logging.getLogger("coxswain.controller")


class ClusterView:
    """The decoded state, the written kinds' current status, and the certificate Secrets."""

    def __init__(self) -> None:
        self.state = ClusterState()
        self.statuses: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.certificates: dict[tuple[str, str], dict[str, Any]] = {}
        self._base = self.state
        self._changed: set[ObjectKey] = set()
        self._unfrozen = 0  # events folded in since what is alive was last frozen

    def take(self) -> tuple[ClusterState, ClusterState, frozenset[ObjectKey]]:
        """The state of the last ``take`` (or the empty state), the state now, and the keys of
        the objects changed between the two; the next ``take`` starts from now."""
        taken = (self._base, self.state, frozenset(self._changed))
        self._base = self.state
        self._changed.clear()
        return taken

    def event(self, resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        """Fold one informer event in (``informers.Sink``)."""
        self._unfrozen += 1
        if self._unfrozen >= heap.BULK:
            heap.settle()
            self._unfrozen = 0
        namespace, name = key
        object_key = ObjectKey(resource.kind, namespace, name)
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
        if body is None:
            self._fold(object_key, Deleted(object_key))
            return
        decoded = decode_object(body)
        if isinstance(decoded, Decoded):
            self._fold(decoded.obj.meta.key, Upserted(decoded.obj))
        elif isinstance(decoded, Malformed):
            log.warning("%s %s/%s: %s", resource.kind, namespace, name, decoded.diagnostic)

    def _fold(self, key: ObjectKey, event: Upserted | Deleted) -> None:
        state = apply(self.state, event)
        if state is not self.state:
            self._changed.add(key)
            self.state = state
