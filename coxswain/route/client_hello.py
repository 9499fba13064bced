"""Reading the server name of a TLS ClientHello without decrypting anything (sans-IO).

A TLS Passthrough listener routes a connection by the SNI of its ClientHello (Gateway API v1
TLSRoute ``hostnames``) and forwards the bytes read, unchanged, to the backend that
terminates TLS. The ClientHello is sent in clear (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2): TLS
records of content type 22 (handshake, RFC 8446 §5.1) carry the handshake message, possibly
split over several records and over any number of TCP segments; the ``server_name`` extension
(type 0, RFC 6066 §3) holds a ``host_name`` entry.

Every input is hostile: the reader keeps at most ``MAX_HELLO`` bytes (16 KiB, the largest
TLSPlaintext fragment, RFC 8446 §5.1), does work linear in what it is given however the bytes
are cut, and answers :class:`NotHello` at the first byte that cannot belong to a ClientHello.
The shell bounds the time (:mod:`coxswain.shell.dataplane.streams`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_HELLO", "Hello", "HelloReader", "NeedMore", "NotHello"]

MAX_HELLO: Final = 16 * 1024
"""The most bytes of records read before a ClientHello must be complete."""

_HANDSHAKE: Final = 22
_CLIENT_HELLO: Final = 1
_SERVER_NAME: Final = 0
_HOST_NAME: Final = 0
_RECORD_MAX: Final = 16 * 1024 + 256  # TLSPlaintext.length bound, with room for TLS 1.2
_READ_MAX: Final = MAX_HELLO + 1024  # the hello and the headers of the records it came in


@dataclass(frozen=True, slots=True)
class NeedMore:
    """The ClientHello is not complete yet."""


@dataclass(frozen=True, slots=True)
class Hello:
    """A complete ClientHello: its server name (lower-cased, without a final dot; None when it
    sent none)."""

    sni: str | None


@dataclass(frozen=True, slots=True)
class NotHello:
    """What was read is not a ClientHello a proxy can route: ``reason`` says why."""

    reason: str


class HelloReader:
    """Feed it the bytes of a connection as they come; it answers once it knows. Bytes after
    the record that completes the ClientHello are not looked at (a client may send more before
    the ServerHello: early data, or a passthrough benchmark's payload)."""

    __slots__ = ("_handshake", "_pending", "_seen")

    def __init__(self) -> None:
        self._pending = bytearray()  # bytes of a record whose header or body is incomplete
        self._handshake = bytearray()  # the handshake bytes of the complete records
        self._seen = 0

    def feed(self, data: bytes) -> NeedMore | Hello | NotHello:
        """Take ``data``, the next bytes of the connection; linear in ``len(data)``."""
        self._seen += len(data)
        if self._seen > _READ_MAX:
            return NotHello(f"no complete ClientHello in the first {MAX_HELLO} bytes")
        self._pending += data
        pending = self._pending
        while len(pending) >= 5:
            if pending[0] != _HANDSHAKE:
                return NotHello(f"a record of content type {pending[0]}, not a handshake")
            if pending[1] != 3:
                return NotHello("not a TLS record (version major is not 3)")
            length = pending[3] << 8 | pending[4]
            if length == 0 or length > _RECORD_MAX:
                return NotHello(f"a handshake record of length {length}")
            if len(pending) < 5 + length:
                break
            self._handshake += pending[5 : 5 + length]
            del pending[: 5 + length]
            result = self._message()
            if not isinstance(result, NeedMore):
                return result  # what follows the ClientHello is the backend's to read
        return NeedMore()

    def _message(self) -> NeedMore | Hello | NotHello:
        handshake = self._handshake
        if len(handshake) < 4:
            return NeedMore()
        if handshake[0] != _CLIENT_HELLO:
            return NotHello(f"the first handshake message is of type {handshake[0]}")
        length = int.from_bytes(handshake[1:4], "big")
        if length > MAX_HELLO:
            return NotHello(f"a ClientHello of {length} bytes (at most {MAX_HELLO})")
        if len(handshake) < 4 + length:
            return NeedMore()
        return parse_client_hello(bytes(handshake[4 : 4 + length]))


def parse_client_hello(body: bytes) -> Hello | NotHello:
    """The server name of a ClientHello's body (RFC 8446 §4.1.2: legacy_version, random,
    legacy_session_id, cipher_suites, legacy_compression_methods, extensions)."""
    at = 2 + 32
    if len(body) < at + 1:
        return NotHello("a truncated ClientHello")
    at += 1 + body[at]  # legacy_session_id
    if at + 2 > len(body):
        return NotHello("a truncated ClientHello")
    at += 2 + int.from_bytes(body[at : at + 2], "big")  # cipher_suites
    if at + 1 > len(body):
        return NotHello("a truncated ClientHello")
    at += 1 + body[at]  # legacy_compression_methods
    if at == len(body):
        return Hello(None)  # no extensions (TLS 1.2 allows it)
    if at + 2 > len(body):
        return NotHello("a truncated ClientHello")
    end = at + 2 + int.from_bytes(body[at : at + 2], "big")
    if end > len(body):
        return NotHello("ClientHello extensions longer than the message")
    at += 2
    while at + 4 <= end:
        kind = int.from_bytes(body[at : at + 2], "big")
        size = int.from_bytes(body[at + 2 : at + 4], "big")
        at += 4
        if at + size > end:
            return NotHello("a ClientHello extension longer than the message")
        if kind == _SERVER_NAME:
            return _server_name(body[at : at + size])
        at += size
    return Hello(None)


def _server_name(data: bytes) -> Hello | NotHello:
    """RFC 6066 §3: a ServerNameList; its ``host_name`` entry, ASCII."""
    if len(data) < 2 or int.from_bytes(data[:2], "big") != len(data) - 2:
        return NotHello("a malformed server_name extension")
    at = 2
    while at + 3 <= len(data):
        kind = data[at]
        size = int.from_bytes(data[at + 1 : at + 3], "big")
        name = data[at + 3 : at + 3 + size]
        if len(name) != size:
            return NotHello("a malformed server_name extension")
        if kind == _HOST_NAME:
            if not name or not name.isascii():
                return NotHello("a server name that is not an ASCII host name")
            return Hello(name.decode("ascii").lower().removesuffix("."))
        at += 3 + size
    return Hello(None)
