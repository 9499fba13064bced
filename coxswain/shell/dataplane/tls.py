"""Server TLS contexts for a snapshot: certificates chosen by SNI, client certificates checked.

One ``TLSContexts`` is built per applied snapshot and swapped with it, so that certificate
changes reach new connections without touching open ones (docs/architecture.md). Per listening port
there is one front context whose SNI callback switches the handshake to the context of the
certificate the route table picks for that name (exact, wildcard, default; on Gateway ports the
listener the name selects). Contexts are built once per distinct certificate and validation and
shared between ports and hosts.

Python's ``ssl`` module loads certificate chains from files only: each chain and key is written
to a private temporary directory, loaded, and removed at once.

Rules: TLS 1.2 or later (RFC 8996 retired 1.0 and 1.1); ALPN offers ``http/1.1``. On the
Ingress HTTPS port, the ``ca.crt`` of every Ingress with ingress-nginx's ``auth-tls-secret``
is a bundle of the port with fallback: the handshake admits any client, and each request is
checked against its own Ingress's CA (``route.client_tls``), as nginx answers a failed
check with 400 rather than end the handshake. Frontend
client-certificate validation (GEP-91) is per listener, but several listeners share a port: the
handshake asks for a certificate trusted by any bundle of the port, and ``admits`` checks, after
the handshake, that it verified and chains to the bundle of the listener the SNI selected
(``AllowValidOnly``), or admits every client (``AllowInsecureFallback``). The ``ssl`` module
cannot accept a certificate it failed to verify, so a port with an ``AllowInsecureFallback``
listener handshakes on pyOpenSSL instead (``.tls_openssl``), which accepts any certificate and
reports whether it verified; every other port stays on ``ssl``.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from coxswain.shell.dataplane.tls_openssl import OpenSSLContext

if TYPE_CHECKING:
    from collections.abc import Callable

    import trio

    from coxswain.compile.snapshot import Certificate
    from coxswain.route.table import RouteTable

__all__ = ["TLSContexts", "issued_by", "load_chain", "peer_certificate"]

_ALPN = ["h2", "http/1.1"]  # HTTP/2 first (.h2_connection)
_FALLBACK = "AllowInsecureFallback"


class TLSContexts:
    """The server contexts of one snapshot's TLS and client-certificate stores."""

    def __init__(self, table: RouteTable) -> None:
        self._table = table
        self._by_material: dict[tuple[str, str, str, bool], ssl.SSLContext] = {}
        self._front: dict[int, ssl.SSLContext] = {}
        self._ingress_cas: str | None = None

    def front(self, port: int) -> ssl.SSLContext:
        """The context a TLS listener on ``port`` wraps its connections with.

        OpenSSL takes the verification mode from this context even after the SNI callback
        switched certificates, so a port with any client validation asks every client for a
        certificate here, trusting the union of the port's CA bundles; ``admits`` then applies
        the validation of the listener the name selected. A port with an
        ``AllowInsecureFallback`` listener gets an ``OpenSSLContext``.
        """
        context = self._front.get(port)
        if context is None:
            bundles, fallback = self._bundles(port), self._falls_back(port)
            context = (
                OpenSSLContext(certificate=None, bundles=bundles, alpn=_ALPN)
                if fallback
                else self._base(bundles)
            )
            context.sni_callback = self._chooser(port, fallback)
            self._front[port] = context
        return context

    def admits(
        self, port: int, server_name: str | None, peer_der: bytes | None, verified: bool
    ) -> bool:
        """Whether the listener ``server_name`` selects on ``port`` admits this client.

        ``peer_der`` is the client's certificate (DER) as the handshake received it, or None;
        ``verified`` whether it chained to a bundle of the port (always, on an ``ssl`` port).
        ``AllowValidOnly`` wants a verified certificate issued by the listener's own bundle;
        ``AllowInsecureFallback`` admits every client, with a certificate or not.
        """
        validation = self._table.client_validation(port, server_name)
        if validation is None or validation.mode == _FALLBACK:
            return True
        return peer_der is not None and verified and issued_by(peer_der, validation.ca_pem)

    def _chooser(
        self, port: int, fallback: bool
    ) -> Callable[[ssl.SSLObject, str | None, ssl.SSLContext], int | None]:
        def choose(
            connection: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext
        ) -> int | None:
            certificate = self._table.certificate(port, server_name)
            if certificate is None:
                return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME
            connection.context = self._context(certificate, self._bundles(port), fallback)
            return None

        return choose

    def _bundles(self, port: int) -> str:
        """The CA bundles of every listener of ``port``, concatenated ('' when none)."""
        validations = self._table.snapshot.client_certs.get(port)
        found = set() if validations is None else {v.ca_pem for v in validations.values()}
        return "".join(sorted(found)) + self._ingress_bundles(port)

    def _falls_back(self, port: int) -> bool:
        """Whether a listener of ``port`` admits clients whose certificate does not verify."""
        validations = self._table.snapshot.client_certs.get(port)
        return bool(self._ingress_bundles(port)) or (
            validations is not None and any(v.mode == _FALLBACK for v in validations.values())
        )

    def _ingress_bundles(self, port: int) -> str:
        """The ``auth-tls-secret`` CAs of the Ingresses, on the Ingress HTTPS port."""
        snapshot = self._table.snapshot
        if port != snapshot.ingress.https_port or port in snapshot.gateways:
            return ""
        if self._ingress_cas is None:
            found = {
                rule.actions.client_tls.ca_pem
                for vhost in snapshot.ingress.hosts.values()
                for rule in (*vhost.paths, *((vhost.default,) if vhost.default else ()))
                if rule.actions is not None and rule.actions.client_tls is not None
            }
            self._ingress_cas = "".join(sorted(found))
        return self._ingress_cas

    @staticmethod
    def _base(bundles: str) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(_ALPN)
        if bundles:
            # OpenSSL keeps the front context's verify mode but verifies against the store of
            # the context the SNI callback switched to: both get the port's bundles.
            context.load_verify_locations(cadata=bundles)
            context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def _context(self, certificate: Certificate, bundles: str, fallback: bool) -> ssl.SSLContext:
        key = (certificate.chain_pem, certificate.key_pem, bundles, fallback)
        context = self._by_material.get(key)
        if context is not None:
            return context
        if fallback:
            context = OpenSSLContext(certificate=certificate, bundles=bundles, alpn=_ALPN)
        else:
            context = self._base(bundles)
            load_chain(context, certificate)
        self._by_material[key] = context
        return context


