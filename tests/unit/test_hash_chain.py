"""``compile.hash_chain``: resuming SHA-256 after unchanged pieces gives a fresh hash's digest."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.hash_chain import HashChain

_PIECES = st.lists(st.one_of(st.binary(max_size=40_000), st.text(max_size=50)), max_size=12)


def _fresh(pieces: list[str | bytes]) -> str:
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(piece.encode() if isinstance(piece, str) else piece)
    return digest.hexdigest()


@given(st.lists(_PIECES, min_size=1, max_size=5))
def test_every_call_gives_the_digest_of_its_pieces(calls: list[list[str | bytes]]) -> None:
    chain = HashChain()
    for pieces in calls:
        assert chain.digest(pieces).hexdigest() == _fresh(pieces)


def test_a_change_after_a_long_unchanged_prefix_resumes_from_a_kept_digest() -> None:
    big = [bytes([i]) * 50_000 for i in range(8)]
    chain = HashChain()
    chain.digest(big)
    assert chain.marks  # digests were kept along the way
    changed = [*big[:6], b"other", *big[7:]]
    assert chain.digest(changed).hexdigest() == _fresh(changed)
    shorter = big[:3]
    assert chain.digest(shorter).hexdigest() == _fresh(shorter)
    assert chain.digest(big).hexdigest() == _fresh(big)
