"""Client-certificate authentication per request (ingress-nginx's ``auth-tls-*``; the compiled
form: :class:`~coxswain.compile.snapshot.ClientTLS`, docs/migrating-from-ingress-nginx.md,
"Access and limits"). Pure: the proxy reads the certificate of the connection and says
whether it chains to the Ingress's ``ca.crt``.

Rules, nginx's ``ssl_verify_client`` as ingress-nginx configures it:
1. A plain-HTTP request is not checked (nginx checks only its TLS server).
2. ``on``: a request without a certificate issued by the CA is answered 400; ``optional``:
   one with a certificate not issued by it is (no certificate passes); ``optional_no_ca`` and
   ``off`` never fail (``off`` does not look at the certificate). With
   ``auth-tls-error-page``, a failed check is a 302 to it instead.
3. The backend gets ``ssl-client-verify`` (``SUCCESS``, ``NONE`` or ``FAILED:<why>``),
   ``ssl-client-subject-dn`` and ``ssl-client-issuer-dn`` (RFC 4514), and with
   ``auth-tls-pass-certificate-to-upstream`` ``ssl-client-cert``, the PEM percent-encoded as
   nginx's ``$ssl_client_escaped_cert``; the client's own fields of those names are dropped.
4. With ``auth-tls-match-cn``, a request whose certificate's subject (empty without one, or
   on plain HTTP, as nginx's ``$ssl_client_s_dn``) has no match of it is answered 403, after
   the checks of rules 1 and 2, as ingress-nginx's server-level check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.snapshot import ClientTLS

__all__ = ["PASSED_FIELDS", "ClientCertificate", "client_tls_outcome", "percent_escaped"]

PASSED_FIELDS: Final = frozenset(
    {b"ssl-client-verify", b"ssl-client-subject-dn", b"ssl-client-issuer-dn", b"ssl-client-cert"}
)
_UNRESERVED: Final = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
_FAILED: Final = 400  # nginx answers its 495 and 496 as 400
_UNMATCHED: Final = 403  # ingress-nginx's "client certificate unauthorized"


@dataclass(frozen=True, slots=True)
class ClientCertificate:
    """What the proxy read of a connection's client certificate: whether it chains to the
    Ingress's CA, its subject and issuer (RFC 4514) and its PEM."""

    chained: bool
    subject: str
    issuer: str
    pem: str


def client_tls_outcome(
    check: ClientTLS,
    certificate: ClientCertificate | None,
    *,
    https: bool,
    subject_matches: Callable[[str], bool] | None = None,
) -> tuple[int | None, str | None, tuple[tuple[bytes, bytes], ...]]:
    """The status to answer (None: forward), its ``Location`` (the error page), and the
    fields for the backend (rules 1 to 4). ``subject_matches`` searches ``match_cn``."""
    if not https:
        return (_UNMATCHED if subject_matches is not None else None), None, ()
    seen = None if check.verify == "off" else certificate
    if seen is None:
        verify, failed = "NONE", check.verify == "on"
    elif seen.chained:
        verify, failed = "SUCCESS", False
    else:
        verify = "FAILED:the certificate is not issued by a CA of the Ingress's ca.crt"
        failed = check.verify in ("on", "optional")
    if failed:
        return (302 if check.error_page else _FAILED), check.error_page, ()
    if subject_matches is not None and not subject_matches("" if seen is None else seen.subject):
        return _UNMATCHED, None, ()
    fields = [(b"ssl-client-verify", verify.encode("latin-1"))]
    if seen is not None:
        fields += [
            (b"ssl-client-subject-dn", seen.subject.encode("latin-1", "replace")),
            (b"ssl-client-issuer-dn", seen.issuer.encode("latin-1", "replace")),
        ]
        if check.pass_certificate:
            fields.append((b"ssl-client-cert", percent_escaped(seen.pem).encode("ascii")))
    return None, None, tuple(fields)


def percent_escaped(text: str) -> str:
    """``text`` with every byte but the unreserved ones (RFC 3986 §2.3) percent-encoded."""
    data = text.encode("latin-1", "replace")
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in data)
