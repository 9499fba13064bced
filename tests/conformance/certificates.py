"""The TLS Secrets and CA ConfigMaps the conformance suite creates in code before any test.

Upstream (``conformance/utils/suite/suite.go``, v1.6.1, "Applying programmatic resources")
generates these on every run rather than shipping them; so does this module, once per test
session, with trustme. Upstream signs some certificates by themselves (self-signed) and
trusts that certificate; here every certificate is signed by a CA of its own and the client
trusts the CA, which verifies the same names. Upstream turns a host that is no DNS name into
a URI name (``url.Parse``); trustme issues DNS and IP names only, so the certificate that has
one (``spiffe://…``, for BackendTLSPolicy SAN validation) is built with ``cryptography``
(``issue_with_uris``), signed by the same trustme CA. The host ``*`` is left out (it
matches no Host either way); the Secret whose only host it is gets ``*.invalid``, which no
test asks for.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import trustme

from tests.unit.boundary_objects import issue_with_uris, secret_of

__all__ = ["Issued", "server_context", "suite_objects", "suite_tls"]

INFRA: Final = "gateway-conformance-infra"
WEB: Final = "gateway-conformance-web-backend"
APP: Final = "gateway-conformance-app-backend"


@dataclass(frozen=True, slots=True)
class Issued:
    """The CAs by ConfigMap or Secret name (``namespace/name``), for clients to trust, and the
    certificate of every TLS Secret by its name, for clients to present and servers to serve."""

    trust: dict[str, trustme.CA]
    leaves: dict[str, trustme.LeafCert]

    def certificate_pem(self, secret: str) -> str:
        """The ``tls.crt`` of a Secret (its certificate chain, PEM)."""
        return b"".join(p.bytes() for p in self.leaves[secret].cert_chain_pems).decode()


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
    leaves: dict[str, trustme.LeafCert] = {}

    def secret(namespace: str, name: str, cert: trustme.LeafCert) -> None:
        objects.append(secret_of(cert, name, namespace))
        leaves[f"{namespace}/{name}"] = cert

    def serving(namespace: str, name: str, ca: trustme.CA, *hosts: str) -> None:
        uris = any("://" in host for host in hosts)
        secret(namespace, name, issue_with_uris(ca, *hosts) if uris else ca.issue_cert(*hosts))
        trust[f"{namespace}/{name}"] = ca

    def client(namespace: str, name: str, ca: trustme.CA) -> None:
        secret(namespace, name, ca.issue_cert("client.conformance.invalid"))

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
    serving(INFRA, "tls-checks-certificate", checks, "abc.example.com",
            "spiffe://abc.example.com/test-identity", "other.example.com")  # fmt: skip
    client(INFRA, "tls-checks-client-certificate", checks)
    serving(INFRA, "tls-passthrough-checks-certificate", checks, "abc.example.com")
    serving(APP, "tls-passthrough-checks-certificate", checks, "abc.example.com")
    serving(INFRA, "tls-terminate-checks-certificate", checks, "tls.example.com")
    authority(INFRA, "mismatch-ca-certificate")
    return tuple(objects), Issued(trust, leaves)


def suite_objects() -> tuple[dict[str, Any], ...]:
    """The Secrets and ConfigMaps alone."""
    return suite_tls()[0]


def server_context(secret: str, client_ca: str | None) -> ssl.SSLContext:
    """What an echo backend with ``TLS_SERVER_CERT`` serves: the certificate of Secret
    ``secret``; with ``TLS_CLIENT_CACERTS`` (the CA ConfigMap ``client_ca``), a client
    certificate is asked for and verified if given (``echo-basic``'s
    ``tls.VerifyClientCertIfGiven``)."""
    issued = suite_tls()[1]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    issued.leaves[secret].configure_cert(context)
    if client_ca is not None:
        issued.trust[client_ca].configure_trust(context)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context
