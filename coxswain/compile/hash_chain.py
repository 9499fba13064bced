"""SHA-256 over a sequence of pieces, resumed after the pieces that did not change.

Why: docs/architecture.md, "The pure core" (``compile.memo``). A snapshot's version is the
SHA-256 of its pieces in a fixed order (``snapshot_json.head_digest``), and at 100,000 rules
the shared pool's pieces are tens of megabytes: hashing them all again for one edited route
was most of an edit's round. SHA-256 reads its input in order, and its state can be copied,
so a digest taken before the first piece that differs from the last call's is where hashing
starts again; everything before it is not read. The digest is the one a hash of every piece
gives.
"""

from __future__ import annotations

import hashlib
import operator
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Iterable

__all__ = ["HashChain", "PieceHash"]

_STRIDE: Final = 64 * 1024
"""Bytes hashed between two kept digests: resuming reads at most this much again, and the
digests kept number at most the pieces' size over it (plus one per piece larger than it)."""


@dataclass(slots=True)
class HashChain:
    """The pieces of the last ``digest`` call, and the digest before some of them (by piece
    index, increasing). Its owner (``compile.memo``) keeps one per scope; one caller at a time.
    """

    pieces: list[str | bytes] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)
    states: list[HASH] = field(default_factory=list)

    def digest(self, pieces: Iterable[str | bytes]) -> HASH:
        """The SHA-256 of ``pieces`` in order (a text piece as UTF-8), read from the first
        piece that is not the last call's piece at its place (the same object, or equal)."""
        now = list(pieces)
        earlier = self.pieces
        identical = list(map(operator.is_, now, earlier))  # at C speed: most pieces are
        same = 0
        while same < len(identical):
            try:
                same = identical.index(False, same)
            except ValueError:
                same = len(identical)
                break
            if now[same] != earlier[same]:
                break
            same += 1
        kept = bisect_right(self.marks, same)  # the marks at or before the first change
        if kept:
            start, digest = self.marks[kept - 1], self.states[kept - 1].copy()
        else:
            start, digest = 0, hashlib.sha256()
        marks, states = self.marks[:kept], self.states[:kept]
        since = 0
        for index in range(start, len(now)):
            if since >= _STRIDE and index > (marks[-1] if marks else 0):
                marks.append(index)
                states.append(digest.copy())
                since = 0
            piece = now[index]
            data = piece.encode() if isinstance(piece, str) else piece
            digest.update(data)
            since += len(data)
        self.pieces, self.marks, self.states = now, marks, states
        return digest


class PieceHash:
    """SHA-256 of pieces put in one by one, as ``list.append`` and ``extend`` would take them:
    what ``snapshot_json`` puts its pieces in when none is kept, so that the whole text is never
    held (14 MB at 10,000 rules, most of ``seal``'s peak)."""

    __slots__ = ("digest",)

    def __init__(self, digest: HASH) -> None:
        self.digest = digest

    def append(self, piece: str | bytes, /) -> None:
        self.digest.update(piece.encode() if isinstance(piece, str) else piece)

    def extend(self, pieces: Iterable[str | bytes], /) -> None:
        for piece in pieces:
            self.append(piece)
