"""Our HPACK decoder (coxswain/http2/hpack.py) reads what the ``hpack`` package's encoder
writes, and the package's decoder reads what ours writes: random header lists, several blocks
on one context (so the dynamic table's insertions and evictions are exercised), with and
without Huffman coding."""

from __future__ import annotations

import hpack as reference
from hypothesis import given
from hypothesis import strategies as st

from coxswain.http2.hpack import Decoder, encode

NAMES = st.one_of(
    st.sampled_from([b":path", b":authority", b"user-agent", b"cookie", b"x-a"]),
    st.binary(min_size=1, max_size=20).map(bytes.lower),
)
FIELDS = st.lists(st.tuples(NAMES, st.binary(max_size=300)), max_size=12)


@given(st.lists(st.tuples(FIELDS, st.booleans()), min_size=1, max_size=4), st.integers(0, 4096))
def test_our_decoder_agrees_with_the_reference_encoder(
    blocks: list[tuple[list[tuple[bytes, bytes]], bool]], table: int
) -> None:
    encoder = reference.Encoder()
    encoder.header_table_size = table  # a size update at the start of the next block
    decoder = Decoder(max_list_size=1 << 20)
    for fields, huffman in blocks:
        assert decoder.decode(encoder.encode(fields, huffman=huffman)) == fields


@given(FIELDS)
def test_the_reference_decoder_agrees_with_our_encoder(fields: list[tuple[bytes, bytes]]) -> None:
    assert reference.Decoder().decode(encode(fields), raw=True) == fields
