"""Statuses remembered per object between ``status`` calls (``gateway.status.StatusCache``).

Why: docs/architecture.md, "The pure core" (``compile.memo``). After a change to one route the
patched analysis (``analysis_memo``) keeps every other route's verdict and every listener
verdict, so the status of each object whose inputs are the same objects is the one computed
before; only the changed route's and the Gateways whose attached-route counts moved are made
again. Entries not asked for by the last call are dropped, so the memory never outgrows one
status list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from coxswain.compile.status import ObjectStatus

__all__ = ["StatusMemory"]


@dataclass(frozen=True, slots=True)
class _Made:
    same: tuple[object, ...]
    equal: Hashable
    status: ObjectStatus


class StatusMemory:
    """A ``gateway.status.StatusCache`` over the calls of one ``CompileMemo``."""

    def __init__(self) -> None:
        self.made_again = 0  # statuses made rather than reused, since creation
        self._now: dict[tuple[str, str, str], _Made] = {}
        self._older: dict[tuple[str, str, str], _Made] = {}

    def begin(self) -> None:
        """A new ``status`` call: what the last one did not ask for is dropped after it."""
        self._older, self._now = self._now, {}

    def made(
        self,
        key: tuple[str, str, str],
        same: tuple[object, ...],
        equal: Hashable,
        make: Callable[[], ObjectStatus],
    ) -> ObjectStatus:
        """``gateway.status.StatusCache.made``."""
        entry = self._now.get(key) or self._older.get(key)
        if (
            entry is None
            or len(entry.same) != len(same)
            or any(a is not b for a, b in zip(entry.same, same, strict=True))
            or entry.equal != equal
        ):
            self.made_again += 1
            entry = _Made(same, equal, make())
        self._now[key] = entry
        return entry.status
