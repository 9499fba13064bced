"""HPACK (coxswain/http2/hpack.py) against the examples of RFC 7541 Appendix C, its bounds, and
the ``hpack`` package's decoder on what our encoder writes."""

from __future__ import annotations

import hpack as reference
import pytest

from coxswain.http2.frames import COMPRESSION_ERROR, ENHANCE_YOUR_CALM
from coxswain.http2.hpack import (
    HUFFMAN_MEMO_BYTES,
    HUFFMAN_MEMO_STRINGS,
    MEMO_BYTES,
    MEMO_FIELDS,
    DecodeError,
    Decoder,
    Encoder,
    encode,
    huffman_decode,
)
from coxswain.http2.hpack_tables import HUFFMAN, STATIC


def decoder(**kwargs: int) -> Decoder:
    return Decoder(max_list_size=kwargs.pop("max_list_size", 65536), **kwargs)


def block(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# RFC 7541 C.3 (requests without Huffman coding) and C.4 (the same requests with it): three
# blocks on one connection each, the later ones indexing what the earlier ones inserted
FIRST = [(b":method", b"GET"), (b":scheme", b"http"), (b":path", b"/")]
FIRST.append((b":authority", b"www.example.com"))
SECOND = [*FIRST, (b"cache-control", b"no-cache")]
THIRD = [(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/index.html")]
THIRD += [(b":authority", b"www.example.com"), (b"custom-key", b"custom-value")]

PLAIN = [
    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
    "8286 84be 5808 6e6f 2d63 6163 6865",
    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
]
HUFFMAN_CODED = [
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
]


@pytest.mark.parametrize("blocks", [PLAIN, HUFFMAN_CODED], ids=["C.3", "C.4"])
def test_the_request_examples_of_appendix_c(blocks: list[str]) -> None:
    context = decoder()
    assert [context.decode(block(text)) for text in blocks] == [FIRST, SECOND, THIRD]
    # the dynamic table after C.3.3: custom-key, cache-control, :authority (newest first)
    assert context.decode(block("be bf c0")) == [
        (b"custom-key", b"custom-value"),
        (b"cache-control", b"no-cache"),
        (b":authority", b"www.example.com"),
    ]
    assert isinstance(context.decode(block("c1")), DecodeError)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
         (b"custom-key", b"custom-header")),
        ("040c 2f73 616d 706c 652f 7061 7468", (b":path", b"/sample/path")),
        ("1008 7061 7373 776f 7264 0673 6563 7265 74", (b"password", b"secret")),
        ("82", (b":method", b"GET")),
    ],
    ids=["C.2.1", "C.2.2", "C.2.3", "C.2.4"],
)  # fmt: skip
def test_the_field_examples_of_appendix_c(text: str, field: tuple[bytes, bytes]) -> None:
    assert decoder().decode(block(text)) == [field]


def test_a_table_smaller_than_an_entry_empties_and_a_size_update_evicts() -> None:
    context = decoder(max_table_size=100)
    assert context.decode(block(PLAIN[0])) == FIRST  # :authority www.example.com: 57 bytes
    assert context.decode(block("be")) == [(b":authority", b"www.example.com")]
    assert context.decode(block("3f 2a be")) == [(b":authority", b"www.example.com")]  # 73: kept
    assert isinstance(context.decode(block("20 be")), DecodeError)  # size 0 evicts it
    refused = context.decode(block("3f 46"))  # 101, above what the proxy advertised
    assert isinstance(refused, DecodeError)
    assert refused.code == COMPRESSION_ERROR
    assert isinstance(context.decode(block("82 20")), DecodeError)  # not at the block's start


def test_a_list_past_its_bound_stops_before_growing() -> None:
    context = decoder(max_list_size=200)
    big = reference.Encoder()
    first = big.encode([(b"x-bomb", b"b" * 100)])
    assert context.decode(first) == [(b"x-bomb", b"b" * 100)]
    bomb = context.decode(big.encode([(b"x-bomb", b"b" * 100)] * 2))  # two indexes, 276 bytes
    assert isinstance(bomb, DecodeError)
    assert bomb.code == ENHANCE_YOUR_CALM
    huge = decoder(max_list_size=50).decode(reference.Encoder().encode([(b"a", b"b" * 300)]))
    assert isinstance(huge, DecodeError)


