"""Both directions of a plain TCP connection in one task: :func:`splice_sockets`.

A task waits on one file descriptor at a time in trio; two directions would need two tasks
(and a nursery), which cost a short connection about as much as its own forwarding. Here
every connection's sockets are in one epoll instance (Linux ``epoll(7)``, edge-triggered)
held by a :class:`Reactor`: its task waits on that one descriptor through trio, and for each
socket reported records what it is ready for and wakes the connection's task if it is
parked. A connection costs two ``epoll_ctl`` calls to join and two to leave, whatever its
waits, and a wake-up of the reactor serves every connection with news. Each direction is a
:class:`_Way`:

- with nothing pending it reads its source once it was reported readable, at most
  ``CHUNK`` bytes, and sends what the target takes at once; the rest is pending, and the
  direction then waits for its target to be writable instead of reading more
  (backpressure: at most one chunk in flight per direction, and a stalled direction never
  stalls the other);
- a source counts as readable until a read finds nothing (``EAGAIN``) or its end: the
  epoll instance is edge-triggered, it reports new bytes, not bytes left; no read is made
  before the first report (a new connection's first bytes are reported when it joins);
- an EOF (``b""``) is passed on as a half-close (``shutdown(SHUT_WR)``, RFC 9293 §3.6) once
  nothing is pending, and the other direction carries on;
- a socket that failed ends the connection (its error is reported as readable and
  writable, and the next call raises it).

The task yields on every wait, and at least every second iteration that received bytes
without waiting (each moves at most a chunk per direction; the iterations between that only
send what is pending or pass an EOF on are at most two per direction). ``idle_timeout``
closes a connection silent both ways, as :func:`.splice.splice` does. The caller closes
both sockets.
"""

from __future__ import annotations

import contextlib
import select
import socket
from typing import Final

import trio

from coxswain.shell.dataplane.streams.splice import CHUNK, Spliced, touch

__all__ = ["Reactor", "splice_sockets"]

_READABLE: Final = select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLHUP | select.EPOLLERR
_WRITABLE: Final = select.EPOLLOUT | select.EPOLLHUP | select.EPOLLERR
_JOIN: Final = select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET
_BATCH: Final = 1024  # events taken per wake-up of the reactor


class _Way:
    """One direction: from ``source`` to ``target``, and what is known of their readiness."""

    __slots__ = (
        "open", "pending", "readable", "source", "source_fd", "target", "target_fd", "upstream",
        "writable",
    )  # fmt: skip

    def __init__(self, source: socket.socket, target: socket.socket, upstream: bool) -> None:
        self.source = source
        self.target = target
        self.source_fd = source.fileno()
        self.target_fd = target.fileno()
        self.upstream = upstream
        self.open = True  # the source has not ended
        self.pending = b""  # received, not yet taken by the target
        self.readable = False  # reported readable, and not read dry since
        self.writable = True  # the target takes bytes: a new socket's buffer is empty

    def step(self) -> int:
        """Move what can move without waiting: -1 when nothing could, else the bytes
        received (0 for pending bytes sent, or the EOF passed on). Raises ``OSError`` when a
        socket failed."""
        if self.pending:
            if not self.writable:
                return -1
            try:
                sent = self.target.send(self.pending)
            except BlockingIOError:
                sent = 0
            self.pending = self.pending[sent:]
            self.writable = not self.pending
            return 0 if sent else -1
        if not (self.open and self.readable):
            return -1
        try:
            data = self.source.recv(CHUNK)
        except BlockingIOError:
            self.readable = False
            return -1
        if not data:
            self.open = False
            self.target.shutdown(socket.SHUT_WR)
            return 0
        try:
            sent = self.target.send(data)
        except BlockingIOError:
            sent = 0
        self.pending = data[sent:]
        self.writable = not self.pending
        return len(data)


class _Joined:
    """A connection as the reactor knows it: its two directions and its parked task."""

    __slots__ = ("out", "task", "ways")

    def __init__(self, ways: tuple[_Way, _Way]) -> None:
        self.ways = ways
        self.task: trio.lowlevel.Task | None = None
        self.out = set[int]()  # its sockets registered for EPOLLOUT too


