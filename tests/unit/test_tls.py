"""compile.tls: keypair parsing and checking, CA bundles, RFC 6125 name coverage."""

from __future__ import annotations

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, x25519
from pyrsistent import pvector

from coxswain.compile.tls import KeyPair, covers, parse_ca_bundle, parse_keypair


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def leaf(ca: trustme.CA) -> trustme.LeafCert:
    return ca.issue_cert("Shop.Example.com", "*.apps.example.com", "10.0.0.1")


@pytest.fixture(scope="module")
def other(ca: trustme.CA) -> trustme.LeafCert:
    return ca.issue_cert("other.example.com")


def chain_of(cert: trustme.LeafCert) -> bytes:
    return b"".join(p.bytes() for p in cert.cert_chain_pems)


MISMATCH = "tls.key does not match the first certificate in tls.crt"
NO_CERTIFICATE = "tls.crt holds no valid PEM certificate"
NO_KEY = "tls.key holds no usable PEM private key"


def test_keypair_is_returned_when_key_matches_the_leaf(leaf):
    chain, key = chain_of(leaf), leaf.private_key_pem.bytes()
    # DNS names only (the IP SAN is not one), lower-cased and sorted.
    assert parse_keypair(chain, key) == KeyPair(
        chain_pem=chain.decode(),
        key_pem=key.decode(),
        dns_names=pvector(["*.apps.example.com", "shop.example.com"]),
    )


def test_keypair_is_returned_when_the_chain_holds_the_leaf_only(leaf):
    chain, key = leaf.cert_chain_pems[0].bytes(), leaf.private_key_pem.bytes()
    assert parse_keypair(chain, key) == KeyPair(
        chain_pem=chain.decode(),
        key_pem=key.decode(),
        dns_names=pvector(["*.apps.example.com", "shop.example.com"]),
    )


def test_keypair_is_refused_when_the_key_belongs_to_another_certificate(leaf, other):
    assert parse_keypair(chain_of(leaf), other.private_key_pem.bytes()) == MISMATCH


def test_keypair_is_refused_when_the_key_matches_only_a_later_certificate(ca, leaf):
    # The CA's key matches the second certificate of the chain, not the leaf.
    assert parse_keypair(chain_of(leaf), ca.private_key_pem.bytes()) == MISMATCH


@pytest.mark.parametrize(
    "chain",
    [
        b"",
        b"not pem at all",
        b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ],
)
def test_keypair_is_refused_when_the_chain_is_garbage(leaf, chain):
    assert parse_keypair(chain, leaf.private_key_pem.bytes()) == NO_CERTIFICATE


@pytest.mark.parametrize(
    "key",
    [
        b"",
        b"garbage",
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ],
)
def test_keypair_is_refused_when_the_key_is_garbage(leaf, key):
    assert parse_keypair(chain_of(leaf), key) == NO_KEY


def test_keypair_is_refused_when_the_key_is_the_certificate(leaf):
    assert parse_keypair(chain_of(leaf), chain_of(leaf)) == NO_KEY


def test_keypair_is_refused_when_the_key_is_encrypted(leaf):
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"passphrase"),
    )
    assert b"ENCRYPTED" in encrypted
    assert parse_keypair(chain_of(leaf), encrypted) == (
        "tls.key is encrypted; Kubernetes TLS Secrets hold unencrypted keys"
    )


def test_keypair_is_refused_when_the_key_is_of_another_curve_type(leaf):
    stranger = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    assert parse_keypair(chain_of(leaf), stranger) == MISMATCH


def test_keypair_is_refused_when_the_key_cannot_sign(leaf):
    exchange_only = x25519.X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    assert parse_keypair(chain_of(leaf), exchange_only) == (
        "tls.key is not an RSA, ECDSA or EdDSA key, so it cannot sign a TLS handshake"
    )


def test_ca_bundle_is_accepted_when_it_holds_certificates(ca, leaf):
    assert parse_ca_bundle(ca.cert_pem.bytes()) is None
    assert parse_ca_bundle(chain_of(leaf)) is None


@pytest.mark.parametrize("bundle", [b"", b"nope", b"-----BEGIN CERTIFICATE-----\n-----END"])
def test_ca_bundle_is_refused_when_it_holds_no_certificate(bundle):
    assert parse_ca_bundle(bundle) == "holds no valid PEM certificate"


# --- covers (RFC 6125 §6.4.3) -------------------------------------------------------------------

NAMES = pvector(["shop.example.com", "*.apps.example.com"])


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("shop.example.com", True),
        ("SHOP.Example.COM", True),
        ("a.apps.example.com", True),
        ("*.apps.example.com", True),
        ("apps.example.com", False),
        ("a.b.apps.example.com", False),
        ("www.shop.example.com", False),
        ("example.com", False),
        ("other.example.com", False),
        ("shop.example.co", False),
        ("", False),
    ],
)
def test_covers_exact_names_and_wildcards_of_exactly_one_label(host, expected):
    assert covers(NAMES, host) is expected


def test_covers_nothing_when_the_certificate_names_nothing():
    assert covers(pvector(), "shop.example.com") is False


def test_a_wildcard_host_is_not_covered_by_a_single_name_below_it():
    assert covers(pvector(["a.apps.example.com"]), "*.apps.example.com") is False


def test_a_wildcard_does_not_cover_an_empty_label():
    assert covers(NAMES, ".apps.example.com") is False
