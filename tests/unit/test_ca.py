"""The discovery CA: issuing, chain checks and identity parsing."""

from __future__ import annotations

import datetime

import pytest
import trustme

from coxswain.shell.discovery.ca import (
    IdentityError,
    ProxyIdentity,
    create_ca,
    identity_from_certificate,
    verify_issued_by,
)

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def test_proxy_certificate_names_its_service_account_when_issued() -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    issued = ca.issue_proxy(namespace="infra", name="edge", now=NOW)
    identity = identity_from_certificate(issued.cert_pem)
    assert identity == ProxyIdentity(trust_domain="coxswain.test", namespace="infra", name="edge")
    assert identity.uri == "spiffe://coxswain.test/ns/infra/sa/edge"
    assert b"PRIVATE KEY" in issued.key_pem


def test_chain_verifies_when_issued_by_the_ca() -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    issued = ca.issue_proxy(namespace="infra", name="edge", now=NOW)
    verify_issued_by(issued.cert_pem, ca.cert_pem, now=NOW)
    server = ca.issue_server(hosts=["127.0.0.1", "localhost"], now=NOW)
    verify_issued_by(server.cert_pem, ca.cert_pem, now=NOW)


def test_chain_is_refused_when_another_ca_issued_it() -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    other = create_ca(trust_domain="coxswain.test", now=NOW)
    issued = other.issue_proxy(namespace="infra", name="edge", now=NOW)
    with pytest.raises(IdentityError):
        verify_issued_by(issued.cert_pem, ca.cert_pem, now=NOW)


def test_chain_is_refused_when_expired() -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    issued = ca.issue_proxy(
        namespace="infra", name="edge", now=NOW, validity=datetime.timedelta(days=1)
    )
    with pytest.raises(IdentityError):
        verify_issued_by(issued.cert_pem, ca.cert_pem, now=NOW + datetime.timedelta(days=2))


def test_identity_is_refused_when_the_certificate_has_no_uri_san() -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    server = ca.issue_server(hosts=["localhost"], now=NOW)
    with pytest.raises(IdentityError):
        identity_from_certificate(server.cert_pem)
    other = trustme.CA().issue_cert("proxy.test")
    with pytest.raises(IdentityError):
        identity_from_certificate(other.cert_chain_pems[0].bytes())


@pytest.mark.parametrize(
    "uri",
    [
        "https://coxswain.test/ns/a/sa/b",
        "spiffe://coxswain.test/ns/a",
        "spiffe://coxswain.test/ns//sa/b",
        "spiffe://coxswain.test/sa/a/ns/b",
        "spiffe://coxswain.test/ns/a/sa/b/c",
    ],
)
def test_identity_uri_is_refused_when_not_a_service_account(uri: str) -> None:
    with pytest.raises(IdentityError):
        ProxyIdentity.parse(uri)


def test_issue_is_refused_when_a_name_contains_a_slash() -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    with pytest.raises(IdentityError):
        ca.issue_proxy(namespace="a/b", name="edge", now=NOW)
