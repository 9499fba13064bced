"""Objects the boundary tests (tests/unit/test_*_boundaries.py) build their worlds from, and
the conformance sweep and the backend TLS tests their certificates."""

from __future__ import annotations

import datetime
from typing import Any

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def tls_secret(name: str, namespace: str, host: str) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret with a certificate for ``host`` from a fresh CA."""
    return secret_of(trustme.CA().issue_cert(host), name, namespace)


def secret_of(cert: trustme.LeafCert, name: str, namespace: str) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret holding ``cert``, its chain and its key."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": b"".join(p.bytes() for p in cert.cert_chain_pems).decode(),
            "tls.key": cert.private_key_pem.bytes().decode(),
        },
    }


def issue_with_uris(ca: trustme.CA, *hosts: str) -> trustme.LeafCert:
    """A server certificate of ``ca`` for ``hosts``, each a DNS name, or a URI name when it has
    a scheme (as the conformance suite's ``generateRSACert`` sorts them): trustme issues DNS
    and IP names only. Valid for a day."""
    issuer = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    issuer_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), password=None)
    if not isinstance(issuer_key, ec.EllipticCurvePrivateKey):  # trustme's default key type
        raise TypeError(f"unexpected CA key {type(issuer_key).__name__}")
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [
        x509.UniformResourceIdentifier(h) if "://" in h else x509.DNSName(h) for h in hosts
    ]
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "default")]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(issuer_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return trustme.LeafCert(key_pem, certificate.public_bytes(serialization.Encoding.PEM), [])
