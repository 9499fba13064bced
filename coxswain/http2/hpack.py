"""HPACK, header compression for HTTP/2 (RFC 7541): the decoder of a server's requests and the
encoder of its responses. Pure.

Decoder (:class:`Decoder`), every input hostile:

- the dynamic table holds at most the size the proxy advertised (``SETTINGS_HEADER_TABLE_SIZE``,
  RFC 7541 §4.2); a size update above it is a ``COMPRESSION_ERROR``;
- integers are at most four continuation bytes long (RFC 7541 §5.1 lets them be unbounded; a
  peer gains nothing from more), strings no longer than the block that carries them;
- the decoded header list is bounded **before** a field is added (``max_list_size``, counted as
  RFC 9113 §6.5.2 counts it: name, value and 32 bytes per field): a few bytes of indexed fields
  that would decode to megabytes (an "HPACK bomb") stop at the bound with ``ENHANCE_YOUR_CALM``;
- Huffman strings (RFC 7541 §5.2) decode four bits at a time through a table built once from the
  code (:data:`~.hpack_tables.HUFFMAN`): linear in the input, padding checked, EOS refused;
  a connection's decoder remembers the short ones it decoded (a peer sends its ``server``,
  ``content-type``, this second's ``date`` coded alike on every message): at most
  :data:`HUFFMAN_MEMO_STRINGS` of at most :data:`HUFFMAN_MEMO_BYTES` coded bytes, forgotten all
  at once when full, so that a peer sending ever new strings makes it no larger.

Encoder (:func:`encode`): a field that is an entry of the static table is that entry's index, a
field whose name is one is "literal without indexing" with the name's index, any other a literal
without indexing with its name (RFC 7541 §6.1, §6.2.2). No dynamic table and no Huffman: the
proxy's responses spend no CPU on compression, and the client's table size never matters.
"""

from __future__ import annotations

from typing import Final

from coxswain.http2.frames import COMPRESSION_ERROR, ENHANCE_YOUR_CALM
from coxswain.http2.hpack_tables import HUFFMAN, STATIC

__all__ = [
    "HUFFMAN_MEMO_BYTES",
    "HUFFMAN_MEMO_STRINGS",
    "MEMO_BYTES",
    "MEMO_FIELDS",
    "DecodeError",
    "Decoder",
    "Encoder",
    "encode",
    "huffman_decode",
]

_STATIC_SIZE: Final = len(STATIC)
_PAIRS: Final = {pair: index + 1 for index, pair in reversed(list(enumerate(STATIC)))}
_NAMES: Final = {name: index + 1 for index, (name, _) in reversed(list(enumerate(STATIC)))}
_ENTRY_OVERHEAD: Final = 32  # RFC 7541 §4.1
HUFFMAN_MEMO_STRINGS: Final = 32
HUFFMAN_MEMO_BYTES: Final = 64


