"""The ClientHello reader (coxswain.route.client_hello): real ClientHellos from Python's ``ssl``
whole and cut anywhere, and hostile bytes, which it refuses without raising."""

from __future__ import annotations

import contextlib
import ssl

from hypothesis import given
from hypothesis import strategies as st

from coxswain.route.client_hello import MAX_HELLO, Hello, HelloReader, NeedMore, NotHello


def _client_hello(server_name: str | None) -> bytes:
    """The first flight of a TLS client, as it would go on the wire."""
    context = ssl.create_default_context()
    context.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the ServerHello
        tls.do_handshake()
    return outgoing.read()


HELLO = _client_hello("Abc.Example.com")


def test_a_whole_client_hello_gives_its_server_name_lower_cased() -> None:
    assert HelloReader().feed(HELLO) == Hello("abc.example.com")


def test_bytes_after_the_client_hello_are_not_read() -> None:
    assert HelloReader().feed(HELLO + bytes(4096)) == Hello("abc.example.com")


def test_a_client_hello_without_server_name() -> None:
    assert HelloReader().feed(_client_hello(None)) == Hello(None)


def test_a_client_hello_in_one_byte_pieces_is_read_once_complete() -> None:
    reader = HelloReader()
    results = [reader.feed(HELLO[i : i + 1]) for i in range(len(HELLO))]
    assert all(r == NeedMore() for r in results[:-1])
    assert results[-1] == Hello("abc.example.com")


def test_a_client_hello_split_over_records_is_joined() -> None:
    body = HELLO[5:]
    records = b"".join(
        b"\x16\x03\x01" + len(part).to_bytes(2, "big") + part
        for part in (body[i : i + 7] for i in range(0, len(body), 7))
    )
    assert HelloReader().feed(records) == Hello("abc.example.com")


def test_what_is_not_a_client_hello_is_refused() -> None:
    assert isinstance(HelloReader().feed(b"GET / HTTP/1.1\r\n\r\n"), NotHello)
    assert isinstance(HelloReader().feed(b"\x16\x02\x01\x00\x10"), NotHello)  # not TLS
    server_hello = b"\x16\x03\x03\x00\x04\x02\x00\x00\x00"
    assert isinstance(HelloReader().feed(server_hello), NotHello)
    huge = b"\x16\x03\x01\x00\x04\x01\xff\xff\xff"
    assert isinstance(HelloReader().feed(huge), NotHello)


def test_a_client_hello_never_complete_is_refused_past_the_bound() -> None:
    reader = HelloReader()
    header = b"\x16\x03\x01\x40\x00\x01\x00\x3f\xfc"  # a 16 KiB record announcing a hello
    assert reader.feed(header) == NeedMore()
    results = [reader.feed(b"\x00" * 4096) for _ in range(2 * MAX_HELLO // 4096)]
    assert not isinstance(results[-1], NeedMore)  # it decided within twice the bound


@given(st.binary(max_size=600), st.integers(min_value=1, max_value=64))
def test_any_bytes_cut_anywhere_give_an_answer_and_never_raise(data: bytes, step: int) -> None:
    reader = HelloReader()
    for i in range(0, len(data), step):
        result = reader.feed(data[i : i + step])
        assert isinstance(result, NeedMore | Hello | NotHello)
        if not isinstance(result, NeedMore):
            break


@given(st.integers(min_value=0, max_value=len(HELLO) - 1), st.binary(min_size=1, max_size=4))
def test_a_corrupted_client_hello_never_raises(at: int, noise: bytes) -> None:
    corrupted = HELLO[:at] + noise + HELLO[at + len(noise) :]
    assert isinstance(HelloReader().feed(corrupted), NeedMore | Hello | NotHello)
