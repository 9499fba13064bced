"""Client-certificate authentication at its edges (``coxswain.route.client_tls``;
docs/migrating-from-ingress-nginx.md, "Access and limits"): the exact fields a backend gets for
an unchained certificate, the empty subject ``auth-tls-match-cn`` searches without one, and a
subject, issuer or PEM Latin-1 cannot hold, replaced rather than refused (the pure packages are
total)."""

from __future__ import annotations

from coxswain.compile.snapshot import ClientTLS
from coxswain.route.client_tls import ClientCertificate, client_tls_outcome, percent_escaped


def test_an_unchained_certificate_passes_optional_no_ca_with_every_field_exact() -> None:
    check = ClientTLS(ca_pem="", verify="optional_no_ca")
    seen = ClientCertificate(chained=False, subject="CN=a", issuer="CN=ca", pem="")
    assert client_tls_outcome(check, seen, https=True) == (
        None,
        None,
        (
            (
                b"ssl-client-verify",
                b"FAILED:the certificate is not issued by a CA of the Ingress's ca.crt",
            ),
            (b"ssl-client-subject-dn", b"CN=a"),
            (b"ssl-client-issuer-dn", b"CN=ca"),
        ),
    )


def test_match_cn_searches_the_empty_subject_when_there_is_no_certificate() -> None:
    check = ClientTLS(ca_pem="", verify="optional")
    searched: list[str] = []

    def matches(subject: str) -> bool:
        searched.append(subject)
        return subject == ""

    outcome = client_tls_outcome(check, None, https=True, subject_matches=matches)
    assert (outcome, searched) == ((None, None, ((b"ssl-client-verify", b"NONE"),)), [""])


def test_a_subject_issuer_or_pem_latin_1_cannot_hold_is_replaced() -> None:
    check = ClientTLS(ca_pem="", pass_certificate=True)
    seen = ClientCertificate(chained=True, subject="CN=\u20ac", issuer="O=\u0141", pem="\u20ac")
    assert client_tls_outcome(check, seen, https=True)[2] == (
        (b"ssl-client-verify", b"SUCCESS"),
        (b"ssl-client-subject-dn", b"CN=?"),
        (b"ssl-client-issuer-dn", b"O=?"),
        (b"ssl-client-cert", b"%3F"),
    )
    assert percent_escaped("a \u20ac") == "a%20%3F"
