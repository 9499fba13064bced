"""compile.tls: the exact text kept of a keypair whose PEM holds bytes outside ASCII."""

from __future__ import annotations

import trustme
from pyrsistent import pvector

from coxswain.compile.tls import KeyPair, parse_keypair


def test_a_non_ascii_line_outside_the_pem_blocks_is_kept_as_replacement_characters() -> None:
    # RFC 7468 section 2: text outside the BEGIN/END lines is ignored by a parser, and
    # `cryptography` accepts it whatever its bytes; the kept text is ASCII with U+FFFD for
    # each byte that is not, never an error.
    leaf = trustme.CA().issue_cert("shop.example.com")
    chain = "Zertifikat für shop\n".encode() + leaf.cert_chain_pems[0].bytes()
    key = "Schlüssel\n".encode() + leaf.private_key_pem.bytes()
    assert parse_keypair(chain, key) == KeyPair(
        chain_pem="Zertifikat f\ufffd\ufffdr shop\n" + leaf.cert_chain_pems[0].bytes().decode(),
        key_pem="Schl\ufffd\ufffdssel\n" + leaf.private_key_pem.bytes().decode(),
        dns_names=pvector(["shop.example.com"]),
    )
