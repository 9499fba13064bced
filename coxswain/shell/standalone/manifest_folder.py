"""A folder of manifests as the cluster: read it, and read it again whenever it changes.

``coxswain serve`` has no API server; its cluster state is the folder. The folder is polled:
every ``interval`` each manifest file is stat-ed, and when the set of files or any file's size,
modification time or inode differs from the last look the whole folder is read again. Polling
rather than inotify keeps to the standard library and works on every file system (bind mounts,
network shares, editors that replace files by rename); at 0.2 s it keeps the promise
that an edit changes routing within a second.

A read that fails (a YAML syntax error, a file half written) is logged as ``file:line:
message`` and the last good state stays in force; the next change is read again. Only the very
first read is fatal: there is nothing to serve yet.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from coxswain.compile import build_state
from coxswain.shell.sources import MANIFEST_SUFFIXES, LoadError, read_manifests

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from coxswain.compile import ClusterState
    from coxswain.compile.model.manifests import SourcedBody

__all__ = ["POLL_INTERVAL", "fingerprint", "watch_manifests"]

POLL_INTERVAL: Final = 0.2

log = logging.getLogger("coxswain.serve")

Fingerprint = tuple[tuple[str, int, int, int], ...]


def fingerprint(roots: Sequence[str]) -> Fingerprint:
    """Path, size, mtime and inode of every manifest file under ``roots`` (folders or files),
    in path order."""
    paths: list[str] = []
    for root in roots:
        if os.path.isfile(root):
            paths.append(root)
        for directory, subdirectories, files in os.walk(root):
            subdirectories.sort()
            paths.extend(
                os.path.join(directory, name)
                for name in sorted(files)
                if Path(name).suffix.lower() in MANIFEST_SUFFIXES
            )
    found: list[tuple[str, int, int, int]] = []
    for path in paths:
        try:
            stat = os.stat(path)
        except FileNotFoundError:  # removed between the listing and the stat
            continue
        found.append((path, stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return tuple(found)


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
    seen: Fingerprint | None = None
    started = False
    while True:
        current = fingerprint(roots)
        if current != seen:
            seen = current
            try:
                bodies = read_manifests(list(roots))
            except LoadError as err:
                if not started:
                    raise
                log.error("%s; still serving the last good manifests", err)
            else:
                await on_state(build_state(bodies), bodies)
                if not started:
                    started = True
                    task_status.started()
        await trio.sleep(interval)
