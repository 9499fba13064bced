"""``compile.hash_chain``: the content hash is SHA-256 over each piece's SHA-256, and a chain
that keeps the last call's pieces gives the same digest while digesting again only the pieces
that are not the last call's objects."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.hash_chain import HashChain, PieceHash

_PIECE = st.one_of(st.binary(max_size=5_000), st.text(max_size=50))
_PIECES = st.lists(_PIECE, max_size=12)


def _by_definition(pieces: list[str | bytes]) -> str:
    digests = (hashlib.sha256(p.encode() if isinstance(p, str) else p).digest() for p in pieces)
    return hashlib.sha256(b"".join(digests)).hexdigest()


@given(st.lists(_PIECES, min_size=1, max_size=5))
def test_every_call_gives_the_digest_of_its_pieces(calls: list[list[str | bytes]]) -> None:
    chain = HashChain()
    for pieces in calls:
        assert chain.digest(pieces).hexdigest() == _by_definition(pieces)
        hashed = PieceHash(hashlib.sha256())
        hashed.extend(pieces)
        assert hashed.digest.hexdigest() == _by_definition(pieces)


@given(_PIECES, st.data())
def test_kept_pieces_moved_or_mixed_with_new_ones_give_the_digest(
    pieces: list[str | bytes], data: st.DataObject
) -> None:
    chain = HashChain()
    chain.digest(pieces)
    kept = data.draw(st.lists(st.sampled_from(pieces), max_size=12)) if pieces else []
    fresh = data.draw(st.lists(_PIECE, max_size=4))
    mixed = data.draw(st.permutations([*kept, *fresh]))
    assert chain.digest(mixed).hexdigest() == _by_definition(mixed)


def test_only_pieces_that_are_not_the_last_calls_objects_are_digested_again() -> None:
    pieces: list[str | bytes] = [f"piece {i}\nline two\n" for i in range(6)]
    chain = HashChain()
    chain.digest(pieces)
    kept = list(chain.digests)
    edited = [*pieces[:2], "edited\n", *pieces[3:]]
    assert chain.digest(edited).hexdigest() == _by_definition(edited)
    assert [a is b for a, b in zip(chain.digests, kept, strict=True)] == [
        True, True, False, True, True, True
    ]  # fmt: skip
    moved = [edited[0], edited[3], "new\n", edited[2], edited[5]]
    assert chain.digest(moved).hexdigest() == _by_definition(moved)
    assert chain.digests[1] is kept[3]
    assert chain.digests[4] is kept[5]
    equal_copy = [p.encode() if isinstance(p, str) else p for p in moved]
    assert chain.digest(equal_copy).hexdigest() == _by_definition(moved)
