"""The bridge between trio and grpc.aio's asyncio (threads only behind one bridge
module, and this is it: docs/architecture.md, "Shell patterns").

grpcio's trio-compatible flavour does not exist; ``grpc.aio`` is asyncio. Each discovery server
owns one :class:`AsyncioThread` (one asyncio loop in one dedicated, named thread) and the
clients of one trio run share one (:func:`client_bridge`). Trio code submits coroutines to it
with :meth:`AsyncioThread.call` and is woken through the trio run's :class:`Inbox` (one
``run_sync_soon`` per batch of results, however many loop threads hand them back), so no trio
worker thread is ever used. Cancelling the trio side cancels the asyncio task and waits
(shielded) until it has really finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Final, TypeVar

import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine

__all__ = ["AsyncioThread", "Inbox", "client_bridge", "run_inbox"]

_T = TypeVar("_T")


class Inbox:
    """Callbacks from loop threads into one trio run, handed over in batches.

    ``TrioToken.run_sync_soon`` holds one lock per trio run while it writes the run's wakeup
    socket, a system call that releases the GIL: with many loop threads handing results back at
    once (a publish reaching 100 in-process clients and the server's Acks), each caller then
    waits for the GIL with that lock held and the others queue behind it (``bench/discovery.py``
    with 100 in-process clients; docs/benchmarks.md, "Measurements behind the design"). Here a
    callback is appended to a deque (atomic under the GIL), and only the first since the last
    drain calls ``run_sync_soon``, a few calls per publish instead of hundreds; the drain runs,
    on the trio thread, the callbacks queued when it starts, in order. One inbox per trio run,
    shared by its bridges (``_INBOX``): for a proxy's one client it is one call per result, as
    before."""

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self._token = token
        self._queue: deque[Callable[[], object]] = deque()
        self._scheduled = False

    def put(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the trio thread soon; thread-safe, never blocks on another caller.
        Raises ``trio.RunFinishedError`` as ``run_sync_soon`` does."""
        self._queue.append(fn)
        if not self._scheduled:
            # Two threads may both get here: two drains, the second finding less or nothing.
            # One that appends after a drain began finds _scheduled False and schedules anew.
            self._scheduled = True
            self._token.run_sync_soon(self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        queue = self._queue
        for _ in range(len(queue)):
            queue.popleft()()


_INBOX: Final[trio.lowlevel.RunVar[Inbox]] = trio.lowlevel.RunVar("coxswain_discovery_inbox")


def run_inbox() -> Inbox:
    """This trio run's inbox (call on the trio thread)."""
    try:
        return _INBOX.get()
    except LookupError:
        inbox = Inbox(trio.lowlevel.current_trio_token())
        _INBOX.set(inbox)
        return inbox


class AsyncioThread:
    """One asyncio event loop in one dedicated thread, driven from trio."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._stopped = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        self._inbox = run_inbox()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._stopped.set)

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the loop thread; thread-safe, never blocks."""
        self._loop.call_soon_threadsafe(fn)

    def to_trio(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the trio thread soon (from the loop thread); see :class:`Inbox`."""
        self._inbox.put(fn)

    async def call(self, make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
        """Run ``make()`` as a task on the loop; trio cancellation cancels it and waits."""
        done = trio.Event()
        box: list[asyncio.Task[_T]] = []

        def _start() -> None:
            task = self._loop.create_task(make())
            task.add_done_callback(lambda _: self._inbox.put(done.set))
            box.append(task)

        self._loop.call_soon_threadsafe(_start)
        try:
            await done.wait()
        finally:
            if not done.is_set():
                self._loop.call_soon_threadsafe(lambda: box[0].cancel())
                with trio.CancelScope(shield=True):
                    await done.wait()
        return box[0].result()

    async def stop(self) -> None:
        """Stop the loop and join its thread (the join is immediate once signalled)."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            with trio.CancelScope(shield=True):
                await self._stopped.wait()
        self._thread.join()


class _SharedBridge:
    """The client loop thread of one trio run, and how many streams use it."""

    def __init__(self) -> None:
        self.bridge = AsyncioThread("coxswain-discovery-client")
        self.users = 0


_CLIENT_BRIDGE: Final[trio.lowlevel.RunVar[_SharedBridge | None]] = trio.lowlevel.RunVar(
    "coxswain_discoveryclient_bridge", default=None
)


@contextlib.asynccontextmanager
async def client_bridge() -> AsyncIterator[AsyncioThread]:
    """The loop thread every discovery client of this trio run shares. A proxy (or a worker)
    has one client, so this changes nothing there; 100 clients in one process (the discovery
    benchmark) then hand their results through one thread instead of 100 threads contending
    for the GIL. The thread starts with the first client and stops after the last."""
    shared = _CLIENT_BRIDGE.get()
    if shared is None:
        shared = _SharedBridge()
        shared.bridge.start()
        _CLIENT_BRIDGE.set(shared)
    shared.users += 1
    try:
        yield shared.bridge
    finally:
        shared.users -= 1
        if shared.users == 0:
            _CLIENT_BRIDGE.set(None)
            await shared.bridge.stop()
