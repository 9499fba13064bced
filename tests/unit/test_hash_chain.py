"""``compile.hash_chain``: the content hash is SHA-256 over each line's SHA-256, whatever the
cut into pieces, and a chain that keeps the last call's pieces gives the same digest while
digesting again only the pieces that are not the last call's objects."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.hash_chain import HashChain, PieceHash

_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=30)
_PIECE = st.lists(_LINE, min_size=1, max_size=6).map(lambda lines: "".join(f"{x}\n" for x in lines))
_PIECES = st.lists(st.one_of(_PIECE, _PIECE.map(str.encode)), max_size=12)


def _by_definition(pieces: list[str | bytes]) -> str:
    text = b"".join(p.encode() if isinstance(p, str) else p for p in pieces)
    lines = text.split(b"\n")[:-1]  # every piece ends its last line
    return hashlib.sha256(b"".join(hashlib.sha256(x).digest() for x in lines)).hexdigest()


@given(st.lists(_PIECES, min_size=1, max_size=5))
def test_every_call_gives_the_digest_of_its_lines(calls: list[list[str | bytes]]) -> None:
    chain = HashChain()
    for pieces in calls:
        assert chain.digest(pieces).hexdigest() == _by_definition(pieces)
        hashed = PieceHash(hashlib.sha256())
        hashed.extend(pieces)
        assert hashed.digest.hexdigest() == _by_definition(pieces)


@given(_PIECES)
def test_the_cut_into_pieces_does_not_change_the_digest(pieces: list[str | bytes]) -> None:
    joined = "".join(p if isinstance(p, str) else p.decode() for p in pieces)
    assert HashChain().digest([joined]).hexdigest() == _by_definition(pieces)


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
    equal_copy = [p.encode() if isinstance(p, str) else p for p in edited]
    assert chain.digest(equal_copy).hexdigest() == _by_definition(edited)


def test_text_after_the_last_newline_is_a_line_of_its_own() -> None:
    assert HashChain().digest(["a\nb"]).hexdigest() == _by_definition(["a\nb\n"])
