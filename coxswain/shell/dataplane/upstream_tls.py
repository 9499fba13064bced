"""TLS the proxy originates to backends a BackendTLSPolicy secures (GEP-1897).

Rules:

- **One context per distinct settings per snapshot.** :class:`Originations` is built with each
  applied snapshot (:mod:`.served`) and makes the ``ssl`` client context of a backend's
  :class:`~coxswain.compile.snapshot.UpstreamTLS` the first time a request needs it, shared by
  every backend with equal settings. TLS 1.2 or later; ALPN offers ``http/1.1``, or ``h2``
  alone to a backend spoken to in HTTP/2 (``protocol: h2c`` with ``tls``, RFC 9113 §3.2), whose
  handshake fails unless the backend selects ``h2``: the proxy never falls back to HTTP/1.1
  towards a backend declared HTTP/2.
- **Full verification.** The chain must lead to the policy's CA bundle (or the system's CAs
  for ``wellKnownCACertificates: System``) and be valid now. The policy's hostname is the SNI;
  without ``subjectAltNames`` it is also the name the certificate must carry (``ssl``'s own
  hostname check). With them, the hostname is not used for authentication
  (``BackendTLSPolicyValidation.hostname``) and the certificate must carry one of them: a
  ``Hostname`` entry matches a DNS name of the certificate as RFC 6125 §6.4.3 has it (a ``*.``
  name covers one label), a ``URI`` entry a URI name, compared whole. ``ssl`` checks no URI
  name, so that check reads the peer certificate after the handshake (``cryptography``).
- **Client certificate.** The Gateway's backend client certificate, when the backend carries
  one, is loaded into the context and presented when the backend asks.
- **ingress-nginx's relaxations** (``UpstreamTLS.verify`` and ``sni``, from ``proxy-ssl-verify``
  and ``proxy-ssl-server-name``, both off by default as in nginx): without ``verify`` the
  certificate is taken unchecked; without ``sni`` no server name is sent, and when verifying,
  the name is checked on the certificate after the handshake like a subject alternative name.
- **Bounded.** The handshake runs inside the connect timeout of its endpoint (:mod:`.pool`); a
  handshake or verification failure is a failed connection: the next endpoint is tried, and
  when none is left the request is answered 502 with the reason.
- **Pooled apart.** A connection is pooled under its endpoint and :attr:`Origination.key`, a
  digest of the settings: a TLS connection is never reused for a plaintext backend, nor for
  other TLS settings, even across snapshots.
"""

from __future__ import annotations

import hashlib
import json
import ssl
from typing import TYPE_CHECKING, Final

import trio
from cryptography import x509
from pyrsistent import pvector

from coxswain.compile.tls import covers
from coxswain.shell.dataplane.tls import load_chain

if TYPE_CHECKING:
    import socket as stdlib_socket

    from coxswain.compile.snapshot import UpstreamTLS
    from coxswain.shell.dataplane.connection import Connection
    from coxswain.shell.dataplane.wire import Watchdog

__all__ = ["Origination", "Originations", "TLSConnection", "TLSFailed"]

_ALPN: Final = ["http/1.1"]
_ALPN_H2: Final = ["h2"]


class TLSFailed(Exception):
    """The handshake with a backend failed, or its certificate was refused."""


class TLSConnection(trio.abc.Stream):
    """A TLS stream over one of the proxy's connections, with what the pool and the forwarder
    ask of a :class:`~.connection.Connection`: its socket, send bounds and ``close``."""

    __slots__ = ("_stream", "transport")

    def __init__(self, stream: trio.SSLStream[Connection], transport: Connection) -> None:
        self._stream = stream
        self.transport = transport

    @property
    def socket(self) -> stdlib_socket.socket:
        """The transport's socket (the pool polls it while the connection is idle)."""
        return self.transport.socket

    @property
    def stalled(self) -> bool:
        """The transport was closed because a send waited past its timeout."""
        return self.transport.stalled

    def bound_sends(self, watchdog: Watchdog, timeout: float) -> TLSConnection:
        """Bound the transport's sends (:meth:`.Connection.bound_sends`)."""
        self.transport.bound_sends(watchdog, timeout)
        return self

    def close(self) -> None:
        """Close the transport now (an idle connection dropped by the pool)."""
        self.transport.close()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self._stream.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self._stream.aclose()


