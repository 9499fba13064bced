"""Loading the snapshot file of ``coxswain proxy --snapshot`` and noticing when it changes.

The file is re-read on SIGHUP and when it is replaced (written under a temporary name, then
renamed: docs/architecture.md, "The proxy process and its workers"). Replacement is noticed
by polling the file's identity (inode, size, modification time) every half second: portable,
and a rename always changes the inode. SIGHUP is caught from before the first load, so that
one sent as soon as the proxy says it serves (the supervisor of ``--workers N`` forwards it
then) is neither lost nor fatal. A file that cannot be read, is not a snapshot, or carries
another scope than the proxy serves is reported and the snapshot being served stays: a bad
write never takes routing down.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from typing import TYPE_CHECKING, Final

import trio

from coxswain.compile.snapshot_read import SnapshotFormatError, snapshot_from_data
from coxswain.shell.offload import offload

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

    from coxswain.compile.scope import Scope
    from coxswain.compile.snapshot import Snapshot

__all__ = [
    "POLL_INTERVAL",
    "SnapshotLoadError",
    "hangups",
    "load_snapshot",
    "watch_snapshot_file",
]

POLL_INTERVAL: Final = 0.5


class SnapshotLoadError(Exception):
    """The file could not be used; the message says why."""


def load_snapshot(path: str, scope: Scope) -> Snapshot:
    """Read and decode the snapshot at ``path``; it must be for ``scope``.

    Raises:
        SnapshotLoadError: unreadable, not JSON, not a snapshot, or another scope.
    """
    try:
        with open(path, encoding="utf-8") as file:
            snapshot = snapshot_from_data(json.load(file))
    except SnapshotFormatError as err:
        raise SnapshotLoadError(f"{path} is not a snapshot: {err}") from err
    except (OSError, ValueError) as err:
        raise SnapshotLoadError(f"{path} cannot be read: {err}") from err
    if snapshot.scope != scope:
        raise SnapshotLoadError(
            f"{path} is the snapshot of {snapshot.scope}, but this proxy serves {scope}"
        )
    return snapshot


def _identity(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)


@contextlib.contextmanager
def hangups() -> Iterator[AsyncIterator[int] | None]:
    """The SIGHUPs received from now on, or None off the main thread, where no signal can be
    caught (tests running a proxy in a thread)."""
    with contextlib.ExitStack() as stack:
        try:
            signals = stack.enter_context(trio.open_signal_receiver(signal.SIGHUP))
        except RuntimeError:
            signals = None
        yield signals


async def watch_snapshot_file(
    path: str,
    scope: Scope,
    apply: Callable[[Snapshot], Awaitable[None]],
    on_error: Callable[[str], None],
    *,
    interval: float = POLL_INTERVAL,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Load the file, apply it, then re-apply it on SIGHUP or replacement. Never returns.

    The first load must succeed (``SnapshotLoadError`` propagates, and whatever the first
    ``apply`` raises); ``task_status.started()`` is called once it is applied. Later failures
    go to ``on_error``.
    """
    with hangups() as signals:
        seen = _identity(path)
        await apply(await offload(load_snapshot, path, scope))
        task_status.started()
        hangup = trio.Event()

        async def listen_for_hangups() -> None:
            if signals is None:  # polling alone
                await trio.sleep_forever()
            async for _ in signals:
                hangup.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(listen_for_hangups)
            while True:
                with trio.move_on_after(interval):
                    await hangup.wait()
                forced = hangup.is_set()
                hangup = trio.Event()
                now = _identity(path)
                if not forced and (now == seen or now is None):
                    continue
                seen = now
                try:
                    snapshot = await offload(load_snapshot, path, scope)
                except SnapshotLoadError as err:
                    on_error(f"keeping the current snapshot: {err}")
                    continue
                await apply(snapshot)
