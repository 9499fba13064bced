"""A server TLS context on pyOpenSSL, for ports whose client validation may fall back.

Frontend client-certificate validation in ``AllowInsecureFallback`` mode (GEP-91, Gateway API
``FrontendTLSValidation``) admits a client whatever certificate it presents, including one no CA
bundle of the port trusts. Python's ``ssl`` module verifies every certificate a client sends and
fails the handshake when it cannot, with no verify callback to say otherwise; OpenSSL's verify
callback, which pyOpenSSL exposes, can. So a port with such a listener handshakes here and
every other port stays on ``ssl`` (``.tls``).

``OpenSSLContext`` is an ``ssl.SSLContext`` whose ``wrap_bio`` gives ``trio.SSLStream`` an
object with the ``ssl.SSLObject`` surface it uses, backed by an ``OpenSSL.SSL.Connection`` on
memory BIOs: bytes move between trio's ``ssl.MemoryBIO`` pair and OpenSSL's around every call,
and OpenSSL's errors become the ``ssl`` exceptions trio expects (``SSLWantReadError`` to read
more, ``SSLEOFError`` for a truncated stream, ``SSLError`` otherwise; a ``close_notify`` reads as
end of data). The SNI callback keeps the ``ssl`` signature (it may switch ``connection.context``
to another ``OpenSSLContext`` or refuse the name with an alert number); ALPN picks by the server's
preference order, as ``ssl`` does.

Every client certificate is accepted by the handshake; whether it verified against the port's
bundles is kept, and ``getpeercert()`` tells it the way ``ssl`` documents: ``None`` without a
certificate, ``{}`` for one that did not verify, a non-empty dict for one that did. Session
resumption is off on these contexts: a resumed session would carry the first handshake's
verdict into a connection whose certificate was never checked.
"""

from __future__ import annotations

import ssl
import weakref
from functools import partial
from typing import TYPE_CHECKING, Any, Self, TypeVar

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL, crypto

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from coxswain.compile.snapshot import Certificate

__all__ = ["OpenSSLContext"]

_T = TypeVar("_T")

_READ_CHUNK = 65536
# The TLS 1.2 cipher suites ``ssl`` offers by default (TLS 1.3 suites are the same in both),
# so that a client sees the same server whichever stack a port uses.
_CIPHERS = ":".join(
    c["name"]
    for c in ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).get_ciphers()
    if c["protocol"] != "TLSv1.3"
).encode()


class OpenSSLContext(ssl.SSLContext):
    """A server context that admits any client certificate and records whether it verified.

    ``certificate`` is the chain and key to serve (None for a port's front context, which only
    dispatches on SNI); ``bundles`` the PEM CAs client certificates verify against; ``alpn`` the
    protocols offered, most preferred first.
    """

    def __new__(cls, *_args: Any, **_kwargs: Any) -> Self:
        return super().__new__(cls, ssl.PROTOCOL_TLS_SERVER)

    def __init__(
        self, *, certificate: Certificate | None, bundles: str, alpn: Sequence[str]
    ) -> None:
        self.native = SSL.Context(SSL.TLS_SERVER_METHOD)
        self.native.set_min_proto_version(SSL.TLS1_2_VERSION)  # RFC 8996
        self.native.set_options(
            SSL.OP_NO_COMPRESSION
            | SSL.OP_CIPHER_SERVER_PREFERENCE
            | SSL.OP_NO_RENEGOTIATION
            | SSL.OP_NO_TICKET
        )
        self.native.set_session_cache_mode(SSL.SESS_CACHE_OFF)
        self.native.set_cipher_list(_CIPHERS)
        store = self.native.get_cert_store()
        assert store is not None
        for authority in x509.load_pem_x509_certificates(bundles.encode()) if bundles else ():
            store.add_cert(crypto.X509.from_cryptography(authority))
        self.native.set_verify(SSL.VERIFY_PEER, _verify)
        offered = [p.encode() for p in alpn]
        self.native.set_alpn_select_callback(lambda _, protocols: _choose(offered, protocols))
        self.native.set_tlsext_servername_callback(_server_name)
        if certificate is not None:
            chain = x509.load_pem_x509_certificates(certificate.chain_pem.encode())
            self.native.use_certificate(chain[0])
            for extra in chain[1:]:
                self.native.add_extra_chain_cert(extra)
            key = serialization.load_pem_private_key(certificate.key_pem.encode(), None)
            self.native.use_privatekey(key)  # type: ignore[arg-type]  # checked by OpenSSL
            self.native.check_privatekey()

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        if not server_side or session is not None:
            raise ValueError("OpenSSLContext serves the server side of new sessions only")
        return OpenSSLObject(self, incoming, outgoing)


