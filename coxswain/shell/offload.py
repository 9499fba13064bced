"""The one bridge from the event loop to a worker thread, for work that cannot be made small.

Why (docs/architecture.md, "Shell patterns"): no event loop may be blocked more than a few tens
of milliseconds — the controller's loop renews the leader Lease, answers ``/healthz`` and keeps
every informer and discovery stream moving; ``serve``'s loop also runs the in-process proxy. A
compile round at scale (the cluster-wide analysis, a scope compiled again, status, provision)
can take longer than that even when incremental, and so can folding a list page of 500 objects
into the state, or a proxy's decode of a full snapshot (65 ms at 10,000 routes); so they run
here, in a thread, with exactly the result they would have had on the loop: the functions
handed over are pure or touch only a ``compile.memo.CompileMemo`` that no other task uses
while the call runs (callers await each call before the next).

A cancelled caller waits for the thread to finish (``abandon_on_cancel=False``): the memo is
never left half-updated behind a new call.

While a worker computes, the loop shares the interpreter lock with it, and every system call the
loop makes (a read, a send, a close) gives the lock up and waits for it back; with the
interpreter's default switch interval a holder keeps it up to 5 ms after being asked, so during
the controller's cold start a step of about a millisecond of CPU took up to 110 ms of wall time,
and a health answer up to 265 ms (docs/benchmarks.md, "Controller"). The programs whose loop
runs beside a busy thread ask for the lock back sooner (``share_the_lock``): the controller,
``serve``, and each proxy process, which decodes a full snapshot here.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final, TypeVar, TypeVarTuple, Unpack

import trio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["SWITCH_INTERVAL", "offload", "share_the_lock"]

SWITCH_INTERVAL: Final = 0.001
"""Seconds a thread holding the interpreter lock runs on once another asks for it (the
interpreter's default is 0.005). At 1 ms the controller's cold start took the same CPU
(docs/benchmarks.md, "Controller")."""

_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")


async def offload(work: Callable[[Unpack[_Args]], _T], *args: *_Args) -> _T:
    """``work(*args)`` in a worker thread; the caller's loop keeps running meanwhile."""
    return await trio.to_thread.run_sync(work, *args)


def share_the_lock() -> None:
    """Set this process's switch interval to ``SWITCH_INTERVAL``: for a program whose event
    loop runs beside busy threads (``coxswain controller``, ``serve``, a ``proxy`` process),
    called once before its loop starts."""
    sys.setswitchinterval(SWITCH_INTERVAL)
