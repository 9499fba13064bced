"""A small certificate authority for the discovery stream (docs/contracts.md).

The controller holds one CA. It issues each proxy a client certificate whose only identity is a
URI SAN ``spiffe://<trust-domain>/ns/<namespace>/sa/<name>``: the proxy's ServiceAccount. The
discovery server authorises scopes by that identity, so :func:`identity_from_certificate`
refuses a certificate without exactly one such URI rather than guessing from the subject.

Rules:
- Keys are ECDSA P-256; certificates are PEM bytes, the form ``grpc.ssl_*_credentials`` take.
- The clock comes in as an argument (``now``), so tests and callers control validity windows.
- :func:`verify_issued_by` checks the signature and validity window against one CA only; chains
  deeper than CA → leaf are not issued here.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "DEFAULT_VALIDITY",
    "RENEW_BEFORE",
    "CertificateAuthority",
    "IdentityError",
    "IssuedCertificate",
    "ProxyIdentity",
    "create_ca",
    "identity_from_certificate",
    "renewal_due",
    "verify_issued_by",
]

# Precedent: SPIFFE ID format (spiffe.io, "SPIFFE-ID" §2), as used by Istio for ServiceAccounts.
_SCHEME: Final = "spiffe://"
DEFAULT_VALIDITY: Final = datetime.timedelta(days=365)
RENEW_BEFORE: Final = datetime.timedelta(days=30)
"""How long before it expires a certificate is replaced, by every issuer of this project: a
month leaves room for a controller or server that was down when the time came."""


class IdentityError(ValueError):
    """A certificate does not name exactly one proxy identity, or was not issued by the CA."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyIdentity:
    """A proxy's identity: its ServiceAccount in a trust domain."""

    trust_domain: str
    namespace: str
    name: str

    @property
    def uri(self) -> str:
        """The SPIFFE URI naming this identity."""
        return f"{_SCHEME}{self.trust_domain}/ns/{self.namespace}/sa/{self.name}"

    @classmethod
    def parse(cls, uri: str) -> ProxyIdentity:
        """The identity a SPIFFE URI names.

        Raises:
            IdentityError: the URI is not ``spiffe://<domain>/ns/<ns>/sa/<name>``.
        """
        if not uri.startswith(_SCHEME):
            raise IdentityError(f"not a spiffe URI: {uri!r}")
        parts = uri[len(_SCHEME) :].split("/")
        if len(parts) != 5 or parts[1] != "ns" or parts[3] != "sa" or not all(parts):
            raise IdentityError(f"not a ServiceAccount identity: {uri!r}")
        return cls(trust_domain=parts[0], namespace=parts[2], name=parts[4])

    def __str__(self) -> str:
        return self.uri


@dataclass(frozen=True, slots=True, kw_only=True)
class IssuedCertificate:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class CertificateAuthority:
    """A CA key and self-signed certificate that issue proxy and server certificates."""

    trust_domain: str
    cert_pem: bytes
    key_pem: bytes

    def issue_proxy(
        self,
        *,
        namespace: str,
        name: str,
        now: datetime.datetime,
        validity: datetime.timedelta = DEFAULT_VALIDITY,
    ) -> IssuedCertificate:
        """A client certificate naming ``spiffe://<trust-domain>/ns/<namespace>/sa/<name>``."""
        identity = ProxyIdentity(trust_domain=self.trust_domain, namespace=namespace, name=name)
        ProxyIdentity.parse(identity.uri)  # refuses empty or slashed parts
        return self._issue(
            common_name=f"{namespace}/{name}",
            sans=[x509.UniformResourceIdentifier(identity.uri)],
            usage=ExtendedKeyUsageOID.CLIENT_AUTH,
            now=now,
            validity=validity,
        )

    def issue_server(
        self,
        *,
        hosts: list[str],
        now: datetime.datetime,
        validity: datetime.timedelta = DEFAULT_VALIDITY,
    ) -> IssuedCertificate:
        """A server certificate for the discovery endpoint; IP literals become IP SANs."""
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        return self._issue(
            common_name=hosts[0],
            sans=sans,
            usage=ExtendedKeyUsageOID.SERVER_AUTH,
            now=now,
            validity=validity,
        )

    def _issue(
        self,
        *,
        common_name: str,
        sans: list[x509.GeneralName],
        usage: x509.ObjectIdentifier,
        now: datetime.datetime,
        validity: datetime.timedelta,
    ) -> IssuedCertificate:
        ca_cert = x509.load_pem_x509_certificate(self.cert_pem)
        ca_key = serialization.load_pem_private_key(self.key_pem, password=None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise TypeError("the CA key must be an EC key")
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + validity)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(ca_key, hashes.SHA256())
        )
        return IssuedCertificate(cert_pem=_cert_pem(cert), key_pem=_key_pem(key))


def create_ca(
    *,
    trust_domain: str,
    now: datetime.datetime,
    validity: datetime.timedelta = datetime.timedelta(days=3650),
) -> CertificateAuthority:
    """A new CA with a fresh key and a self-signed certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"coxswain CA {trust_domain}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(
        trust_domain=trust_domain, cert_pem=_cert_pem(cert), key_pem=_key_pem(key)
    )


def identity_from_certificate(cert_pem: bytes) -> ProxyIdentity:
    """The proxy identity a certificate's URI SAN names. Pure.

    Raises:
        IdentityError: no SAN extension, or not exactly one ``spiffe://`` URI SAN, or a URI
            that is not a ServiceAccount identity.
    """
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        raise IdentityError("the certificate has no subjectAltName") from None
    uris = [u for u in sans.get_values_for_type(x509.UniformResourceIdentifier) if u]
    spiffe = [u for u in uris if u.startswith(_SCHEME)]
    if len(spiffe) != 1:
        raise IdentityError(f"expected one spiffe URI SAN, found {len(spiffe)}")
    return ProxyIdentity.parse(spiffe[0])


def verify_issued_by(cert_pem: bytes, ca_pem: bytes, *, now: datetime.datetime) -> None:
    """Check that the CA signed the certificate and that it is valid at ``now``.

    Raises:
        IdentityError: wrong issuer, bad signature, or outside the validity window.
    """
    cert = x509.load_pem_x509_certificate(cert_pem)
    _check_signed_by(cert, x509.load_pem_x509_certificate(ca_pem))
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise IdentityError("the certificate is not valid at this time")


def renewal_due(cert_pem: bytes, ca_pem: bytes) -> datetime.datetime:
    """When a certificate the CA signed is due for replacement (``RENEW_BEFORE`` before it
    expires): the one rule every issuer renews by (:mod:`.cluster_ca`, :mod:`.cert_folder`,
    :class:`~.discovery.tls.ServerCertificate`).

    Raises:
        IdentityError: wrong issuer or bad signature.
        ValueError: either is not a PEM certificate.
    """
    cert = x509.load_pem_x509_certificate(cert_pem)
    _check_signed_by(cert, x509.load_pem_x509_certificate(ca_pem))
    return cert.not_valid_after_utc - RENEW_BEFORE


def _check_signed_by(cert: x509.Certificate, ca: x509.Certificate) -> None:
    if cert.issuer != ca.subject:
        raise IdentityError("the certificate was not issued by this CA")
    try:
        cert.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError) as exc:
        raise IdentityError(f"signature check failed: {exc}") from None


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
