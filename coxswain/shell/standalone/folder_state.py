"""The cluster state of a folder of manifests, kept current file by file.

``coxswain serve`` re-reads its folder at each change (:mod:`.manifest_folder`). Reading,
parsing and decoding every file again made a one-file change cost the whole folder; here only
the files whose (size, modification time, inode) changed are read, parsed and decoded, and the
state is brought up to date with ``compile.model.state.apply`` for the keys those files held or
hold, as the controller applies its informers' events. Unchanged objects stay the very objects
they were, so that ``compile.memo`` sees by identity what did not change
(docs/architecture.md, "Rules of the core").

The result equals ``build_state`` of every file's bodies (``tests/unit/test_folder_state.py``
checks it over random edits), including what ``build_state`` decides across files:

- a key held by more than one body keeps the body ``build_state`` keeps (decided by
  ``build_state`` over the files that hold the key);
- the input diagnostics (bodies that are no object, kinds not read, duplicated keys) are
  ``build_state``'s over the files that have any of their own and the files that hold a
  duplicated key; none when there are none, which is the usual case, at no cost.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pyrsistent import pvector

from coxswain.compile import ClusterState, build_state
from coxswain.compile.model.state import TABLE_NAMES, TABLES, Deleted, Upserted, apply
from coxswain.shell.sources import read_file

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from pyrsistent.typing import PVector

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.decode import StateObject
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.manifests import SourcedBody

__all__ = ["FolderState", "Stamp"]

Stamp = tuple[int, int, int]
"""A file's size, modification time (ns) and inode: a different one means "read it again"."""


@dataclass(frozen=True, slots=True)
class _File:
    """One file as last read: its bodies, the objects they decode to, and whether decoding it
    alone gave input diagnostics."""

    stamp: Stamp
    bodies: list[SourcedBody]
    objects: dict[ObjectKey, StateObject]
    troubled: bool


class FolderState:
    """The state of the files last given to :meth:`update`, and their bodies."""

    def __init__(self) -> None:
        self.state = ClusterState()
        self._files: dict[str, _File] = {}
        self._providers: dict[ObjectKey, list[str]] = {}  # key → the files holding it
        self.read = 0  # files read by the last update
        # the last update that changed something: the state before, the state after, and
        # the keys it may have changed (what ``compile.memo.CompileMemo.changed`` is told)
        self.change: tuple[ClusterState, ClusterState, frozenset[ObjectKey]] | None = None

    @property
    def bodies(self) -> list[SourcedBody]:
        """Every file's bodies, in the order the files were given."""
        return [body for file in self._files.values() for body in file.bodies]

    def update(self, files: Sequence[tuple[str, Stamp]]) -> bool:
        """Bring the state to ``files`` (path and stamp, in the folder's order): read the new
        and changed ones, forget the ones gone. Whether the state or the bodies changed.

        Raises:
            LoadError: a file that changed cannot be read or parsed (``file:line: message``);
                nothing was changed then.
        """
        stamps = dict(files)
        fresh = {
            path: _read(path, stamp)
            for path, stamp in stamps.items()
            if path not in self._files or self._files[path].stamp != stamp
        }
        gone = [path for path in self._files if path not in stamps]
        self.read = len(fresh)
        if not fresh and not gone and list(stamps) == list(self._files):
            return False
        touched: set[ObjectKey] = set()
        for path in [*gone, *fresh]:
            if (old := self._files.get(path)) is not None:
                for key in old.objects:
                    self._providers[key].remove(path)
                    touched.add(key)
        for path, new in fresh.items():
            for key in new.objects:
                self._providers.setdefault(key, []).append(path)
                touched.add(key)
        previous = self._files
        self._files = {path: fresh.get(path) or previous[path] for path in stamps}
        state = base = self.state
        for key in sorted(touched):
            state = apply(state, self._event(key))
        self.state = self._diagnosed(state)
        self.change = (base, self.state, frozenset(touched))
        return True

    def _event(self, key: ObjectKey) -> Upserted | Deleted:
        """What the files now say of ``key``."""
        holders = self._providers.get(key)
        if not holders:
            self._providers.pop(key, None)
            return Deleted(key)
        if len(holders) == 1:
            return Upserted(self._files[holders[0]].objects[key])
        kept = build_state(self._bodies_of(holders))
        return Upserted(getattr(kept, TABLES[key.kind])[key])

    def _diagnosed(self, state: ClusterState) -> ClusterState:
        """``state`` with ``build_state``'s input diagnostics of every file."""
        concerned = {path for path, file in self._files.items() if file.troubled}
        for holders in self._providers.values():
            if len(holders) > 1:
                concerned.update(holders)
        found: PVector[Diagnostic] = pvector()
        if concerned:
            in_order = [path for path in self._files if path in concerned]
            found = build_state(self._bodies_of(in_order)).input_diagnostics
        if found == state.input_diagnostics:
            return state
        return replace(state, input_diagnostics=found)

    def _bodies_of(self, paths: Iterable[str]) -> list[SourcedBody]:
        return [body for path in paths for body in self._files[path].bodies]


def _read(path: str, stamp: Stamp) -> _File:
    """One file read, parsed and decoded alone.

    Raises:
        LoadError: it cannot be read or parsed.
    """
    bodies = read_file(path)
    alone = build_state(bodies)
    objects = {key: obj for name in TABLE_NAMES for key, obj in getattr(alone, name).items()}
    return _File(stamp, bodies, objects, troubled=bool(alone.input_diagnostics))