class Reactor:
    """The one epoll instance of the stream server's connections, and the task reading it
    (:meth:`run`, in the server's nursery; it closes the instance when cancelled)."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._joined: dict[int, _Joined] = {}

    async def run(self) -> None:
        try:
            while True:
                await trio.lowlevel.wait_readable(self._epoll)
                for fd, events in self._epoll.poll(0, _BATCH):
                    joined = self._joined.get(fd)
                    if joined is None:
                        continue
                    for way in joined.ways:
                        if events & _READABLE and way.source_fd == fd:
                            way.readable = True
                        if events & _WRITABLE and way.target_fd == fd:
                            way.writable = True
                    task, joined.task = joined.task, None
                    if task is not None:
                        trio.lowlevel.reschedule(task)
        finally:
            trio.lowlevel.notify_closing(self._epoll)
            self._epoll.close()

    def join(self, ways: tuple[_Way, _Way]) -> _Joined:
        """Watch a connection's two sockets (the sources of ``ways``) from now on."""
        joined = _Joined(ways)
        for way in ways:
            self._epoll.register(way.source_fd, _JOIN)
            self._joined[way.source_fd] = joined
        return joined

    def leave(self, joined: _Joined) -> None:
        """Stop watching a connection's sockets (before they are closed)."""
        for way in joined.ways:
            if self._joined.pop(way.source_fd, None) is joined:
                with contextlib.suppress(OSError, ValueError):  # ValueError: reactor ended
                    self._epoll.unregister(way.source_fd)

    def want_writable(self, joined: _Joined, fd: int) -> None:
        """Report ``fd`` writable too from now on (pending bytes wait for room)."""
        if fd not in joined.out:
            joined.out.add(fd)
            self._epoll.modify(fd, _JOIN | select.EPOLLOUT)


async def _park(joined: _Joined) -> None:
    """Wait until the reactor reports news of one of the connection's sockets."""
    joined.task = trio.lowlevel.current_task()

    def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        joined.task = None
        return trio.lowlevel.Abort.SUCCEEDED

    await trio.lowlevel.wait_task_rescheduled(abort)


async def splice_sockets(
    client: socket.socket,
    backend: socket.socket,
    *,
    first: bytes,
    scope: trio.CancelScope,
    idle_timeout: float,
    reactor: Reactor,
) -> Spliced:
    """Send ``first`` to the backend, then forward both ways until both directions ended
    (see the module docstring); the bytes each way (``first`` not counted), and whether the
    idle timeout ended it. ``scope`` is entered here and given the idle deadline: its owner
    may end the connection by cancelling it; ``reactor`` watches the sockets meanwhile.
    Raises ``OSError`` when a socket failed."""
    done = Spliced()
    ways = (_Way(client, backend, True), _Way(backend, client, False))
    ways[0].pending = first  # sent before anything the client sends next, with backpressure
    joined = reactor.join(ways)
    try:
        with scope:
            scope.deadline = trio.current_time() + idle_timeout
            await _pump(joined, done, scope, idle_timeout, reactor)
    finally:
        reactor.leave(joined)
    done.idle = scope.cancelled_caught and trio.current_time() >= scope.deadline
    return done


async def _pump(
    joined: _Joined,
    done: Spliced,
    scope: trio.CancelScope,
    idle_timeout: float,
    reactor: Reactor,
) -> None:
    ways = joined.ways
    spun = False  # an iteration that received bytes without waiting went unyielded
    while ways[0].open or ways[1].open or ways[0].pending or ways[1].pending:
        progressed = received = False
        for way in ways:
            got = way.step()
            if got >= 0:
                progressed = True
            if got > 0:
                received = True
                touch(scope, idle_timeout)
                if way.upstream:
                    done.upstream += got
                else:
                    done.downstream += got
        if progressed:
            if received:  # sends of what is pending and EOFs are bounded: not counted
                if spun:
                    await trio.lowlevel.checkpoint()
                spun = not spun
            continue
        spun = False
        for way in ways:
            if way.pending:
                reactor.want_writable(joined, way.target_fd)
        await _park(joined)