def peer_certificate(connection: trio.SSLStream[Any]) -> tuple[bytes | None, bool]:
    """The client's certificate (DER, or None) and whether the handshake verified it.

    ``getpeercert()`` is ``{}`` for a certificate that was received but not verified, as the
    ``ssl`` module documents; only an ``OpenSSLContext`` ever admits one.
    """
    der = connection.getpeercert(binary_form=True)
    return der, der is not None and connection.getpeercert() != {}


def issued_by(peer_der: bytes, bundle_pem: str) -> bool:
    """Whether a client certificate was issued by one of a bundle's CAs and is in its validity
    period (RFC 5280 §6.1 for a one-link path: signature, issuer name, validity).

    The handshake already verified the full chain against the port's bundles; this check only
    decides *which* bundle the certificate belongs to, so it stays with the direct issuer.
    """
    try:
        leaf = x509.load_der_x509_certificate(peer_der)
        authorities = x509.load_pem_x509_certificates(bundle_pem.encode())
    except ValueError:
        return False
    now = datetime.now(UTC)
    if not leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc:
        return False
    for authority in authorities:
        try:
            leaf.verify_directly_issued_by(authority)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return True
    return False


def load_chain(context: ssl.SSLContext, certificate: Certificate) -> None:
    """Load a PEM chain and key through files that live only while they are read."""
    with tempfile.TemporaryDirectory(prefix="coxswain-tls-") as folder:
        chain = os.path.join(folder, "chain.pem")
        key = os.path.join(folder, "key.pem")
        for path, text in ((chain, certificate.chain_pem), (key, certificate.key_pem)):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="ascii") as file:
                file.write(text)
        context.load_cert_chain(chain, key)