@pytest.mark.parametrize(
    "text",
    [
        "80",  # index 0
        "ff ff ff ff ff 0f",  # an integer of five continuation bytes
        "ff 80",  # an integer cut short
        "40 05 61",  # a string longer than the block
        "40 81 ff 01 61",  # a Huffman name that is EOS's code
        "00 81 00 01 61",  # Huffman padding of zeros
    ],
)
def test_malformed_blocks_are_compression_errors(text: str) -> None:
    result = decoder().decode(block(text))
    assert isinstance(result, DecodeError)
    assert result.code == COMPRESSION_ERROR


def test_the_decoder_remembers_huffman_strings_and_decodes_alike_past_its_bound() -> None:
    """The same coded strings again, more distinct ones than it keeps (cleared, refilled), and
    longer ones than it keeps: every list as the reference wrote it; a bad coding is refused
    whatever the decoder remembers."""
    peer = reference.Encoder()
    ours = decoder()
    long = b"x" * (HUFFMAN_MEMO_BYTES * 2)
    for number in range(3 * HUFFMAN_MEMO_STRINGS):
        fields = [(b"server", b"nginx"), (b"x-number", str(number).encode()), (b"x-long", long)]
        for _ in range(2):
            coded = peer.encode(fields, huffman=True)
            assert ours.decode(coded) == fields
    bad = bytes([0x00, 0x81, 0x61, 0x81, 0xFF])  # literal, name "a" raw, value 8 bits of padding
    assert isinstance(ours.decode(bad), DecodeError)


def test_huffman_decodes_every_symbol_and_refuses_long_padding() -> None:
    every = bytes(range(256))
    coded = reference.Encoder().encode([(b"x", every)], huffman=True)
    assert decoder().decode(coded) == [(b"x", every)]
    assert huffman_decode(b"\xff") is None  # eight bits of padding
    assert huffman_decode(b"") == b""
    assert len(HUFFMAN) == 257
    assert len(STATIC) == 61


def test_our_encoder_is_read_by_the_reference_decoder() -> None:
    fields = [
        (b":status", b"200"),  # a static entry: one byte
        (b":status", b"418"),  # a static name
        (b"content-type", b"text/plain"),
        (b"www-authenticate", b"x"),  # index 61: the name's index spills over four bits
        (b"x-long", b"v" * 300),  # a length past its prefix
        (b"x-empty", b""),
    ]
    data = encode(fields)
    assert data[0] == 0x88
    assert reference.Decoder().decode(data, raw=True) == fields
    assert decoder().decode(data) == fields


def test_the_remembering_encoder_writes_what_encode_writes_within_its_bound() -> None:
    encoder = Encoder()
    fields = [(b":status", b"200"), (b"server", b"coxswain"), (b"x-big", b"v" * (MEMO_BYTES + 1))]
    assert encoder.encode(fields) == encoder.encode(fields) == encode(fields)
    for number in range(3 * MEMO_FIELDS):  # more fields than it keeps: cleared, refilled
        field = [(b"date", str(number).encode())]
        assert encoder.encode(field) == encode(field)
    assert encoder.encode(fields) == encode(fields)


def test_the_remembering_encoder_follows_a_list_changed_after_it_was_encoded() -> None:
    encoder = Encoder()
    fields = [(b":status", b"200"), (b"date", b"Sun, 06 Dec 2026 05:40:00 GMT")]
    first = encoder.encode(fields)
    fields[1] = (b"date", b"Sun, 06 Dec 2026 05:40:01 GMT")  # the caller's own list
    assert encoder.encode(fields) == encode(fields) != first
    assert encoder.encode([*fields, (b"x", b"y")]) == encode([*fields, (b"x", b"y")])
    assert encoder.encode(fields) == encode(fields)


def test_a_decoder_decodes_a_repeated_huffman_coding_alike() -> None:
    ours = decoder()
    theirs = reference.Encoder()
    for path in (b"/small", b"/small", b"/large", b"/small", b""):
        fields = [(b":path", path), (b"user-agent", path + b"-agent")]
        block = theirs.encode(
            [reference.NeverIndexedHeaderTuple(n, v) for n, v in fields], huffman=True
        )
        assert ours.decode(block) == fields
