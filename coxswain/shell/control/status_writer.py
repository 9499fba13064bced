"""Writing status: only what changed, with ``lastTransitionTime`` kept (docs/architecture.md).

``compile.status`` decides every owned object's status without timestamps. Here each desired
status is laid over the object's current one:

- a condition keeps its ``lastTransitionTime`` when its type and status did not change
  (``metav1.Condition``: the time "the condition transitioned from one status to another");
  otherwise it gets ``now``;
- a route's (every kind's: HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute) ``status.parents``
  keeps the entries of other controllers: the list is shared by every controller a route is attached
  to, and each owns its own entries (GEP-1364, ``RouteParentStatus.controllerName``); so does a
  BackendTLSPolicy's ``status.ancestors`` (``PolicyAncestorStatus.controllerName``), keyed by
  ``ancestorRef``; an empty list (a policy no route of ours reaches: the way our stale entries go)
  is not added to an object without one, so a policy of another implementation is never written to;
- when the result equals the current status nothing is written, so a resync, a restart or an
  unrelated change makes no API write at all ("no write churn"); an object whose current
  status and desired status are both those of its last write or check is not even compared.

Writes are merge patches of the ``status`` subresource; keys the desired status no longer has
are removed with ``null``; at most ``WRITERS`` are in flight, and the comparison of every
status checkpoints every few milliseconds (:mod:`.pacing`).
"""

from __future__ import annotations

import copy
import json
import logging
from typing import TYPE_CHECKING, Any, Final

import trio

from coxswain.shell.control import kinds
from coxswain.shell.control.kube import MERGE_PATCH, ApiFailure, Kube, Resource, Unreachable
from coxswain.shell.control.pacing import Pacer

if TYPE_CHECKING:
    import datetime
    from collections.abc import Iterable

    from coxswain.compile.status import ObjectStatus

__all__ = ["STATUS_RESOURCES", "WRITERS", "StatusWriter", "merged_status"]

log = logging.getLogger("coxswain.status")

WRITERS: Final = 4
"""Status patches in flight at once: half of ``Kube``'s request slots, so that a round writing
10,000 statuses leaves the Lease renewal and the informers' requests a slot at once instead of
a place behind every queued patch."""

STATUS_RESOURCES: Final[dict[str, Resource]] = {
    resource.kind: resource
    for resource in (
        kinds.INGRESS,
        kinds.GATEWAY_CLASS,
        kinds.GATEWAY,
        kinds.HTTP_ROUTE,
        kinds.GRPC_ROUTE,
        kinds.TLS_ROUTE,
        kinds.TCP_ROUTE,
        kinds.UDP_ROUTE,
        kinds.LISTENER_SET,
        kinds.BACKEND_TLS_POLICY,
    )
}


def merged_status(
    desired: dict[str, Any], current: dict[str, Any], *, controller: str, now: str
) -> dict[str, Any]:
    """The status to write: ``desired`` with the timestamps and foreign entries of
    ``current`` kept as the module docstring says. Pure."""
    result = copy.deepcopy(desired)
    _stamp(result, current, now)
    for field, ref in (("parents", "parentRef"), ("ancestors", "ancestorRef")):
        if field not in result:
            continue
        ours = {_ref_key(p, ref) for p in result[field]}
        foreign = [
            p
            for p in current.get(field) or []
            if p.get("controllerName") != controller and _ref_key(p, ref) not in ours
        ]
        before = {_ref_key(p, ref): p for p in current.get(field) or []}
        for entry in result[field]:
            _stamp(entry, before.get(_ref_key(entry, ref), {}), now)
        merged = [*foreign, *result[field]]
        if merged or field in current:
            result[field] = merged
        else:  # nobody's entries on an object without the list: nothing to write there
            del result[field]
    listeners = {item.get("name"): item for item in current.get("listeners") or []}
    for listener in result.get("listeners") or []:
        _stamp(listener, listeners.get(listener["name"], {}), now)
    return result