def _huffman_machine() -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The Huffman code as a machine that reads four bits at a time. States are the inner nodes
    of the code's tree; a transition is ``next << 9 | emitted << 8 | symbol``, or -1 when EOS is
    decoded. A code is at least five bits long, so a nibble completes at most one symbol. A state
    accepts the end of a string when its path from the root is at most seven 1 bits (padding with
    the most significant bits of EOS, RFC 7541 §5.2)."""
    children: list[list[int]] = [[-1, -1]]
    leaves: dict[int, int] = {}  # node -> symbol
    for symbol, (code, length) in enumerate(HUFFMAN):
        node = 0
        for shift in range(length - 1, -1, -1):
            bit = (code >> shift) & 1
            child = children[node][bit]
            if child < 0:
                child = len(children)
                children.append([-1, -1])
                children[node][bit] = child
            node = child
        leaves[node] = symbol
    inner = [node for node in range(len(children)) if node not in leaves]
    state_of = {node: state for state, node in enumerate(inner)}
    ones = {0: 0}  # node -> depth, for nodes reached by 1 bits only
    node, depth = 0, 0
    while children[node][1] >= 0 and children[node][1] not in leaves:
        node, depth = children[node][1], depth + 1
        ones[node] = depth
    table: list[int] = []
    for node in inner:
        for nibble in range(16):
            current, emitted, symbol = node, 0, 0
            for shift in (3, 2, 1, 0):
                current = children[current][(nibble >> shift) & 1]
                if current in leaves:
                    symbol = leaves[current]
                    emitted = 1
                    current = 0
            table.append(
                -1 if emitted and symbol == 256 else state_of[current] << 9 | emitted << 8 | symbol
            )
    accepting = tuple(node in ones and ones[node] <= 7 for node in inner)
    return tuple(table), accepting


_MACHINE, _ACCEPTING = _huffman_machine()


def huffman_decode(data: bytes) -> bytes | None:
    """The string Huffman-coded in ``data``, or None when it is not a valid coding (EOS, or
    padding that is not the start of EOS, or longer than seven bits)."""
    machine = _MACHINE
    out = bytearray()
    state = 0
    for byte in data:
        step = machine[state << 4 | byte >> 4]
        if step < 0:
            return None
        if step & 0x100:
            out.append(step & 0xFF)
        step = machine[(step >> 9) << 4 | byte & 0xF]
        if step < 0:
            return None
        if step & 0x100:
            out.append(step & 0xFF)
        state = step >> 9
    if not _ACCEPTING[state]:
        return None
    return bytes(out)


class DecodeError:
    """Why a header block cannot be decoded: the connection error's ``code``
    (``COMPRESSION_ERROR`` or ``ENHANCE_YOUR_CALM``) and a phrase."""

    __slots__ = ("code", "reason")

    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason


class Decoder:
    """The decoding context of one connection: its dynamic table (RFC 7541 §2.3.2)."""

    __slots__ = ("_entries", "_huffman", "_size", "max_list_size", "max_table_size", "table_size")

    def __init__(self, *, max_table_size: int = 4096, max_list_size: int) -> None:
        self.max_table_size = max_table_size
        """What the proxy advertised: the most a size update may ask for."""
        self.table_size = max_table_size
        """The size in force (RFC 7541 §4.2)."""
        self.max_list_size = max_list_size
        self._entries: list[tuple[bytes, bytes]] = []  # newest last
        self._size = 0
        self._huffman: dict[bytes, bytes] = {}  # coded -> decoded, the module's memo

    def decode(self, block: bytes) -> list[tuple[bytes, bytes]] | DecodeError:
        """The header list of one complete header block."""
        fields: list[tuple[bytes, bytes]] = []
        total = 0
        at = 0
        end = len(block)
        limit = self.max_list_size
        memo = self._huffman
        while at < end:
            first = block[at]
            if first & 0x80:  # indexed field (§6.1)
                if first != 0xFF:
                    index = first & 0x7F
                    at += 1
                else:
                    index, at = _integer(block, at, 7)
                field = self._field(index)
                if field is None:
                    return DecodeError(COMPRESSION_ERROR, "invalid index")
            elif first & 0xE0 == 0x20:  # dynamic table size update (§6.3)
                size, at = _integer(block, at, 5)
                if size < 0 or size > self.max_table_size or fields:
                    return DecodeError(COMPRESSION_ERROR, "invalid table size update")
                self.table_size = size
                self._evict(0)
                continue
            else:  # literal: with incremental indexing (§6.2.1), without, never indexed
                indexing = first & 0x40
                index, at = _integer(block, at, 6 if indexing else 4)
                if index < 0:
                    return DecodeError(COMPRESSION_ERROR, "invalid integer")
                if index:
                    named = self._field(index)
                    if named is None:
                        return DecodeError(COMPRESSION_ERROR, "invalid index")
                    name = named[0]
                else:
                    text, at = _string(block, at, limit, memo)
                    if text is None:
                        return DecodeError(COMPRESSION_ERROR, "invalid string")
                    name = text
                value, at = _string(block, at, limit, memo)
                if value is None:
                    return DecodeError(COMPRESSION_ERROR, "invalid string")
                field = (name, value)
                if indexing:
                    self._add(field)
            total += len(field[0]) + len(field[1]) + _ENTRY_OVERHEAD
            if total > limit:
                return DecodeError(ENHANCE_YOUR_CALM, "header list larger than advertised")
            fields.append(field)
        return fields

    def _field(self, index: int) -> tuple[bytes, bytes] | None:
        if index <= 0:
            return None
        if index <= _STATIC_SIZE:
            return STATIC[index - 1]
        entries = self._entries
        position = len(entries) - (index - _STATIC_SIZE)
        if position < 0:
            return None
        return entries[position]

    def _add(self, field: tuple[bytes, bytes]) -> None:
        """Insert at the front of the dynamic table, evicting what no longer fits (§4.4)."""
        size = len(field[0]) + len(field[1]) + _ENTRY_OVERHEAD
        if size > self.table_size:
            self._entries.clear()
            self._size = 0
            return
        self._evict(size)
        self._entries.append(field)
        self._size += size

    def _evict(self, room: int) -> None:
        entries = self._entries
        drop = 0
        size = self._size
        while size + room > self.table_size:
            name, value = entries[drop]
            size -= len(name) + len(value) + _ENTRY_OVERHEAD
            drop += 1
        if drop:
            del entries[:drop]
            self._size = size


def _integer(block: bytes, at: int, prefix: int) -> tuple[int, int]:
    """The integer with a ``prefix``-bit prefix at ``at`` (RFC 7541 §5.1) and where it ends;
    -1 when it is cut short or longer than four continuation bytes."""
    mask = (1 << prefix) - 1
    value = block[at] & mask
    at += 1
    if value < mask:
        return value, at
    shift = 0
    while at < len(block) and shift <= 21:
        byte = block[at]
        at += 1
        value += (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
    return -1, len(block)


def _string(
    block: bytes, at: int, limit: int, memo: dict[bytes, bytes]
) -> tuple[bytes | None, int]:
    """The string literal at ``at`` (RFC 7541 §5.2) and where it ends; None when it is cut
    short, badly coded, or would decode past ``limit`` bytes. A short Huffman string is looked
    up in, or added to, the decoder's ``memo``."""
    if at >= len(block):
        return None, at
    huffman = block[at] & 0x80
    length, at = _integer(block, at, 7)
    if length < 0 or at + length > len(block):
        return None, at
    raw = block[at : at + length]
    at += length
    if not huffman:
        return raw, at
    if length * 8 // 5 > limit:  # the longest a string of that many bytes decodes to
        return None, at
    if length > HUFFMAN_MEMO_BYTES:
        return huffman_decode(raw), at
    text = memo.get(raw)
    if text is None:
        text = huffman_decode(raw)
        if text is not None:
            if len(memo) >= HUFFMAN_MEMO_STRINGS:
                memo.clear()
            memo[raw] = text
    return text, at


