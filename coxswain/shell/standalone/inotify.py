"""Linux inotify for ``coxswain serve``'s manifest folder: which names changed, as they change.

Looking at a folder of 10,000 files costs a stat per file (tens of milliseconds), so a poll
must be spaced out, and a change waits for the next look. inotify(7) instead tells the event
loop, through one file descriptor, the names that were written (``IN_CLOSE_WRITE``), renamed
in or out, deleted, or had their attributes (modification time) changed, in each watched
directory: a change is read when it happens, and only the changed file is stat-ed.

The binding is the C library's through :mod:`ctypes` (the standard library has none). Where
there is no inotify (another system, an exhausted ``max_user_instances`` or
``max_user_watches``), :func:`open_inotify` gives ``None`` and the folder is polled
(:mod:`.manifest_folder`). Events it cannot attribute to one file (a directory created,
removed or renamed, a symbolic link swapped as Kubernetes ConfigMap volumes do, the kernel's
queue overflowing) ask for a whole look instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Final

import trio

__all__ = ["Changes", "Inotify", "open_inotify"]

_IN_ATTRIB: Final = 0x00000004
_IN_CLOSE_WRITE: Final = 0x00000008
_IN_MOVED_FROM: Final = 0x00000040
_IN_MOVED_TO: Final = 0x00000080
_IN_CREATE: Final = 0x00000100
_IN_DELETE: Final = 0x00000200
_IN_DELETE_SELF: Final = 0x00000400
_IN_MOVE_SELF: Final = 0x00000800
_IN_Q_OVERFLOW: Final = 0x00004000
_IN_IGNORED: Final = 0x00008000
_IN_ONLYDIR: Final = 0x01000000
_IN_ISDIR: Final = 0x40000000
# Not IN_MODIFY: a file being written is read once it is closed, not half written.
_MASK: Final = (
    _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
_HEADER: Final = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len
_READ_SIZE: Final = 65536


@dataclass(slots=True)
class Changes:
    """What the events read say: the paths of the files named, and whether something that
    no single file stands for happened (then the whole folder is looked at again)."""

    paths: set[str] = field(default_factory=set)
    rescan: bool = False


class Inotify:
    """One inotify instance and the directories it watches."""

    def __init__(self, fd: int, add_watch: ctypes._NamedFuncPointer) -> None:
        self._fd = fd
        self._add_watch = add_watch
        self._directories: dict[int, str] = {}  # watch descriptor → directory

    def watch(self, directory: str) -> bool:
        """Watch ``directory`` (again: a no-op); False when it cannot be (gone since it was
        listed, or the watch limit reached): events there may then be missed."""
        wd = self._add_watch(self._fd, os.fsencode(directory), _MASK | _IN_ONLYDIR)
        if wd < 0:
            return False
        self._directories[wd] = directory
        return True

    async def changes(self) -> Changes:
        """Wait for events, then return all those queued (a yield point even when some are
        queued already)."""
        await trio.lowlevel.wait_readable(self._fd)
        found = Changes()
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return found
            self._parse(data, found)

    def _parse(self, data: bytes, found: Changes) -> None:
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            start = offset + _HEADER.size
            name = os.fsdecode(data[start : start + length].rstrip(b"\0"))
            offset = start + length
            if mask & _IN_IGNORED:  # the directory is gone, or unmounted
                self._directories.pop(wd, None)
            if mask & (_IN_Q_OVERFLOW | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED):
                found.rescan = True
                continue
            directory = self._directories.get(wd)
            if directory is None or not name:
                continue
            path = os.path.join(directory, name)
            if mask & _IN_ISDIR or os.path.isdir(path):
                found.rescan = True  # a folder (or a link to one) came, went or was swapped
            elif not mask & _IN_CREATE:  # a file created is read when written and closed
                found.paths.add(path)

    def close(self) -> None:
        os.close(self._fd)


def open_inotify() -> Inotify | None:
    """A new inotify instance (non-blocking, closed on exec), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        init, add_watch = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
    add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    add_watch.restype = ctypes.c_int
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    return None if fd < 0 else Inotify(fd, add_watch)
