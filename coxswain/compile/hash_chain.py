"""A snapshot's content hash: SHA-256 over the SHA-256 of each line, kept per piece.

Why: docs/architecture.md, "The pure core" (``compile.memo``). A snapshot's version hashes
its canonical content (``snapshot_json.head_digest``): newline-separated JSON texts, tens of
megabytes for the shared pool at 100,000 rules. Hashed as one stream, an edit re-read all
the content after the edited piece (the whole of it for the first route: ~50 ms of CPU in an
edit's round, docs/benchmarks.md, "Compiler: incremental rounds"). Hashed in two levels, the
SHA-256 of each line and then the SHA-256 of those digests in order, an edit reads its own
pieces' lines and the digests (32 bytes a line); the digests of a piece are kept while the
piece is the same object. Lines, not pieces, are the unit, so the digest does not depend on
how the content was cut into pieces (a kept table's pieces, or its text in one).
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Iterable

__all__ = ["HashChain", "PieceHash", "line_digests"]


def line_digests(piece: str | bytes) -> bytes:
    """The SHA-256 digests of ``piece``'s lines (a text piece as UTF-8; each line without its
    newline, and what follows the last newline as a line of its own when not empty), in
    order, concatenated."""
    data = piece.encode() if isinstance(piece, str) else piece
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()
    sha256 = hashlib.sha256
    return b"".join([sha256(line).digest() for line in lines])


@dataclass(slots=True)
class HashChain:
    """The pieces of the last ``digest`` call and their line digests. Its owner
    (``compile.memo``) keeps one per scope; one caller at a time."""

    pieces: list[str | bytes] = field(default_factory=list)
    digests: list[bytes] = field(default_factory=list)

    def digest(self, pieces: Iterable[str | bytes]) -> HASH:
        """The content hash of ``pieces`` in order, as ``PieceHash`` gives it; a piece that
        is an object of the last call keeps its line digests."""
        now, earlier = list(pieces), self.pieces
        head = _same_prefix(now, earlier)
        tail = _same_prefix(now[head:][::-1], earlier[head:][::-1])
        inside = slice(head, len(earlier) - tail)
        # the last call's pieces are alive in self.pieces, so an id names one object here
        known = dict(zip(map(id, earlier[inside]), self.digests[inside], strict=True))
        digests = [
            *self.digests[:head],
            *[known.get(id(piece)) or line_digests(piece) for piece in now[head : len(now) - tail]],
            *self.digests[len(earlier) - tail :],
        ]
        self.pieces, self.digests = now, digests
        return hashlib.sha256(b"".join(digests))


def _same_prefix(now: list[str | bytes], earlier: list[str | bytes]) -> int:
    """How many pieces at the start of ``now`` are those of ``earlier`` at their places,
    compared at C speed (an edit leaves most pieces where they were)."""
    same = list(map(operator.is_, now, earlier))
    try:
        return same.index(False)
    except ValueError:
        return len(same)


class PieceHash:
    """The content hash of pieces put in one by one, as ``list.append`` and ``extend`` would
    take them: what ``snapshot_json`` puts its pieces in when none is kept, so that the whole
    text is never held (14 MB at 10,000 rules, most of ``seal``'s peak)."""

    __slots__ = ("digest",)

    def __init__(self, digest: HASH) -> None:
        self.digest = digest

    def append(self, piece: str | bytes, /) -> None:
        self.digest.update(line_digests(piece))

    def extend(self, pieces: Iterable[str | bytes], /) -> None:
        for piece in pieces:
            self.append(piece)
