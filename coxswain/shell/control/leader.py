"""Leader election on a ``coordination.k8s.io/v1`` Lease (as client-go's leaderelection).

Only the leader writes (status, provisioned objects, certificates) and serves discovery; a
standby waits. The leader renews the Lease every ``RENEW_EVERY``; a standby takes over once
``renewTime + leaseDurationSeconds`` has passed without a renewal, so a dead leader is replaced
within the lease duration. Every write carries the Lease's ``resourceVersion``: of two
candidates racing for it, the API lets one win and answers 409 to the other. A leader that
cannot renew before its lease runs out stops leading (:class:`LostLeadership`), because
another may already lead: the process exits and is restarted as a standby. The Lease's
requests take ``Kube``'s urgent slot, so a renewal never queues behind a round's status writes
or a resync's lists.

Times are compared with this process's clock, as client-go does (it trusts clock skew to be
small against the lease duration).
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, Final, NoReturn

import trio

from coxswain.shell.control import kinds
from coxswain.shell.control.kube import ApiFailure, Kube, Unreachable

__all__ = ["LEASE", "LeaderElection", "LostLeadership"]

log = logging.getLogger("coxswain.leader")

LEASE: Final = kinds.LEASE
LEASE_SECONDS: Final = 15
RENEW_EVERY: Final = 5.0
RETRY_EVERY: Final = 2.0
RELEASE_WITHIN: Final = 2.0

if TYPE_CHECKING:
    from collections.abc import Callable


class LostLeadership(Exception):
    """The Lease could not be renewed in time: another controller may lead now."""


class LeaderElection:
    """One candidate for the Lease ``namespace/name``."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        identity: str,
        *,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        lease_seconds: int = LEASE_SECONDS,
        renew_every: float = RENEW_EVERY,
        retry_every: float = RETRY_EVERY,
    ) -> None:
        self._kube = kube
        self._path = LEASE.path(namespace)
        self._lease = LEASE.path(namespace, name)
        self._name = name
        self._namespace = namespace
        self.identity = identity
        self._clock = clock
        self._lease_seconds = lease_seconds
        self._renew_every = renew_every
        self._retry_every = retry_every

    async def lead(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> NoReturn:
        """Wait until this candidate holds the Lease, ``started()``, then renew it forever.

        Raises:
            LostLeadership: a renewal did not succeed within the lease duration.
        """
        while True:  # polling is the protocol: the Lease says nothing when it frees up
            if await self._try_acquire():
                break
            await trio.sleep(self._retry_every)
        log.info("%s leads (lease %s/%s)", self.identity, self._namespace, self._name)
        task_status.started()
        last = trio.current_time()
        try:
            while True:
                await trio.sleep(self._renew_every)
                if await self._try_acquire():
                    last = trio.current_time()
                elif trio.current_time() - last > self._lease_seconds:
                    raise LostLeadership(f"{self.identity} could not renew the lease in time")
        finally:
            with trio.move_on_after(RELEASE_WITHIN) as scope:
                scope.shield = True
                await self._release()

    async def _release(self) -> None:
        """Hand the Lease back (a stopping leader: a rolling update fails over at once)."""
        try:
            lease = await self._kube.request("GET", self._lease, urgent=True)
        except (ApiFailure, Unreachable):
            return
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return
        body = self._body(lease, self._clock(), self._clock())
        body["spec"]["holderIdentity"] = None
        if await self._write("PUT", self._lease, body):
            log.info("%s released the lease", self.identity)

    async def _try_acquire(self) -> bool:
        """Take or renew the Lease; False when someone else holds it or the write lost."""
        now = self._clock()
        try:
            lease = await self._kube.request("GET", self._lease, urgent=True)
        except ApiFailure as err:
            if err.status != 404:
                log.warning("lease: %s", err)
                return False
            return await self._write("POST", self._path, self._body(None, now, now))
        except Unreachable as err:
            log.warning("lease: %s", err)
            return False
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        if holder and holder != self.identity and not self._expired(spec, now):
            return False
        acquired = now if holder != self.identity else _parse(spec.get("acquireTime")) or now
        body = self._body(lease, acquired, now)
        return await self._write("PUT", self._lease, body)

    def _expired(self, spec: dict[str, Any], now: datetime.datetime) -> bool:
        renewed = _parse(spec.get("renewTime"))
        seconds = int(spec.get("leaseDurationSeconds") or self._lease_seconds)
        return renewed is None or renewed + datetime.timedelta(seconds=seconds) < now

    def _body(
        self, current: dict[str, Any] | None, acquired: datetime.datetime, now: datetime.datetime
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self._name, "namespace": self._namespace}
        if current is not None:
            metadata["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
        transitions = int(((current or {}).get("spec") or {}).get("leaseTransitions") or 0)
        holder = ((current or {}).get("spec") or {}).get("holderIdentity")
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._lease_seconds,
                "acquireTime": _format(acquired),
                "renewTime": _format(now),
                "leaseTransitions": transitions + (holder not in (None, self.identity)),
            },
        }

    async def _write(self, method: str, path: str, body: dict[str, Any]) -> bool:
        try:
            await self._kube.request(method, path, body=body, urgent=True)
        except ApiFailure as err:
            if err.status != 409:
                log.warning("lease: %s", err)
            return False
        except Unreachable as err:
            log.warning("lease: %s", err)
            return False
        return True


def _format(moment: datetime.datetime) -> str:
    """``metav1.MicroTime``: RFC 3339 with microseconds, UTC."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: object) -> datetime.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