def encode(fields: list[tuple[bytes, bytes]]) -> bytes:
    """A header block for ``fields`` (names in lower case), without the dynamic table."""
    out = bytearray()
    pairs = _PAIRS
    names = _NAMES
    for field in fields:
        index = pairs.get(field, 0)
        if index:
            out.append(0x80 | index)  # every static index is below 127
            continue
        name, value = field
        index = names.get(name, 0)
        if index:
            if index < 15:
                out.append(index)
            else:
                out.append(15)
                out.append(index - 15)
        else:
            out.append(0)
            _literal(out, name)
        _literal(out, value)
    return bytes(out)


class Encoder:
    """:func:`encode` with a memory of the fields a connection sends again and again (its
    ``server``, ``content-type``, this second's ``date``…): at most :data:`MEMO_FIELDS` of at
    most :data:`MEMO_BYTES` each, forgotten all at once when full; and the last list with its
    block, since a connection's responses (or requests) repeat whole lists. The output is
    :func:`encode`'s."""

    __slots__ = ("_last", "_last_block", "_memo")

    def __init__(self) -> None:
        self._memo: dict[tuple[bytes, bytes], bytes] = {}
        self._last: list[tuple[bytes, bytes]] = []
        self._last_block = b""

    def encode(self, fields: list[tuple[bytes, bytes]]) -> bytes:
        if fields == self._last and self._last_block:
            return self._last_block
        block = self._encode(fields)
        self._last = list(fields)  # the caller's list may change after
        self._last_block = block
        return block

    def _encode(self, fields: list[tuple[bytes, bytes]]) -> bytes:
        memo = self._memo
        parts = []
        for field in fields:
            piece = memo.get(field)
            if piece is None:
                piece = encode([field])
                if len(piece) <= MEMO_BYTES:
                    if len(memo) >= MEMO_FIELDS:
                        memo.clear()
                    memo[field] = piece
            parts.append(piece)
        return b"".join(parts)


MEMO_FIELDS: Final = 64
MEMO_BYTES: Final = 256


def _literal(out: bytearray, text: bytes) -> None:
    """A string literal without Huffman coding (RFC 7541 §5.2)."""
    length = len(text)
    if length < 127:
        out.append(length)
    else:
        out.append(127)
        length -= 127
        while length >= 128:
            out.append(length & 0x7F | 0x80)
            length >>= 7
        out.append(length)
    out += text
