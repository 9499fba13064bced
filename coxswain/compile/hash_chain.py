"""A snapshot's content hash: SHA-256 over the SHA-256 of each piece, kept per piece.

Why: docs/architecture.md, "The pure core" (``compile.memo``). A snapshot's version hashes
its canonical content (``snapshot_json.head_digest``), tens of megabytes for the shared pool
at 100,000 rules. Hashed as one stream, an edit re-read all the content after the edited
piece (the whole of it for the first route: ~50 ms of CPU in an edit's round). Hashed in two
levels, the SHA-256 of each piece and then the SHA-256 of those digests in order, an edit
digests its own pieces and 32 bytes for every other one; a piece's digest is kept while the
piece is the same object.

The cut into pieces is part of the definition, so ``snapshot_json`` cuts the content alike
whether its texts are kept or not: one piece per Ingress virtual host, per listener table's
head, per host of a table, per count, health entry, client CA and certificate. A piece is
hashed whole, in one call: a piece of more than a couple of kilobytes is hashed with the
interpreter lock released, so the controller's event loop runs while its worker thread
hashes a cold compile's.
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Iterable

__all__ = ["HashChain", "PieceHash", "piece_digest"]


def piece_digest(piece: str | bytes) -> bytes:
    """The SHA-256 digest of ``piece`` (a text piece as UTF-8)."""
    return hashlib.sha256(piece.encode() if isinstance(piece, str) else piece).digest()


@dataclass(slots=True)
class HashChain:
    """The pieces of the last ``digest`` call and their digests. Its owner (``compile.memo``)
    keeps one per scope; one caller at a time."""

    pieces: list[str | bytes] = field(default_factory=list)
    digests: list[bytes] = field(default_factory=list)

    def digest(self, pieces: Iterable[str | bytes]) -> HASH:
        """The content hash of ``pieces`` in order, as ``PieceHash`` gives it; a piece that
        is an object of the last call keeps its digest."""
        now, earlier = list(pieces), self.pieces
        head = _same_prefix(now, earlier)
        tail = _same_prefix(now[head:][::-1], earlier[head:][::-1])
        inside = slice(head, len(earlier) - tail)
        # the last call's pieces are alive in self.pieces, so an id names one object here
        known = dict(zip(map(id, earlier[inside]), self.digests[inside], strict=True))
        digests = [
            *self.digests[:head],
            *[known.get(id(piece)) or piece_digest(piece) for piece in now[head : len(now) - tail]],
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
        self.digest.update(piece_digest(piece))

    def extend(self, pieces: Iterable[str | bytes], /) -> None:
        for piece in pieces:
            self.append(piece)
