"""Exact edges of the ClientHello reader (coxswain/route/client_hello.py): the extensions
block (RFC 8446 §4.1.2) and the server_name extension's ServerNameList (RFC 6066 §3), built
byte by byte here so that each length can sit one past where it should."""

from __future__ import annotations

from coxswain.route.client_hello import Hello, NotHello, parse_client_hello

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