def _stamp(holder: dict[str, Any], old: dict[str, Any], now: str) -> None:
    """Give each condition of ``holder`` the time of its last transition."""
    before = {c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, dict)}
    for condition in holder.get("conditions") or []:
        previous = before.get(condition["type"])
        same = previous is not None and previous.get("status") == condition["status"]
        stamp = previous.get("lastTransitionTime") if same and previous else None
        condition["lastTransitionTime"] = stamp or now


def _ref_key(entry: dict[str, Any], ref: str) -> str:
    return json.dumps(entry.get(ref) or {}, sort_keys=True)


class StatusWriter:
    """Patches the status of owned objects when, and only when, it changed."""

    def __init__(self, kube: Kube, controller: str) -> None:
        self._kube = kube
        self._controller = controller
        # per object: the status last seen and the desired body it was settled against (by a
        # write, or found equal); while both stay the same there is nothing to do, even before
        # the watch has brought a write back
        self._settled: dict[tuple[str, str, str], tuple[dict[str, Any], str]] = {}
        self.writes = 0
        self.failures = 0  # patches that failed: the controller retries at a next round

    @property
    def remembered(self) -> int:
        """How many objects' settled statuses are kept (at most one per object that exists)."""
        return len(self._settled)

    async def write(
        self,
        desired: Iterable[ObjectStatus],
        current: dict[tuple[str, str, str], dict[str, Any]],
        *,
        now: datetime.datetime,
    ) -> int:
        """Write each changed status, several at once; returns how many were written.
        ``current`` maps ``(kind, namespace, name)`` to the object's current ``status``.
        Failures are logged and left for the next round (the desired status will still
        differ)."""
        # objects gone from the cluster are forgotten: the table follows the cluster's size
        for gone in self._settled.keys() - current.keys():
            del self._settled[gone]
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        due: list[tuple[tuple[str, str, str], Resource, dict[str, Any], str]] = []
        pacer = Pacer()
        settled = self._settled
        for index, status in enumerate(desired):
            if not index % 512:
                await pacer.tick()
            key = (status.kind, status.namespace, status.name)
            old = current.get(key)
            if old is None:
                continue  # not in the cluster (any more)
            # the same objects as when last settled: a round's statuses are mostly those of the
            # round before (``compile.status_memo``), so identity answers without a comparison
            last = settled.get(key)
            if last is not None and last[0] is old and last[1] is status.body:
                continue
            await pacer.tick()  # a comparison costs tens of microseconds
            resource = STATUS_RESOURCES.get(status.kind)
            if resource is None or last == (old, status.body):
                continue
            new = merged_status(
                json.loads(status.body), old, controller=self._controller, now=stamp
            )
            if new == old:
                self._settled[key] = (old, status.body)
                continue
            patch = {"status": {**{k: None for k in old if k not in new}, **new}}
            due.append((key, resource, patch, status.body))
        before = self.writes
        pending = iter(due)

        async def writer() -> None:
            for key, resource, patch, body in pending:
                await self._patch(key, resource, patch, (current[key], body))

        async with trio.open_nursery() as nursery:
            for _ in range(min(WRITERS, len(due))):
                nursery.start_soon(writer)
        return self.writes - before

    async def _patch(
        self,
        key: tuple[str, str, str],
        resource: Resource,
        patch: dict[str, Any],
        settled: tuple[dict[str, Any], str],
    ) -> None:
        _, namespace, name = key
        try:
            await self._kube.request(
                "PATCH",
                resource.path(namespace or None, name, "status"),
                body=patch,
                content_type=MERGE_PATCH,
            )
        except ApiFailure as err:
            if err.status != 404:
                log.warning("status of %s %s/%s: %s", *key, err)
                self.failures += 1
            return
        except Unreachable as err:
            log.warning("status of %s %s/%s: %s", *key, err)
            self.failures += 1
            return
        self._settled[key] = settled
        self.writes += 1
