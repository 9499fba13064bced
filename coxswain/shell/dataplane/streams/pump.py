"""Both directions of a plain TCP connection in one task: :func:`splice_sockets`.

A task waits on one file descriptor at a time in trio; two directions would need two tasks
(and a nursery), which cost a short connection about as much as its own forwarding. Here
the connection gets an epoll instance of its own (Linux ``epoll(7)``, level-triggered)
holding both sockets, and the task waits on that one descriptor: it becomes readable when
either socket is ready for what the connection waits on. Each direction is a :class:`_Way`:

- with nothing pending it waits for its source to be readable, reads at most ``CHUNK``
  bytes and sends what the target takes at once; the rest is pending, and the direction
  then waits for its target to be writable instead of reading more (backpressure: at most
  one chunk in flight per direction, and a stalled direction never stalls the other);
- an EOF (``b""``) is passed on as a half-close (``shutdown(SHUT_WR)``, RFC 9293 §3.6) once
  nothing is pending, and the other direction carries on;
- a socket that failed ends the connection. A socket is in the epoll set only while the
  connection waits on it: one the peer hung up (``EPOLLHUP``, reported whatever the mask)
  would otherwise wake the task again and again while it waits on the other.

A socket is read only once epoll reported it readable (a read shorter than ``CHUNK`` counts
as drained until epoll says otherwise), and sent to again after a partial send only once
reported writable: no call fails with ``EAGAIN`` on the way, and before each wait a poll
without timeout finds what is ready at once, without a run-loop turn.

The task yields on every wait, and at least every second iteration that received bytes
without waiting (each moves at most a chunk per direction; the iterations between that only
send what is pending or pass an EOF on are at most two per direction). ``idle_timeout``
closes a connection silent both ways, as :func:`.splice.splice` does. Epoll instances come
from a :class:`Pollers` and go back to it. The caller closes both sockets.
"""

from __future__ import annotations

import select
import socket
from typing import TYPE_CHECKING

import trio

from coxswain.shell.dataplane.streams.splice import CHUNK, Spliced, touch

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Pollers", "splice_sockets"]


_READABLE = select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR
_WRITABLE = select.EPOLLOUT | select.EPOLLHUP | select.EPOLLERR


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
        self.readable = False  # the source has bytes or its end: only epoll says so
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
        if len(data) < CHUNK:
            self.readable = False  # most likely drained; level-triggered epoll says if not
        try:
            sent = self.target.send(data)
        except BlockingIOError:
            sent = 0
        self.pending = data[sent:]
        self.writable = not self.pending
        return len(data)

    def ready(self, fd: int, events: int) -> None:
        """Note what epoll reported of ``fd``."""
        if fd == self.source_fd and events & _READABLE:
            self.readable = True
        if fd == self.target_fd and events & _WRITABLE:
            self.writable = True


class Pollers:
    """Idle epoll instances, kept for the next connections (at most ``keep``): a connection
    takes one and gives it back emptied, which costs an ``epoll_ctl`` per socket still in
    its set instead of creating, registering with trio's own epoll, and closing one per
    connection. :meth:`close` closes them (the stream server's end)."""

    __slots__ = ("_idle", "keep")

    def __init__(self, keep: int = 256) -> None:
        self.keep = keep
        self._idle: list[select.epoll] = []

    def take(self) -> select.epoll:
        return self._idle.pop() if self._idle else select.epoll(2)

    def give(self, poller: select.epoll, registered: Iterable[int]) -> None:
        """Take back ``poller``, whose set holds the ``registered`` descriptors."""
        try:
            for fd in registered:
                poller.unregister(fd)
        except OSError:  # a descriptor closed behind its back: not reusable as it is
            _close(poller)
            return
        if len(self._idle) < self.keep:
            self._idle.append(poller)
        else:
            _close(poller)

    def close(self) -> None:
        while self._idle:
            _close(self._idle.pop())


def _close(poller: select.epoll) -> None:
    trio.lowlevel.notify_closing(poller)
    poller.close()


async def splice_sockets(
    client: socket.socket,
    backend: socket.socket,
    *,
    first: bytes,
    scope: trio.CancelScope,
    idle_timeout: float,
    pollers: Pollers,
) -> Spliced:
    """Send ``first`` to the backend, then forward both ways until both directions ended
    (see the module docstring); the bytes each way (``first`` not counted), and whether the
    idle timeout ended it. ``scope`` is entered here and given the idle deadline: its owner
    may end the connection by cancelling it; its epoll instance comes from ``pollers``.
    Raises ``OSError`` when a socket failed."""
    done = Spliced()
    ways = (_Way(client, backend, True), _Way(backend, client, False))
    ways[0].pending = first  # sent before anything the client sends next, with backpressure
    with scope:
        scope.deadline = trio.current_time() + idle_timeout
        await _pump(ways, done, scope, idle_timeout, pollers)
    done.idle = scope.cancelled_caught and trio.current_time() >= scope.deadline
    return done


async def _pump(
    ways: tuple[_Way, _Way],
    done: Spliced,
    scope: trio.CancelScope,
    idle_timeout: float,
    pollers: Pollers,
) -> None:
    poller = pollers.take()
    masks = {way.source_fd: 0 for way in ways}  # 0: not in the set
    try:
        spun = False  # an iteration that received bytes without waiting went unyielded
        polled = False  # the last poll found events without a wait
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
            _want(poller, masks, ways)
            # what is ready now costs a poll, not a failed call per socket nor a turn; after
            # a poll that moved nothing, wait (which yields)
            events = [] if polled else poller.poll(0)
            polled = bool(events)
            if not events:
                await trio.lowlevel.wait_readable(poller)
                events = poller.poll(0)
            for fd, mask in events:
                ways[0].ready(fd, mask)
                ways[1].ready(fd, mask)
    finally:
        pollers.give(poller, [fd for fd, mask in masks.items() if mask])


def _want(poller: select.epoll, masks: dict[int, int], ways: tuple[_Way, _Way]) -> None:
    """Put in the epoll set what each socket is waited for: readable as an open source with
    nothing pending, writable as the target of pending bytes; a socket waited for nothing
    leaves the set."""
    wanted = dict.fromkeys(masks, 0)
    for way in ways:
        if way.pending:
            wanted[way.target_fd] |= select.EPOLLOUT
        elif way.open:
            wanted[way.source_fd] |= select.EPOLLIN
    for fd, mask in wanted.items():
        if masks[fd] == mask:
            continue
        if not mask:
            poller.unregister(fd)
        elif masks[fd]:
            poller.modify(fd, mask)
        else:
            poller.register(fd, mask)
        masks[fd] = mask
