"""Binding a layer-4 listener's socket, again and again while the port is taken.

A port may be held by a process that is stopping, or by the HTTP side until the same apply
closes it there; the listener then tries every second, and the apply goes on at once (the
proxy is not ready meanwhile: ``StreamServer.ready``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeVar

import trio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["bind_retrying"]

log = logging.getLogger("coxswain.streams")

_Bound = TypeVar("_Bound")


async def bind_retrying(
    bind: Callable[[], Awaitable[_Bound]], what: str, task_status: trio.TaskStatus[None]
) -> tuple[_Bound, trio.TaskStatus[None]]:
    """What ``bind`` gives once it stops raising ``OSError``, and the task status still to
    start (already started, and replaced by one that ignores, after a first failure)."""
    while True:
        try:
            return await bind(), task_status
        except OSError as err:
            log.error("cannot listen on %s: %s; trying again in 1 s", what, err)
            task_status.started()
            task_status = trio.TASK_STATUS_IGNORED
            await trio.sleep(1)
