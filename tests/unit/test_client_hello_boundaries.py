"""Exact edges of the ClientHello reader (coxswain/route/client_hello.py): the extensions
block (RFC 8446 §4.1.2) and the server_name extension's ServerNameList (RFC 6066 §3), built
byte by byte here so that each length can sit one past where it should."""

from __future__ import annotations

from coxswain.route.client_hello import (
    MAX_HELLO,
    Hello,
    HelloReader,
    NeedMore,
    NotHello,
    parse_client_hello,
)

MALFORMED = NotHello("a malformed server_name extension")
NOT_ASCII = NotHello("a server name that is not an ASCII host name")


def u16(n: int) -> bytes:
    return n.to_bytes(2, "big")


def entry(kind: int, name: bytes) -> bytes:
    return bytes([kind]) + u16(len(name)) + name


def server_names(*entries: bytes, listed: int | None = None) -> bytes:
    body = b"".join(entries)
    return u16(len(body) if listed is None else listed) + body


def extension(kind: int, data: bytes) -> bytes:
    return u16(kind) + u16(len(data)) + data


def hello(*extensions: bytes, declared: int | None = None) -> bytes:
    """A ClientHello body: version, random, empty session id, one suite, one compression."""
    block = b"".join(extensions)
    head = b"\x03\x03" + bytes(32) + b"\x00" + u16(2) + b"\x13\x01" + b"\x01\x00"
    return head + u16(len(block) if declared is None else declared) + block


def sni(data: bytes) -> Hello | NotHello:
    return parse_client_hello(hello(extension(0, data)))


def test_the_host_name_entry_is_lower_cased_without_its_final_dot():
    assert sni(server_names(entry(0, b"A.Example.COM."))) == Hello("a.example.com")
    assert sni(server_names(entry(0, b"a"))) == Hello("a")


def test_entries_of_other_kinds_are_skipped_and_the_first_host_name_taken():
    names = server_names(entry(1, b"xyz"), entry(0, b"b.example"), entry(0, b"c.example"))
    assert sni(names) == Hello("b.example")
    assert sni(server_names(entry(1, b"xyz"))) == Hello(None)
    assert sni(server_names()) == Hello(None)


def test_the_list_length_must_be_exactly_what_follows():
    names = server_names(entry(0, b"a.example"))
    assert sni(names) == Hello("a.example")
    assert sni(server_names(entry(0, b"a.example"), listed=len(names) - 1)) == MALFORMED
    assert sni(server_names(entry(0, b"a.example"), listed=len(names) - 3)) == MALFORMED
    assert sni(b"\x00") == MALFORMED
    assert sni(b"") == MALFORMED


def test_an_entry_longer_than_the_list_is_malformed():
    cut = bytes([0]) + u16(10) + b"short"
    assert sni(server_names(cut)) == MALFORMED
    assert sni(server_names(b"\x00\x00")) == Hello(None)  # too short to be an entry


def test_an_empty_or_non_ascii_host_name_is_refused():
    assert sni(server_names(entry(0, b""))) == NOT_ASCII
    assert sni(server_names(entry(0, "é.example".encode()))) == NOT_ASCII


def test_the_extensions_before_server_name_are_skipped_by_their_length():
    other = extension(16, b"\x00\x03\x02h2")
    assert parse_client_hello(hello(other, extension(0, server_names(entry(0, b"x"))))) == (
        Hello("x")
    )
    assert parse_client_hello(hello(other)) == Hello(None)


def test_the_extensions_block_and_each_extension_fit_the_message():
    names = extension(0, server_names(entry(0, b"x")))
    assert parse_client_hello(hello(names, declared=len(names) + 1)) == NotHello(
        "ClientHello extensions longer than the message"
    )
    assert parse_client_hello(hello(names, declared=len(names) - 1)) == NotHello(
        "a ClientHello extension longer than the message"
    )
    # a block too short to hold an extension's header ends the list
    assert parse_client_hello(hello(b"\x00\x00\x00", declared=3)) == Hello(None)
    assert parse_client_hello(hello()[:-2]) == Hello(None)  # no extensions at all
    assert parse_client_hello(hello()[:-1]) == NotHello("a truncated ClientHello")


# The record layer and the handshake header (RFC 8446 §5.1, §4): HelloReader.feed at each edge.

HANDSHAKE_RECORD_MAX = 16 * 1024 + 256  # TLSPlaintext.length, with room for TLS 1.2
READ_MAX = MAX_HELLO + 1024


def record(fragment: bytes, kind: int = 22, major: int = 3, length: int | None = None) -> bytes:
    size = len(fragment) if length is None else length
    return bytes([kind, major, 1]) + u16(size) + fragment


