"""A folder of manifests as the cluster: read it, and read again whatever changes in it.

``coxswain serve`` has no API server; its cluster state is the folder. On Linux, inotify tells
which files were written, renamed, removed or touched as it happens (:mod:`.inotify`): only
those are stat-ed, and the ones whose size, modification time or inode differs from the last
look are read again, alone (:mod:`.folder_state`). An event no single file stands for (a
folder created or removed, a symbolic link swapped as ConfigMap volumes do, the kernel's queue
overflowing) asks for a whole look: every manifest file stat-ed, new ones read, files gone
forgotten. A whole look also runs every ``RESCAN_INTERVAL`` seconds, for file systems that do
not report changes made elsewhere (network shares).

Where inotify is missing (another system, its limits reached), the folder is polled: whole
looks ``interval`` apart (0.05 s), or ten times what the last look cost when that is longer
(``POLL_SHARE``): looking takes at most about a tenth of a core, whatever the folder's size (a
stat of 10,000 files takes tens of ms). The looks and the reads run in a worker thread
(:mod:`coxswain.shell.offload`), so that a large folder never holds up the proxy's event loop.

A read that fails (a YAML syntax error, a file half written) is logged as ``file:line:
message`` and the last good state stays in force; the next change is read again. Only the very
first read is fatal: there is nothing to serve yet.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import trio

from coxswain.shell.offload import offload
from coxswain.shell.sources import MANIFEST_SUFFIXES, LoadError
from coxswain.shell.standalone.folder_state import FolderState, Stamp
from coxswain.shell.standalone.inotify import open_inotify

if TYPE_CHECKING:
    from collections.abc import Awaitable, Collection, Sequence

    from coxswain.compile import ClusterState
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.manifests import SourcedBody
    from coxswain.shell.standalone.inotify import Changes, Inotify

__all__ = ["POLL_INTERVAL", "POLL_SHARE", "RESCAN_INTERVAL", "fingerprint", "watch_manifests"]

POLL_INTERVAL: Final = 0.05
# POLICY: the share of a core that looking at the folder may take: looks are at least this many
# times their own cost apart (a stat of 10,000 files takes tens of ms).
POLL_SHARE: Final = 0.1
# POLICY: with inotify, the longest a change inotify does not report (a network share written
# from elsewhere) waits for a whole look.
RESCAN_INTERVAL: Final = 10.0

log = logging.getLogger("coxswain.serve")

Fingerprint = tuple[tuple[str, Stamp], ...]
Changed = Callable[["ClusterState", "ClusterState", "Collection[ObjectKey]"], None]
"""Told a state before a change, the state after and the keys it may have changed."""


def fingerprint(roots: Sequence[str]) -> Fingerprint:
    """Path and (size, mtime, inode) of every manifest file under ``roots`` (folders or
    files), in path order (a folder's files, then its subfolders', each sorted by name)."""
    return _survey(roots, lambda _directory: True)[0]


def _survey(roots: Sequence[str], watch: Callable[[str], bool]) -> tuple[Fingerprint, bool]:
    """The fingerprint, and whether ``watch`` took every folder it was taken from (a file
    root's own folder); each is handed to ``watch`` before it is listed, so that a change
    made while it is listed is either seen now or reported after."""
    found: list[tuple[str, Stamp]] = []
    watched = True
    for root in roots:
        if os.path.isfile(root):
            watched = watch(os.path.dirname(root) or ".") and watched
            _add(found, root)
        elif os.path.isdir(root):
            watched = _walk(root, found, watch) and watched
    return tuple(found), watched


def _walk(directory: str, found: list[tuple[str, Stamp]], watch: Callable[[str], bool]) -> bool:
    watched = watch(directory)
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:  # removed or unreadable since it was listed
        return watched
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
        watched = _walk(folder, found, watch) and watched
    return watched


def _add(found: list[tuple[str, Stamp]], path: str) -> None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:  # removed between the listing and the stat
        return
    found.append((path, (stat.st_size, stat.st_mtime_ns, stat.st_ino)))


def _look(roots: Sequence[str], watch: Callable[[str], bool]) -> tuple[Fingerprint, bool, float]:
    """The fingerprint, whether ``watch`` took every folder, and the CPU time it took this
    thread.

    Raises:
        LoadError: a root does not exist (a folder unmounted is not an empty cluster).
    """
    started = time.thread_time()
    for root in roots:
        if not os.path.exists(root):
            raise LoadError(f"{root}: no such file or directory")
    found, watched = _survey(roots, watch)
    return found, watched, time.thread_time() - started


def _relook(seen: Fingerprint, paths: set[str]) -> Fingerprint | None:
    """``seen`` with the stamps of ``paths`` taken again (a file gone is dropped; names that
    are no manifest are left out), or None when one is a manifest not seen yet: where it
    goes in the folder's order takes a whole look."""
    stamps = dict(seen)
    for path in paths:
        if path not in stamps:
            if os.path.splitext(path)[1].lower() in MANIFEST_SUFFIXES:
                return None
            continue
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            del stamps[path]
            continue
        stamps[path] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    return tuple(stamps.items())


def _unwatched(_directory: str) -> bool:
    return False


async def watch_manifests(
    roots: Sequence[str],
    on_state: Callable[[ClusterState, list[SourcedBody]], Awaitable[None]],
    *,
    interval: float = POLL_INTERVAL,
    notify: bool = True,
    changed: Changed | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Hand ``on_state`` the state of ``roots`` now and after every change; never returns.
    ``task_status.started()`` once the first state has been handled. ``notify``: follow
    changes through inotify where there is one (else: poll every ``interval``). ``changed``
    is told, before ``on_state``, the state before, the new one and the keys the files read
    held or hold (``compile.memo.CompileMemo.changed``: the memo then reads those keys rather
    than comparing every object of the two states).

    Raises:
        LoadError: the first read failed (``file:line: message``).
    """
    inotify = open_inotify() if notify else None
    try:
        await _follow(roots, on_state, interval, inotify, changed, task_status)
    finally:
        if inotify is not None:
            inotify.close()


async def _follow(
    roots: Sequence[str],
    on_state: Callable[[ClusterState, list[SourcedBody]], Awaitable[None]],
    interval: float,
    inotify: Inotify | None,
    changed_keys: Changed | None,
    task_status: trio.TaskStatus[None],
) -> None:
    folder = FolderState()
    seen: Fingerprint | None = None
    reported: str | None = None  # the last error logged: once, not at every look
    started = False
    watching = False  # every folder of the last whole look is watched
    changes: Changes | None = None  # what inotify said since the last look; None: look whole
    while True:
        cost = 0.0
        try:
            relooked = None
            if changes is not None and not changes.rescan and seen is not None:
                relooked = await offload(_relook, seen, changes.paths)
            if relooked is not None:
                current = relooked
            else:
                current, watching, cost = await offload(
                    _look, roots, _unwatched if inotify is None else inotify.watch
                )
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
            if changed and changed_keys is not None and folder.change is not None:
                changed_keys(*folder.change)
            if changed or not started:
                await on_state(folder.state, folder.bodies)
            if not started:
                started = True
                task_status.started()
        changes = None
        if inotify is None or not watching:
            await trio.sleep(max(interval, cost / POLL_SHARE))
            continue
        with trio.move_on_after(max(RESCAN_INTERVAL, cost / POLL_SHARE)):
            changes = await inotify.changes()
            while not changes.paths and not changes.rescan:  # only names no look reads
                changes = await inotify.changes()
