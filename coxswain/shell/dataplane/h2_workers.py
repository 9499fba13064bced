"""The tasks that serve the streams of a client's HTTP/2 connection (:mod:`.h2_connection`):
started as streams arrive, each serving one stream after another, kept while idle up to a
bound.

Why: a task per stream costs its start and its end (trio makes and registers the task, copies
the context, and tells its nursery when it ends) on every request; a multiplexing client reuses
one connection for many, so the tasks that served the last streams serve the next ones. Each
stream still runs in a task of its own while it is served, in the connection's nursery
(structured concurrency unchanged: the connection ending cancels them), so one stream waiting
for its backend or its client never holds up another; the number of streams in flight stays
bounded by the connection's ``SETTINGS_MAX_CONCURRENT_STREAMS`` (RFC 9113 §5.1.2), and with it
the number of workers.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Generic, TypeVar

import trio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["Workers"]

Job = TypeVar("Job")


class Workers(Generic[Job]):
    """Tasks in ``nursery`` that run ``serve`` on each job given to :meth:`submit`; at most
    ``keep_idle`` of them wait for the next job, the others end."""

    __slots__ = ("_idle", "_jobs", "_nursery", "_serve", "keep_idle")

    def __init__(
        self, nursery: trio.Nursery, serve: Callable[[Job], Awaitable[None]], *, keep_idle: int
    ) -> None:
        self._nursery = nursery
        self._serve = serve
        self.keep_idle = keep_idle
        self._jobs: deque[Job] = deque()
        self._idle: list[trio.Event] = []  # one per idle worker: set to wake it

    def submit(self, job: Job) -> None:
        """Serve ``job`` in an idle worker, or in a new one when none is idle."""
        self._jobs.append(job)
        if self._idle:
            self._idle.pop().set()
        else:
            self._nursery.start_soon(self._work)

    @property
    def idle(self) -> int:
        """How many workers wait for a job."""
        return len(self._idle)

    async def _work(self) -> None:
        jobs = self._jobs
        serve = self._serve
        while True:
            # the jobs waiting are streams open on the connection, so at most its limit of
            # concurrent streams run here between two waits (a serve that answers at once
            # does not wait)
            while jobs:
                await serve(jobs.popleft())
            if len(self._idle) >= self.keep_idle:
                return
            woken = trio.Event()
            self._idle.append(woken)
            await woken.wait()