def message(body: bytes, kind: int = 1, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return bytes([kind]) + size.to_bytes(3, "big") + body


NAMED = hello(extension(0, server_names(entry(0, b"x.example"))))


def test_a_record_header_is_read_once_its_five_bytes_are_there():
    assert HelloReader().feed(b"\x17\x03\x03\x00") == NeedMore()
    assert HelloReader().feed(b"\x17\x03\x03\x00\x01") == NotHello(
        "a record of content type 23, not a handshake"
    )
    assert HelloReader().feed(b"\x15\x03\x03\x00\x02") == NotHello(
        "a record of content type 21, not a handshake"
    )


def test_the_record_version_major_must_be_3():
    assert HelloReader().feed(record(message(NAMED), major=2)) == NotHello(
        "not a TLS record (version major is not 3)"
    )
    assert HelloReader().feed(record(message(NAMED), major=4)) == NotHello(
        "not a TLS record (version major is not 3)"
    )
    assert HelloReader().feed(record(message(NAMED), major=3)) == Hello("x.example")


def test_the_record_length_is_big_endian_and_bounded():
    assert HelloReader().feed(record(b"", length=0)) == NotHello("a handshake record of length 0")
    assert HelloReader().feed(record(b"", length=HANDSHAKE_RECORD_MAX + 1)) == NotHello(
        f"a handshake record of length {HANDSHAKE_RECORD_MAX + 1}"
    )
    assert HelloReader().feed(record(b"", length=0x0102)) == NeedMore()  # 258 bytes awaited
    assert HelloReader().feed(record(b"", length=HANDSHAKE_RECORD_MAX)) == NeedMore()
    # a record of one byte whose low length byte alone counts would be complete
    reader = HelloReader()
    assert reader.feed(record(message(NAMED)[:1], length=0x0101) + bytes(1)) == NeedMore()


def test_a_record_is_taken_when_its_last_byte_arrives():
    whole = record(message(NAMED))
    reader = HelloReader()
    assert reader.feed(whole[:-1]) == NeedMore()
    assert reader.feed(whole[-1:]) == Hello("x.example")


def test_the_records_after_a_handshake_piece_are_read_in_the_same_feed():
    body = message(NAMED)
    pieces = record(body[:3]) + record(body[3:10]) + record(body[10:])
    assert HelloReader().feed(pieces) == Hello("x.example")
    assert HelloReader().feed(pieces + b"\x17\x03\x03\x00\x01") == Hello("x.example")


def test_the_handshake_header_is_read_once_its_four_bytes_are_there():
    assert HelloReader().feed(record(b"\x02\x00\x00")) == NeedMore()
    assert HelloReader().feed(record(b"\x02\x00\x00\x00")) == NotHello(
        "the first handshake message is of type 2"
    )
    reader = HelloReader()
    assert reader.feed(record(b"\x02")) == NeedMore()
    assert reader.feed(record(b"\x00\x00\x00")) == NotHello(
        "the first handshake message is of type 2"
    )


def test_the_client_hello_length_is_three_bytes_big_endian_and_bounded():
    assert HelloReader().feed(record(message(b"", length=MAX_HELLO + 1))) == NotHello(
        f"a ClientHello of {MAX_HELLO + 1} bytes (at most {MAX_HELLO})"
    )
    assert HelloReader().feed(record(message(b"", length=0x010000))) == NotHello(
        "a ClientHello of 65536 bytes (at most 16384)"
    )
    assert HelloReader().feed(record(message(b"", length=MAX_HELLO))) == NeedMore()
    assert HelloReader().feed(record(message(NAMED[:-1], length=len(NAMED)))) == NeedMore()
    assert HelloReader().feed(record(message(NAMED, length=len(NAMED) - 1))) == NotHello(
        "ClientHello extensions longer than the message"
    )


def test_the_message_ends_at_its_length_not_at_the_record_end():
    assert HelloReader().feed(record(message(NAMED) + b"\x16\x16")) == Hello("x.example")


def test_the_read_bound_counts_every_byte_fed():
    # a ClientHello of MAX_HELLO bytes in records of 70: 232 of them and a partial header are
    # READ_MAX bytes, its body still incomplete
    fragments = (message(b"", length=MAX_HELLO) + bytes(232 * 70 - 4))[: 232 * 70]
    records = b"".join(record(fragments[i : i + 70]) for i in range(0, len(fragments), 70))
    start = records + record(bytes(3), length=70)
    assert len(start) == READ_MAX
    reader = HelloReader()
    assert reader.feed(start) == NeedMore()
    assert reader.feed(b"\x00") == NotHello(
        f"no complete ClientHello in the first {MAX_HELLO} bytes"
    )
    assert HelloReader().feed(bytes(READ_MAX + 1)) == NotHello(
        "no complete ClientHello in the first 16384 bytes"
    )


def test_a_truncated_client_hello_at_each_of_its_fields():
    head = b"\x03\x03" + bytes(32)
    truncated = NotHello("a truncated ClientHello")
    assert parse_client_hello(head) == truncated
    assert parse_client_hello(head + b"\x00") == truncated
    assert parse_client_hello(head + b"\x00\x00") == truncated
    assert parse_client_hello(head + b"\x00\x00\x00") == truncated
    assert parse_client_hello(head + b"\x00\x00\x00\x00") == Hello(None)
    assert parse_client_hello(head + b"\x01\x07\x00\x00\x00") == Hello(None)  # session id 1
    assert parse_client_hello(head + b"\x00\x00\x02\x13\x01\x00") == Hello(None)
    assert parse_client_hello(head + b"\x00\x00\x02\x13\x01") == truncated
    assert parse_client_hello(head + b"\x00\x00\x00\x01\x00\x00") == truncated
    assert parse_client_hello(head + b"\x00\x00\x00\x01\x00\x00\x00") == Hello(None)


def test_a_host_name_of_256_bytes_or_more_reads_every_length_byte():
    name = b"a." * 150 + b"b"
    assert len(server_names(entry(0, name))) >= 256
    assert sni(server_names(entry(0, name))) == Hello(name.decode())
