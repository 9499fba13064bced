"""The hashed texts of a snapshot's pieces kept from one use to the next (``compile.memo``).

Why: docs/architecture.md, "The pure core": a reused rule or listener table is not encoded
again for the snapshot's content hash (``snapshot_json``), and texts no longer used are dropped.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Texts"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class Texts(MutableMapping[_K, _V]):
    """Texts (``snapshot_json``'s ``RuleTexts``, ``TableTexts``) used now,
    falling back on those used the time before: texts the last use did not ask for are
    dropped, so the map never outgrows what one snapshot holds."""

    def __init__(self, older: dict[_K, _V]) -> None:
        self.now: dict[_K, _V] = {}
        self.older = older

    def __getitem__(self, key: _K) -> _V:
        found = self.now.get(key)
        if found is None:
            found = self.now[key] = self.older[key]
        return found

    def __setitem__(self, key: _K, value: _V) -> None:
        self.now[key] = value

    def __delitem__(self, key: _K) -> None:
        del self.now[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self.now)

    def __len__(self) -> int:
        return len(self.now)
