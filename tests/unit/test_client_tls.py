"""Client-certificate checks per request (``coxswain.route.client_tls``; nginx's
``ssl_verify_client`` as ingress-nginx configures it)."""

from __future__ import annotations

import pytest

from coxswain.compile.snapshot import ClientTLS
from coxswain.route.client_tls import ClientCertificate, client_tls_outcome

GOOD = ClientCertificate(chained=True, subject="CN=ann,O=shop", issuer="CN=CA", pem="-----A b")
STRANGER = ClientCertificate(chained=False, subject="CN=eve", issuer="CN=Other", pem="x")


@pytest.mark.parametrize(
    ("verify", "certificate", "status", "verified"),
    [
        ("on", None, 400, None),
        ("on", STRANGER, 400, None),
        ("on", GOOD, None, b"SUCCESS"),
        ("optional", None, None, b"NONE"),
        ("optional", STRANGER, 400, None),
        ("optional_no_ca", STRANGER, None, b"FAILED:"),
        ("off", STRANGER, None, b"NONE"),
    ],
)
def test_each_verify_mode_answers_as_nginx(
    verify: str, certificate: ClientCertificate | None, status: int | None, verified: bytes | None
) -> None:
    check = ClientTLS(ca_pem="", verify=verify)
    found, _, fields = client_tls_outcome(check, certificate, https=True)
    assert found == status
    if verified is not None:
        assert dict(fields)[b"ssl-client-verify"].startswith(verified)


def test_plain_http_is_not_checked_and_the_error_page_replaces_400() -> None:
    check = ClientTLS(ca_pem="", error_page="/help", pass_certificate=True)
    assert client_tls_outcome(check, None, https=False) == (None, None, ())
    assert client_tls_outcome(check, None, https=True) == (302, "/help", ())
    fields = dict(client_tls_outcome(check, GOOD, https=True)[2])
    assert fields[b"ssl-client-cert"] == b"-----A%20b"
    assert fields[b"ssl-client-subject-dn"] == b"CN=ann,O=shop"


def test_match_cn_refuses_a_subject_without_a_match_with_403() -> None:
    check = ClientTLS(ca_pem="", verify="optional", match_cn="CN=ann")

    def matches(subject: str) -> bool:
        return "CN=ann" in subject

    assert client_tls_outcome(check, GOOD, https=True, subject_matches=matches)[0] is None
    unmatched = ClientCertificate(chained=True, subject="CN=bob", issuer="CN=CA", pem="")
    assert client_tls_outcome(check, unmatched, https=True, subject_matches=matches)[0] == 403
    assert client_tls_outcome(check, None, https=True, subject_matches=matches)[0] == 403
    assert client_tls_outcome(check, None, https=False, subject_matches=matches)[0] == 403
