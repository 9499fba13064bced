"""Counting the turns trio gives another task, for the fairness tests (a receive that finds
bytes does not yield: shell/dataplane/connection.py; the loops that yield themselves:
shell/dataplane/wire.py, server.py, upstream.py)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable


@asynccontextmanager
async def turn_counter() -> AsyncIterator[Callable[[], int]]:
    """Beside the caller, a task that counts its own turns until the block ends; the block
    gets a function that tells the count so far (the task has had its first turn already)."""
    turns = 0

    async def other_task() -> None:
        nonlocal turns
        while True:
            turns += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_task)
        await trio.lowlevel.checkpoint()  # let it start
        yield lambda: turns
        nursery.cancel_scope.cancel()
