"""The one bridge from the event loop to a worker thread, for work that cannot be made small.

Why (docs/architecture.md, "Shell patterns"): no event loop may be blocked more than a few tens
of milliseconds — the controller's loop renews the leader Lease, answers ``/healthz`` and keeps
every informer and discovery stream moving; ``serve``'s loop also runs the in-process proxy. A
compile round at scale (the cluster-wide analysis, a scope compiled again, status, provision)
can take longer than that even when incremental, and so can folding a list page of 500 objects
into the state; so they run here, in a thread, with exactly the result they would have had on
the loop: the functions handed over are pure or touch only a ``compile.memo.CompileMemo`` that
no other task uses while the call runs (callers await each call before the next).

A cancelled caller waits for the thread to finish (``abandon_on_cancel=False``): the memo is
never left half-updated behind a new call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar, TypeVarTuple, Unpack

import trio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["offload"]

_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")


async def offload(work: Callable[[Unpack[_Args]], _T], *args: *_Args) -> _T:
    """``work(*args)`` in a worker thread; the caller's loop keeps running meanwhile."""
    return await trio.to_thread.run_sync(work, *args)
