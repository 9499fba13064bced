"""How many connections a proxy process holds, and what gives way at the limit.

Every client connection costs a file descriptor, and its upstream connection one more. A
process with no bound on them runs out of descriptors under a flood of idle or half-sent
connections and then fails everything at once, its admin port included: ``/healthz`` stops
answering and the kubelet restarts a proxy that a trivial attack keeps busy.

- **A limit per process** (:class:`Capacity`, ``--max-connections``, 16,384 by default:
  :mod:`.connection_limits`).
- **What gives way** at the limit: a new connection is accepted only when there is room, or
  when a connection waits for a request head (an idle keep-alive connection, a head arriving
  slowly, or a TLS handshake); the one that has waited longest is then closed for the newcomer (the
  ``coxswain_connections_shed_total`` metric counts them). A connection whose request is
  being answered is never closed for room: when every connection is busy, new ones wait in
  the kernel's backlog until one ends, as with nginx's ``worker_connections``. Listeners
  that find the same last idle connection may each take one connection past the limit, for
  as long as those take to end.
- **The open-file limit** (:func:`connection_budget`): the soft limit is raised to the hard
  one when the proxy starts (Go programs do the same), and the connection limit is lowered,
  with a warning, to what the descriptors allow: two per connection, after a reserve for the
  listeners, the admin port and the upstream pool.
- **The admin port** has a :class:`Capacity` of its own (:mod:`.admin`), with no idle
  connections to shed: probes keep their places when the traffic ports are full.
"""

from __future__ import annotations

import errno
import logging
import resource
from typing import TYPE_CHECKING, Final

import trio

from coxswain.shell.dataplane.connection_limits import FD_RESERVE

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

__all__ = ["Capacity", "connection_budget", "serve"]

log = logging.getLogger("coxswain.proxy")

_ACCEPT_PAUSE: Final = 0.1
"""After the kernel refused an accept for want of resources, as ``trio.serve_listeners``."""

_ACCEPT_CAPACITY_ERRNOS: Final = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
)


class Capacity:
    """At most ``limit`` connections; past it the longest-idle one is closed for the newcomer.

    ``idle`` holds the cancel scopes of connections waiting for a request head, oldest first
    (a dict keeps insertion order); a connection registers with :meth:`waiting` when it starts
    waiting and leaves with :meth:`working` when a head arrives.
    """

    __slots__ = ("_lot", "idle", "limit", "open", "shed")

    def __init__(self, limit: int, *, shed: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self.open = 0
        self.idle: dict[trio.CancelScope, None] = {}
        self.shed = shed  # told of each connection closed for room
        self._lot = trio.lowlevel.ParkingLot()

    async def room(self) -> None:
        """Wait until a connection may be accepted: below the limit, or an idle one to close."""
        while self.open >= self.limit and not self.idle:
            await self._lot.park()  # until a connection ends, or one goes idle

    async def enter(self) -> None:
        """A connection was accepted; past the limit the one idle longest is closed for it.

        The room seen before the accept may be gone after it: the idle connection that made
        it may have read its head meanwhile, or another listener's connection may have taken
        it. The newcomer then waits, accepted but not served, for room again."""
        await self.room()
        self.open += 1
        if self.open > self.limit and self.idle:
            oldest = next(iter(self.idle))
            del self.idle[oldest]
            oldest.cancel()
            if self.shed is not None:
                self.shed()

    def leave(self) -> None:
        """A connection ended."""
        self.open -= 1
        self._lot.unpark()

    def waiting(self, scope: trio.CancelScope) -> None:
        """The connection of ``scope`` waits for a request head: it may be closed for room."""
        self.idle[scope] = None
        if self._lot:  # a listener waits for room: this one may give it
            self._lot.unpark()

    def working(self, scope: trio.CancelScope) -> None:
        """The connection of ``scope`` is answering a request (or ending)."""
        self.idle.pop(scope, None)


def connection_budget(wanted: int) -> int:
    """``wanted``, or fewer when the open-file limit cannot hold that many connections (two
    descriptors each, after :data:`FD_RESERVE`). Raises the soft limit to the hard one first."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # keep the soft limit
    if soft == resource.RLIM_INFINITY:
        return wanted
    budget = max(1, (soft - FD_RESERVE) // 2)
    if budget < wanted:
        log.warning(
            "--max-connections %d lowered to %d: the open-file limit is %d", wanted, budget, soft
        )
        return budget
    return wanted


async def serve(
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    listeners: Sequence[trio.SocketListener],
    capacity: Capacity,
    handler_nursery: trio.Nursery,
) -> None:
    """Accept on every listener when ``capacity`` has room, and handle each connection in
    ``handler_nursery``; never returns (``trio.serve_listeners`` with a limit)."""
    async with trio.open_nursery() as accepting:
        for listener in listeners:
            accepting.start_soon(_accept, handler, listener, capacity, handler_nursery)


async def _accept(
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    listener: trio.SocketListener,
    capacity: Capacity,
    handler_nursery: trio.Nursery,
) -> None:
    async with listener:  # closed when accepting ends
        while True:
            await capacity.room()
            try:
                stream = await listener.accept()
            except OSError as err:
                if err.errno not in _ACCEPT_CAPACITY_ERRNOS:
                    raise
                log.error("accepting a connection failed: %s; pausing %g s", err, _ACCEPT_PAUSE)
                await trio.sleep(_ACCEPT_PAUSE)
                continue
            try:
                await capacity.enter()
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
            handler_nursery.start_soon(_handle, handler, stream, capacity)


async def _handle(
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    stream: trio.SocketStream,
    capacity: Capacity,
) -> None:
    try:
        await handler(stream)
    finally:
        capacity.leave()