class Origination:
    """The client context of one :class:`~coxswain.compile.snapshot.UpstreamTLS` and the
    handshake with it."""

    __slots__ = ("_h2_context", "_sni", "_tls", "context", "key", "names", "server_name", "uris")

    def __init__(self, tls: UpstreamTLS) -> None:
        self._tls = tls
        self._h2_context: ssl.SSLContext | None = None
        self.context = self._context(tls, _ALPN)
        self.names = tuple(n.value for n in tls.subject_alt_names if n.type == "Hostname")
        self.uris = tuple(n.value for n in tls.subject_alt_names if n.type == "URI")
        if tls.verify and not tls.sni and not tls.subject_alt_names:
            self.names = (tls.server_name,)  # ssl checks the name only together with SNI
        self.server_name = tls.server_name
        self._sni = tls.server_name if tls.sni else None
        client = tls.client_certificate
        self.key = hashlib.sha256(
            json.dumps(
                [
                    tls.server_name,
                    tls.ca_pem,
                    [[n.type, n.value] for n in tls.subject_alt_names],
                    None if client is None else [client.chain_pem, client.key_pem],
                    tls.verify,
                    tls.sni,
                ]
            ).encode()
        ).hexdigest()

    @staticmethod
    def _context(tls: UpstreamTLS, alpn: list[str]) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(alpn)
        if not tls.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif tls.ca_pem is None:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        else:
            context.load_verify_locations(cadata=tls.ca_pem)
        if tls.verify:
            # with subjectAltNames (or no SNI) the names are checked after the handshake
            context.check_hostname = tls.sni and not tls.subject_alt_names
            context.verify_mode = ssl.CERT_REQUIRED
        if tls.client_certificate is not None:
            load_chain(context, tls.client_certificate)
        return context

    async def handshake(self, transport: Connection, *, h2: bool = False) -> TLSConnection:
        """TLS over ``transport``, the backend's certificate verified (the caller bounds the
        time and closes ``transport`` on failure); with ``h2``, offering only ALPN ``h2``.

        Raises:
            TLSFailed: the handshake failed, the certificate was refused, or (``h2``) the
                backend did not select ``h2``; the message says why.
        """
        context = self.context
        if h2:
            if self._h2_context is None:
                self._h2_context = self._context(self._tls, _ALPN_H2)
            context = self._h2_context
        stream = trio.SSLStream(
            transport, context, server_hostname=self._sni, https_compatible=True
        )
        try:
            await stream.do_handshake()
        except trio.BrokenResourceError as err:
            cause = err.__cause__
            reason = getattr(cause, "verify_message", None) or cause or err
            raise TLSFailed(f"TLS handshake with {self.server_name} failed: {reason}") from err
        if self.names or self.uris:
            self._check_names(stream.getpeercert(binary_form=True))
        if h2 and stream.selected_alpn_protocol() != "h2":
            chosen = stream.selected_alpn_protocol() or "no protocol"
            raise TLSFailed(f"{self.server_name} did not select h2 by ALPN ({chosen})")
        return TLSConnection(stream, transport)

    def _check_names(self, der: bytes | None) -> None:
        """The certificate carries one of the policy's Subject Alternative Names."""
        dns: list[str] = []
        uris: list[str] = []
        try:
            if der is not None:
                found = x509.load_der_x509_certificate(der).extensions.get_extension_for_class(
                    x509.SubjectAlternativeName
                )
                dns = [n.lower() for n in found.value.get_values_for_type(x509.DNSName)]
                uris = found.value.get_values_for_type(x509.UniformResourceIdentifier)
        except (ValueError, x509.ExtensionNotFound):
            pass
        names = pvector(dns)
        if any(covers(names, n) or n in dns for n in self.names) or any(
            u in uris for u in self.uris
        ):
            return
        wanted = ", ".join((*self.names, *self.uris))
        raise TLSFailed(f"the certificate of {self.server_name} carries none of the names {wanted}")


class Originations:
    """The origination of each distinct TLS setting of one snapshot, made on first use."""

    __slots__ = ("_by_id", "_by_settings")

    def __init__(self) -> None:
        self._by_id: dict[int, Origination] = {}  # the snapshot keeps every setting alive
        self._by_settings: dict[UpstreamTLS, Origination] = {}

    def get(self, tls: UpstreamTLS) -> Origination:
        """The origination of ``tls``.

        Raises:
            ssl.SSLError: the CA bundle or the client certificate cannot be loaded.
        """
        found = self._by_id.get(id(tls))
        if found is None:
            found = self._by_settings.get(tls)
            if found is None:
                found = Origination(tls)
                self._by_settings[tls] = found
            self._by_id[id(tls)] = found
        return found