def _owner(connection: SSL.Connection) -> OpenSSLObject:
    """The object a callback's connection belongs to. It holds its connection and the
    connection only a weak reference back, so that neither waits for the cycle collector; the
    callbacks run inside the owner's own calls, while it is alive."""
    owner: OpenSSLObject | None = connection.get_app_data()()
    assert owner is not None
    return owner


def _verify(connection: SSL.Connection, _: crypto.X509, __: int, ___: int, ok: int) -> bool:
    """Accept every certificate of the chain, noting whether OpenSSL found one untrusted."""
    if not ok:
        _owner(connection).verified = False
    return True


def _choose(offered: list[bytes], protocols: list[bytes]) -> Any:  # bytes or the no-overlap mark
    """The first of the server's protocols the client offered (RFC 7301 §3.2)."""
    for protocol in offered:
        if protocol in protocols:
            return protocol
    return SSL.NO_OVERLAPPING_PROTOCOLS


def _date(moment: datetime) -> str:
    """A certificate date as the ``ssl`` module writes it: ``Jan  5 09:34:43 2018 GMT``."""
    return f"{moment:%b} {moment.day:2d} {moment:%H:%M:%S %Y} GMT"


def _server_name(connection: SSL.Connection) -> None:
    _owner(connection).chose_server_name()


