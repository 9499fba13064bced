"""The tasks that serve a client's HTTP/2 streams (RFC 9113 §5), kept between streams.

Why: a task spawned per stream, with a cancel scope of its own, cost a small request about a
sixth of its instructions in trio's bookkeeping (spawn, first step, exit, the scope's enter
and exit; docs/benchmarks.md, "HTTP/2 against nginx"). A :class:`Worker` is a task of the
connection's nursery that serves streams one after another inside one
:class:`~.wire.Timer`'s scope, as an HTTP/1.1 connection serves its requests: between two
streams it parks (:meth:`Workers.park`), and the connection's reader hands it the next stream
with one ``reschedule`` (:meth:`Workers.hand`). A stream the scope cut (a reset, a timeout, a
route's deadline) spends that timer: the worker takes a new one before it parks again
(:mod:`.h2_connection`).

Structured concurrency and backpressure are as before: the workers live in the connection's
nursery and end with it; at most one per stream in flight is busy, bounded by
``SETTINGS_MAX_CONCURRENT_STREAMS``; at most :data:`MAX_IDLE` wait parked, the others end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Generic, TypeVar

import trio

if TYPE_CHECKING:
    from coxswain.shell.dataplane.wire import Timer

__all__ = ["MAX_IDLE", "Worker", "Workers"]

MAX_IDLE: Final = 16
"""Parked workers a connection keeps at most: enough for a client's usual streams in flight
(browsers and ``h2load`` keep a few to ten); a worker that finishes a stream beyond them
ends, so that a burst of streams leaves no crowd of parked tasks behind."""

Job = TypeVar("Job")


class Worker(Generic[Job]):
    """One task serving streams in turn; ``timer`` bounds the stream it serves."""

    __slots__ = ("_idle", "job", "task", "timer")

    def __init__(self, timer: Timer, job: Job, idle: list[Worker[Job]]) -> None:
        self.timer = timer
        self.job: Job | None = job  # the stream handed over, until the worker takes it
        self.task: trio.lowlevel.Task | None = None  # set once it runs
        self._idle = idle

    def abort(self, _raise_cancel: object) -> trio.lowlevel.Abort:
        """A parked worker was cancelled (its connection ends): no longer idle."""
        self._idle.remove(self)
        return trio.lowlevel.Abort.SUCCEEDED


class Workers(Generic[Job]):
    """The parked workers of one connection."""

    __slots__ = ("_idle",)

    def __init__(self) -> None:
        self._idle: list[Worker[Job]] = []

    def new(self, timer: Timer, job: Job) -> Worker[Job]:
        """A worker for a task about to be spawned, its first job given."""
        return Worker(timer, job, self._idle)

    def idle(self) -> Worker[Job] | None:
        """A parked worker, taken out of the idle ones, or None."""
        idle = self._idle
        return idle.pop() if idle else None

    def hand(self, worker: Worker[Job], job: Job) -> None:
        """Wake ``worker`` (from :meth:`idle`) with ``job``."""
        worker.job = job
        assert worker.task is not None
        trio.lowlevel.reschedule(worker.task)

    def first(self, worker: Worker[Job]) -> Job:
        """The job ``worker`` was spawned with, in its task (which it notes for :meth:`hand`)."""
        worker.task = trio.lowlevel.current_task()
        return self._take(worker)

    async def park(self, worker: Worker[Job]) -> Job | None:
        """Wait, parked, for the next job; None when enough workers are parked already (the
        worker ends)."""
        idle = self._idle
        if len(idle) >= MAX_IDLE:
            return None
        idle.append(worker)
        await trio.lowlevel.wait_task_rescheduled(worker.abort)
        return self._take(worker)

    @staticmethod
    def _take(worker: Worker[Job]) -> Job:
        job = worker.job
        assert job is not None
        worker.job = None
        return job
