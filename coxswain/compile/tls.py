"""TLS material: parsing and checking certificate chains, keys and CA bundles.

Parsing PEM is pure (bytes in, values out), so it lives in the core. It runs once per Secret
when the Secret is decoded, never per compile. What a proxy needs is the PEM text itself; what
the compiler needs besides is whether the pair is usable and which names the leaf covers, to
warn when a certificate is served for a host it does not name.

Rules:
1. A keypair is usable when the chain has at least one certificate, the key parses without a
   password, and the key's public half equals the leaf certificate's public key.
2. Name coverage follows RFC 6125 §6.4.3: a ``*.`` SAN covers exactly one label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from pyrsistent import pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PVector

__all__ = ["KeyPair", "covers", "parse_ca_bundle", "parse_keypair"]

_PUBLIC_DER = serialization.Encoding.DER
_SPKI = serialization.PublicFormat.SubjectPublicKeyInfo
_SIGNING_KEYS = (
    rsa.RSAPrivateKey,
    ec.EllipticCurvePrivateKey,
    ed25519.Ed25519PrivateKey,
    ed448.Ed448PrivateKey,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyPair:
    """A certificate chain (leaf first) and its private key, both PEM, plus the leaf's DNS names."""

    chain_pem: str
    key_pem: str = field(repr=False)  # no private key in a log line or a test's failure text
    dns_names: PVector[str]


def parse_keypair(chain_pem: bytes, key_pem: bytes) -> KeyPair | str:
    """Parse and check a certificate chain and key.

    Returns:
        The ``KeyPair``, or a sentence saying why it cannot be served.
    """
    try:
        chain = x509.load_pem_x509_certificates(chain_pem)
    except ValueError:
        return "tls.crt holds no valid PEM certificate"
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        return "tls.key is encrypted; Kubernetes TLS Secrets hold unencrypted keys"
    except Exception:  # noqa: BLE001 - ValueError, or UnsupportedAlgorithm for odd key types
        return "tls.key holds no usable PEM private key"
    if not isinstance(key, _SIGNING_KEYS):
        return "tls.key is not an RSA, ECDSA or EdDSA key, so it cannot sign a TLS handshake"
    leaf = chain[0]
    if key.public_key().public_bytes(_PUBLIC_DER, _SPKI) != leaf.public_key().public_bytes(
        _PUBLIC_DER, _SPKI
    ):
        return "tls.key does not match the first certificate in tls.crt"
    return KeyPair(
        chain_pem=chain_pem.decode("ascii", "replace"),
        key_pem=key_pem.decode("ascii", "replace"),
        dns_names=pvector(_dns_names(leaf)),
    )


def parse_ca_bundle(bundle_pem: bytes) -> str | None:
    """Check that a CA bundle holds at least one certificate.

    Returns:
        None when it is usable, else a sentence saying why not.
    """
    try:
        x509.load_pem_x509_certificates(bundle_pem)
    except ValueError:
        return "holds no valid PEM certificate"
    return None


def covers(dns_names: PVector[str], host: str) -> bool:
    """Whether a certificate naming ``dns_names`` is valid for ``host`` (RFC 6125 §6.4.3)."""
    host = host.lower()
    label, _, rest = host.partition(".")
    parent = rest if label and label != "*" and rest else None
    return any(
        name == host or (parent is not None and name.startswith("*.") and name[2:] == parent)
        for name in dns_names
    )


def _dns_names(leaf: x509.Certificate) -> list[str]:
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    except ValueError:  # a malformed extension: treat as naming nothing
        return []
    return sorted({name.lower() for name in san.value.get_values_for_type(x509.DNSName)})
