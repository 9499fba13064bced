"""Objects the boundary tests (tests/unit/test_*_boundaries.py) build their worlds from."""

from __future__ import annotations

from typing import Any

import trustme


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
