"""ingress-nginx's client-certificate authentication in the proxy: what the connection's
client certificate is, for ``route.client_tls`` to decide on (docs/migrating-from-ingress-nginx.md,
"Access and limits").

The handshake records the client's certificate and whether it verified in
:data:`handshake_peer` (the connection's task context, which its HTTP/2 streams inherit);
each request of a path with ``auth-tls-secret`` reads it. Whether the certificate chains to
that Ingress's ``ca.crt`` is checked once per certificate and CA and remembered with the
snapshot (:class:`ClientCertificates`), as the subject and issuer it sends to the backend.
"""

from __future__ import annotations

import contextvars
import hashlib
import ssl
from typing import Final

from cryptography import x509

from coxswain.route.client_tls import ClientCertificate
from coxswain.shell.dataplane.tls import issued_by

__all__ = ["MEMO_SIZE", "ClientCertificates", "handshake_peer"]

MEMO_SIZE: Final = 4096

handshake_peer: contextvars.ContextVar[tuple[bytes | None, bool]] = contextvars.ContextVar(
    "coxswain_handshake_peer", default=(None, False)
)
"""The client's certificate (DER, or None) and whether the handshake verified it against the
port's bundles, set once the TLS handshake is done (:func:`.tls.peer_certificate`)."""


class ClientCertificates:
    """The certificates seen under one snapshot, by certificate and CA bundle."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[bytes, ClientCertificate | None] = {}

    def read(self, ca_pem: str) -> ClientCertificate | None:
        """The current connection's client certificate against ``ca_pem``; None without one
        (or when it does not parse)."""
        der, verified = handshake_peer.get()
        if der is None:
            return None
        key = hashlib.sha256(der + ca_pem.encode("ascii", "replace")).digest()
        if key in self._seen:
            return self._seen[key]
        if len(self._seen) >= MEMO_SIZE:
            self._seen.clear()
        try:
            leaf = x509.load_der_x509_certificate(der)
            found: ClientCertificate | None = ClientCertificate(
                chained=verified and issued_by(der, ca_pem),
                subject=leaf.subject.rfc4514_string(),
                issuer=leaf.issuer.rfc4514_string(),
                pem=ssl.DER_cert_to_PEM_cert(der),
            )
        except ValueError:
            found = None
        self._seen[key] = found
        return found
