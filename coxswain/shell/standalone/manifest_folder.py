"""A folder of manifests as the cluster: read it, and read again whatever changes in it.

``coxswain serve`` has no API server; its cluster state is the folder. The folder is polled:
each manifest file is stat-ed, and the files that are new or whose size, modification time or
inode differs from the last look are read again, alone (:mod:`.folder_state`); files gone are
forgotten. Polling rather than inotify keeps to the standard library and works on every file
system (bind mounts, network shares, editors that replace files by rename). A look costs a
stat per file, so looks are ``interval`` apart (0.05 s), or ten times what the last look cost
when that is longer (``POLL_SHARE``): polling takes at most about a tenth of a core, whatever
the folder's size. The looks and the reads run in a worker thread (:mod:`coxswain.shell.offload`),
so that a large folder never holds up the proxy's event loop.

A read that fails (a YAML syntax error, a file half written) is logged as ``file:line:
message`` and the last good state stays in force; the next change is read again. Only the very
first read is fatal: there is nothing to serve yet.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Final

import trio

from coxswain.shell.offload import offload
from coxswain.shell.sources import MANIFEST_SUFFIXES, LoadError
from coxswain.shell.standalone.folder_state import FolderState, Stamp

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from coxswain.compile import ClusterState
    from coxswain.compile.model.manifests import SourcedBody

__all__ = ["POLL_INTERVAL", "POLL_SHARE", "fingerprint", "watch_manifests"]

POLL_INTERVAL: Final = 0.05
# POLICY: the share of a core that looking at the folder may take: looks are at least this many
# times their own cost apart (a stat of 10,000 files takes tens of ms).
POLL_SHARE: Final = 0.1

log = logging.getLogger("coxswain.serve")

Fingerprint = tuple[tuple[str, Stamp], ...]


def fingerprint(roots: Sequence[str]) -> Fingerprint:
    """Path and (size, mtime, inode) of every manifest file under ``roots`` (folders or
    files), in path order (a folder's files, then its subfolders', each sorted by name)."""
    found: list[tuple[str, Stamp]] = []
    for root in roots:
        if os.path.isfile(root):
            _add(found, root)
        elif os.path.isdir(root):
            _walk(root, found)
    return tuple(found)


def _walk(directory: str, found: list[tuple[str, Stamp]]) -> None:
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:  # removed or unreadable since it was listed
        return
    folders = []
    for entry in entries:
        try:
            if entry.is_dir():
                folders.append(entry.path)
            elif os.path.splitext(entry.name)[1].lower() in MANIFEST_SUFFIXES:
                _add(found, entry.path)
        except OSError:
            continue
    for folder in folders:
        _walk(folder, found)


def _add(found: list[tuple[str, Stamp]], path: str) -> None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:  # removed between the listing and the stat
        return
    found.append((path, (stat.st_size, stat.st_mtime_ns, stat.st_ino)))


def _look(roots: Sequence[str]) -> tuple[Fingerprint, float]:
    """The fingerprint, and the CPU time it took this thread.

    Raises:
        LoadError: a root does not exist (a folder unmounted is not an empty cluster).
    """
    started = time.thread_time()
    for root in roots:
        if not os.path.exists(root):
            raise LoadError(f"{root}: no such file or directory")
    found = fingerprint(roots)
    return found, time.thread_time() - started


async def watch_manifests(
    roots: Sequence[str],
    on_state: Callable[[ClusterState, list[SourcedBody]], Awaitable[None]],
    *,
    interval: float = POLL_INTERVAL,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Hand ``on_state`` the state of ``roots`` now and after every change; never returns.
    ``task_status.started()`` once the first state has been handled.

    Raises:
        LoadError: the first read failed (``file:line: message``).
    """
    folder = FolderState()
    seen: Fingerprint | None = None
    reported: str | None = None  # the last error logged: once, not at every look
    started = False
    while True:
        cost = 0.0
        try:
            current, cost = await offload(_look, roots)
            if current == seen:
                changed = False
            else:
                seen = current
                changed = await offload(folder.update, current)
        except LoadError as err:
            if not started:
                raise
            if str(err) != reported:
                reported = str(err)
                log.error("%s; still serving the last good manifests", err)
        else:
            reported = None
            if changed or not started:
                await on_state(folder.state, folder.bodies)
            if not started:
                started = True
                task_status.started()
        await trio.sleep(max(interval, cost / POLL_SHARE))
