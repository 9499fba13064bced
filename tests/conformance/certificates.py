"""The TLS Secrets and CA ConfigMaps the conformance suite creates in code before any test.

Upstream (``conformance/utils/suite/suite.go``, v1.6.1, "Applying programmatic resources")
generates these on every run rather than shipping them; so does this module, once per test
session, with trustme. Upstream signs some certificates by themselves (self-signed) and
trusts that certificate; here every certificate is signed by a CA of its own and the client
trusts the CA, which verifies the same names. Upstream turns the hosts that are no DNS names
(``*``, ``spiffe://…``) into URI names; trustme issues DNS and IP names only, so those are left
out (``*`` matches no Host either way; the URI is for BackendTLSPolicy SAN validation). The Secret
whose only host is ``*`` gets ``*.invalid``, which no test asks for.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import trustme

from tests.unit.boundary_objects import secret_of

__all__ = ["Issued", "suite_objects", "suite_tls"]

INFRA: Final = "gateway-conformance-infra"
WEB: Final = "gateway-conformance-web-backend"
APP: Final = "gateway-conformance-app-backend"


@dataclass(frozen=True, slots=True)
class Issued:
    """The CAs by ConfigMap or Secret name (``namespace/name``), for clients to trust, and the
    client certificates by Secret name, for clients to present."""

    trust: dict[str, trustme.CA]
    client_certs: dict[str, trustme.LeafCert]


def _config_map(namespace: str, name: str, ca: trustme.CA) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": name},
        "data": {"ca.crt": ca.cert_pem.bytes().decode()},
    }


@cache
def suite_tls() -> tuple[tuple[dict[str, Any], ...], Issued]:
    """Every Secret and ConfigMap of the suite's setup, and what a client needs of them."""
    objects: list[dict[str, Any]] = []
    trust: dict[str, trustme.CA] = {}
    clients: dict[str, trustme.LeafCert] = {}

    def serving(namespace: str, name: str, ca: trustme.CA, *hosts: str) -> None:
        objects.append(secret_of(ca.issue_cert(*hosts), name, namespace))
        trust[f"{namespace}/{name}"] = ca

    def client(namespace: str, name: str, ca: trustme.CA) -> None:
        cert = ca.issue_cert("client.conformance.invalid")
        objects.append(secret_of(cert, name, namespace))
        clients[f"{namespace}/{name}"] = cert

    def authority(namespace: str, name: str) -> trustme.CA:
        ca = trustme.CA()
        objects.append(_config_map(namespace, name, ca))
        trust[f"{namespace}/{name}"] = ca
        return ca

    serving(WEB, "certificate", trustme.CA(), "*.invalid")
    serving(INFRA, "tls-validity-checks-certificate", trustme.CA(), "*.org", "*.wildcard.org")
    authority(WEB, "web-backend-cm")
    client(INFRA, "tls-validity-checks-client-certificate",
           authority(INFRA, "tls-validity-checks-ca-certificate"))  # fmt: skip
    client(INFRA, "tls-validity-checks-per-port-client-certificate",
           authority(INFRA, "tls-validity-checks-per-port-ca-certificate"))  # fmt: skip
    checks = authority(INFRA, "tls-checks-ca-certificate")
    serving(INFRA, "tls-checks-certificate", checks,
            "abc.example.com", "other.example.com")  # fmt: skip
    client(INFRA, "tls-checks-client-certificate", checks)
    serving(INFRA, "tls-passthrough-checks-certificate", checks, "abc.example.com")
    serving(APP, "tls-passthrough-checks-certificate", checks, "abc.example.com")
    serving(INFRA, "tls-terminate-checks-certificate", checks, "tls.example.com")
    authority(INFRA, "mismatch-ca-certificate")
    return tuple(objects), Issued(trust, clients)


def suite_objects() -> tuple[dict[str, Any], ...]:
    """The Secrets and ConfigMaps alone."""
    return suite_tls()[0]