class OpenSSLObject(ssl.SSLObject):
    """What ``trio.SSLStream`` drives: the ``ssl.SSLObject`` surface over an OpenSSL
    connection on memory BIOs (the module docstring)."""

    def __init__(  # ssl.SSLObject.__init__ only refuses direct construction: not called
        self, context: OpenSSLContext, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO
    ) -> None:
        self._front = context
        self._current = context
        self._incoming = incoming
        self._outgoing = outgoing
        self._connection = SSL.Connection(context.native, None)
        self._connection.set_app_data(weakref.ref(self))
        self._connection.set_accept_state()
        self.verified = True  # until the verify callback finds a link it could not check
        self._refused: int | None = None

    # --- what the callbacks call ----------------------------------------------------------

    def chose_server_name(self) -> None:
        """Run the front context's SNI callback, with ``ssl``'s arguments and result."""
        callback = self._front.sni_callback
        if callback is None:
            return
        raw = self._connection.get_servername()
        name = None if raw is None else raw.decode("ascii", "replace")
        self._refused = callback(self, name, self._front)  # type: ignore[arg-type]

    # --- the ssl.SSLObject surface --------------------------------------------------------

    @property
    def context(self) -> ssl.SSLContext:
        return self._current

    @context.setter
    def context(self, context: ssl.SSLContext) -> None:
        if not isinstance(context, OpenSSLContext):
            raise TypeError("an OpenSSLContext connection switches to OpenSSLContexts only")
        self._connection.set_context(context.native)
        self._current = context

    @property
    def server_side(self) -> bool:
        return True

    @property
    def server_hostname(self) -> str | None:
        return None

    @property
    def session(self) -> ssl.SSLSession | None:
        return None  # no resumption (the module docstring)

    @session.setter
    def session(self, session: ssl.SSLSession | None) -> None:
        if session is not None:
            raise ValueError("OpenSSLContext connections do not resume sessions")

    @property
    def session_reused(self) -> bool:
        return False

    def do_handshake(self) -> None:
        self._call(self._connection.do_handshake)

    def read(self, size: int = 1024, buffer: Any = None) -> Any:
        try:
            data = self._call(partial(self._connection.recv, size))
        except ssl.SSLZeroReturnError:
            data = b""  # close_notify: end of data, as ssl reads it
        if buffer is None:
            return data
        memoryview(buffer)[: len(data)] = data
        return len(data)

    def write(self, data: Any) -> int:
        view = memoryview(data)
        written = 0
        while written < len(view):  # partial writes are on in pyOpenSSL contexts
            written += self._call(partial(self._connection.send, view[written:]))
        return written

    def unwrap(self) -> None:
        if not self._call(self._connection.shutdown):
            self._call(self._connection.shutdown)  # WantRead until the peer's close_notify

    def pending(self) -> int:
        return self._connection.pending()

    def getpeercert(self, binary_form: bool = False) -> Any:
        peer = self._connection.get_peer_certificate(as_cryptography=True)
        if peer is None:
            return None
        if binary_form:
            return peer.public_bytes(serialization.Encoding.DER)
        if not self.verified:
            return {}
        return {
            "serialNumber": f"{peer.serial_number:X}",
            "notBefore": _date(peer.not_valid_before_utc),
            "notAfter": _date(peer.not_valid_after_utc),
        }

    def selected_alpn_protocol(self) -> str | None:
        chosen = self._connection.get_alpn_proto_negotiated()
        return chosen.decode("ascii") if chosen else None

    def selected_npn_protocol(self) -> str | None:
        return None  # NPN predates ALPN and is not offered

    def version(self) -> str | None:
        name = self._connection.get_protocol_version_name()
        return None if name == "Unknown" else name

    def cipher(self) -> tuple[str, str, int] | None:
        name = self._connection.get_cipher_name()
        bits = self._connection.get_cipher_bits()
        version = self._connection.get_cipher_version()
        if name is None or bits is None or version is None:
            return None
        return name, version, bits

    def shared_ciphers(self) -> list[tuple[str, str, int]] | None:
        return None  # not exposed by pyOpenSSL

    def compression(self) -> str | None:
        return None  # OP_NO_COMPRESSION

    # --- moving bytes and errors ------------------------------------------------------------

    def _call(self, operation: Callable[[], _T]) -> _T:
        data = self._incoming.read()
        if data:
            self._connection.bio_write(data)
        if self._incoming.eof:
            self._connection.bio_shutdown()
        try:
            result = operation()
        except SSL.WantReadError:
            raise ssl.SSLWantReadError(ssl.SSL_ERROR_WANT_READ, "want read") from None
        except SSL.ZeroReturnError:
            raise ssl.SSLZeroReturnError(ssl.SSL_ERROR_ZERO_RETURN, "TLS closed") from None
        except SSL.SysCallError as err:
            raise ssl.SSLEOFError(ssl.SSL_ERROR_EOF, f"EOF during TLS: {err}") from None
        except SSL.Error as err:
            raise ssl.SSLError(ssl.SSL_ERROR_SSL, self._reason(err)) from None
        finally:
            self._drain()
        if self._refused is not None:
            raise ssl.SSLError(ssl.SSL_ERROR_SSL, f"server name refused (alert {self._refused})")
        return result

    def _reason(self, err: SSL.Error) -> str:
        if self._refused is not None:
            return f"server name refused (alert {self._refused})"
        return str(err)

    def _drain(self) -> None:
        while True:
            try:
                chunk = self._connection.bio_read(_READ_CHUNK)
            except SSL.WantReadError:
                return
            if not chunk:
                return
            self._outgoing.write(chunk)
