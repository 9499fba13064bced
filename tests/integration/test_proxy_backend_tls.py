"""TLS to backends (BackendTLSPolicy, GEP-1897; the Gateway's backend client certificate), over
real sockets: echo backends behind TLS with trustme certificates, the proxy verifying them."""

from __future__ import annotations

import datetime
import ssl
import time
from typing import TYPE_CHECKING, Any

import trustme

from tests.unit.boundary_objects import issue_with_uris

from .proxy_harness import Running, backend, echoed, gateway_rule, request, run_proxy, snapshot

if TYPE_CHECKING:
    from pathlib import Path

HOST = "abc.example.com"
SPIFFE = "spiffe://abc.example.com/test-identity"


def _server_context(leaf: trustme.LeafCert, client_ca: trustme.CA | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    leaf.configure_cert(context)
    if client_ca is not None:  # the backend asks for a client certificate and requires one
        client_ca.configure_trust(context)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _uri_server_context() -> tuple[ssl.SSLContext, str]:
    """A backend whose certificate names only a URI, and the PEM of the CA that signed it."""
    ca = trustme.CA()
    return _server_context(issue_with_uris(ca, SPIFFE)), ca.cert_pem.bytes().decode()


def _tls(ca_pem: str | None, server_name: str = HOST, **extra: Any) -> dict[str, Any]:
    return {
        "policy": "app/policy",
        "server_name": server_name,
        "ca_bundle": ca_pem,
        "subject_alt_names": [],
        "client_certificate": None,
        "problem": None,
        **extra,
    }


def _san(kind: str, value: str) -> dict[str, str]:
    return {"type": kind, "value": value}


def _exact(path: str, service: str, tls: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    chosen = backend(service, **extra)
    if tls is not None:
        chosen["tls"] = tls
    return gateway_rule(
        [chosen],
        match={"path_type": "Exact", "path": path, "headers": [], "query": [], "method": None},
    )


def test_backends_are_reached_over_verified_tls(tmp_path: Path) -> None:
    ca, other_ca, client_ca = trustme.CA(), trustme.CA(), trustme.CA()
    ca_pem = ca.cert_pem.bytes().decode()
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)
    expired = ca.issue_cert(HOST, not_before=past - datetime.timedelta(days=2), not_after=past)
    client_leaf = client_ca.issue_cert("gateway.example.com")
    client_certificate = {
        "cert_chain": "".join(b.bytes().decode() for b in client_leaf.cert_chain_pems),
        "private_key": client_leaf.private_key_pem.bytes().decode(),
        "secret": "app/gateway-client",
    }
    uri_context, uri_ca_pem = _uri_server_context()
    contexts = {
        "good": _server_context(ca.issue_cert(HOST)),
        "expired": _server_context(expired),
        "mtls": _server_context(ca.issue_cert(HOST), client_ca=client_ca),
        "uri": uri_context,
    }
    services = {  # service → the echo serving it
        "good": "good",
        "wrong-host": "good",
        "unknown-ca": "good",
        "san-dns": "good",
        "san-dns-only": "good",
        "san-dns-mismatch": "good",
        "expired": "expired",
        "uri": "uri",
        "uri-mismatch": "uri",
        "mtls": "mtls",
        "mtls-without": "mtls",
        "plain": "plain",
        "invalid": "plain",
        "mirror": "good",
        "mirror-unverified": "good",
    }

    def make(ports: dict[str, int]) -> dict[str, Any]:
        rules = [
            _exact("/good", "good", _tls(ca_pem)),
            _exact("/wrong-host", "wrong-host", _tls(ca_pem, "mismatch.example.com")),
            _exact("/unknown-ca", "unknown-ca", _tls(other_ca.cert_pem.bytes().decode())),
            _exact("/san-dns", "san-dns", _tls(ca_pem, subject_alt_names=[_san("Hostname", HOST)])),
            # with subjectAltNames, the hostname is for SNI only (not authenticated)
            _exact(
                "/san-dns-only",
                "san-dns-only",
                _tls(ca_pem, "sni.example.com", subject_alt_names=[_san("Hostname", HOST)]),
            ),
            _exact(
                "/san-dns-mismatch",
                "san-dns-mismatch",
                _tls(ca_pem, subject_alt_names=[_san("Hostname", "dce.example.com")]),
            ),
            _exact("/expired", "expired", _tls(ca_pem)),
            _exact("/uri", "uri", _tls(uri_ca_pem, subject_alt_names=[_san("URI", SPIFFE)])),
            _exact(
                "/uri-mismatch",
                "uri-mismatch",
                _tls(
                    uri_ca_pem,
                    subject_alt_names=[
                        _san("URI", "spiffe://def.example.com/test-identity"),
                        _san("Hostname", "def.example.com"),
                    ],
                ),
            ),
            _exact("/mtls", "mtls", _tls(ca_pem, client_certificate=client_certificate)),
            _exact("/mtls-without", "mtls-without", _tls(ca_pem)),
            _exact("/plain", "plain", None),
            # mirrors are reached over TLS too: verified, and dropped when verification fails
            {
                **_exact("/mirrored", "plain", None),
                "mirrors": [
                    {"backend": {**backend("mirror"), "tls": _tls(ca_pem)}, "percent": 100},
                    {
                        "backend": {
                            **backend("mirror-unverified"),
                            "tls": _tls(ca_pem, "mismatch.example.com"),
                        },
                        "percent": 100,
                    },
                ],
            },
            _exact(
                "/invalid",
                "invalid",
                _tls(None, problem="BackendTLSPolicy app/policy cannot be honoured: no CA"),
                valid=False,
            ),
        ]
        return snapshot(
            endpoints={service: [ports[echo]] for service, echo in services.items()},
            gateway_port=ports["gateway"],
            gateway_rules=rules,
        )

    def client(run: Running) -> None:
        def status(path: str) -> int:
            return request(run.gateway_port, "GET", path)[0].status

        for path, echo in (
            ("/good", "good"),
            ("/san-dns", "good"),
            ("/san-dns-only", "good"),
            ("/uri", "uri"),
            ("/mtls", "mtls"),
            ("/plain", "plain"),
        ):
            response, data = request(run.gateway_port, "GET", path)
            assert response.status == 200, (path, data)
            assert echoed(data)["backend"] == echo
        for path in (
            "/wrong-host",
            "/unknown-ca",
            "/san-dns-mismatch",
            "/expired",
            "/uri-mismatch",
            "/mtls-without",
        ):
            assert status(path) == 502, path
        response, data = request(run.gateway_port, "GET", "/invalid")
        assert response.status == 500
        assert len(run.received["plain"]) == 1  # the invalid backend got nothing, in plaintext
        before = len(run.received["good"])
        assert status("/mirrored") == 200
        deadline = time.monotonic() + 10
        while len(run.received["good"]) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        mirrored = run.received["good"][before:]
        assert [r["target"] for r in mirrored] == ["/mirrored"]  # the verified mirror alone
        assert len(run.received["plain"]) == 2
        # a TLS connection is reused for its own settings, never for another backend's
        first = echoed(request(run.gateway_port, "GET", "/good")[1])["connection"]
        assert echoed(request(run.gateway_port, "GET", "/good")[1])["connection"] == first
        assert echoed(request(run.gateway_port, "GET", "/san-dns")[1])["connection"] != first

    run_proxy(
        tmp_path,
        make,
        client,
        backends=("good", "expired", "uri", "mtls", "plain"),
        tls_backends=contexts,
    )
