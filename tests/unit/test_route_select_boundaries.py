"""``route.select`` at its edges: the 400 of a target no form serves and the authority of an
absolute-form one, an exact path beside regex paths, the Decision of a path whose actions deny
or answer, what a forwarded decision carries for its actions (timeouts, per-request checks,
the external auth), HSTS on HTTPS only, a backend's TLS problem, and the port of odd Host
headers."""

from __future__ import annotations

from typing import Any

import pytest

from coxswain.compile import CompileConfig
from coxswain.compile.config import IngressDefaults
from coxswain.compile.snapshot import ExternalAuth
from coxswain.route import Decision, RequestHead, RouteTable, build_table, select
from coxswain.route.select import port_of
from tests.unit import ingress_world
from tests.unit.ingress_world import ingress, path, rule, table_of

PREFIX = "nginx.ingress.kubernetes.io/"


def decide(
    table: RouteTable, host: str | None, target: str = "/", *, port: int = 80, tls: bool = False
) -> Decision:
    return select(
        table, RequestHead(port=port, method="GET", target=target, host=host, tls=tls, sni=None)
    )


def annotated(name: str, service: str, **annotations: str) -> RouteTable:
    return table_of(
        ingress(
            name,
            rule("a.example.com", path("/", service)),
            annotations={PREFIX + k.replace("_", "-"): v for k, v in annotations.items()},
        )
    )


@pytest.fixture(scope="module")
def plain() -> RouteTable:
    return table_of(ingress("plain", rule("a.example.com", path("/", "a"))))


def test_a_target_no_form_serves_is_400_with_the_host_as_sent(plain: RouteTable) -> None:
    reason = "the request target's scheme 'ftp' is not http or https"
    assert decide(plain, None, "ftp://a.example.com/") == Decision(
        matched=False, status=400, reason=reason, host="", path="ftp://a.example.com/"
    )


def test_an_absolute_form_target_is_routed_and_forwarded_by_its_authority(
    plain: RouteTable,
) -> None:
    decision = decide(plain, "b.example.com", "http://a.example.com/p/../q?x")
    assert decision.status is None
    assert (decision.host, decision.path, decision.authority) == (
        "a.example.com",
        "/q?x",
        "a.example.com",
    )
    assert decision.backends[0].service == "a"


def test_an_exact_path_is_taken_before_the_regex_paths_are_tried() -> None:
    table = table_of(
        ingress("exact", rule("a.example.com", path("/x", "a", "Exact"))),
        ingress(
            "regex",
            rule("a.example.com", path("/y", "b", "ImplementationSpecific")),
            annotations={PREFIX + "use-regex": "true"},
        ),
    )
    assert decide(table, "a.example.com", "/x").backends[0].service == "a"


def test_a_denied_path_answers_503_naming_its_rule_and_backend() -> None:
    decision = decide(annotated("denied", "a", auth_url=""), "a.example.com", "/p")
    assert (decision.matched, decision.status) == (True, 503)
    assert decision.reason == (
        "host 'a.example.com', Prefix path '/' of Ingress apps/denied: annotation"
        f" {PREFIX}auth-url '' is empty"
    )
    assert decision.route is not None
    assert decision.route.name == "denied"
    assert [b.service for b in decision.backends] == ["a"]


def test_an_action_s_redirect_keeps_the_scheme_and_names_its_rule_and_backend() -> None:
    table = annotated("root", "a", app_root="/app")
    decision = decide(table, "a.example.com", "/", port=443, tls=True)
    assert (decision.matched, decision.status, decision.redirect) == (
        True,
        302,
        "https://a.example.com/app",
    )
    assert decision.route is not None
    assert decision.route.name == "root"
    assert [b.service for b in decision.backends] == ["a"]
    assert decide(table, "a.example.com", "/").redirect == "http://a.example.com/app"


def test_timeouts_alone_travel_without_checks_or_auth() -> None:
    decision = decide(annotated("slow", "a", proxy_connect_timeout="7"), "a.example.com")
    assert (decision.status, decision.timeouts, decision.checks, decision.external_auth) == (
        None,
        (7.0, 0.0, 0.0),
        None,
        None,
    )


def test_the_external_auth_travels_with_the_checks_and_without_timeouts() -> None:
    decision = decide(annotated("auth", "a", auth_url="http://auth.svc/v"), "a.example.com")
    assert decision.external_auth == ExternalAuth(
        url="http://auth.svc/v", host="auth.svc", port=80, target="/v"
    )
    assert decision.checks is not None
    assert decision.checks.external_auth == decision.external_auth
    assert decision.timeouts is None


@pytest.fixture(scope="module")
def tls_secret() -> dict[str, Any]:
    return ingress_world.tls_secret("secure.example.com", "secure-cert")


@pytest.fixture(scope="module")
def secure(tls_secret: dict[str, Any]) -> RouteTable:
    return table_of(
        ingress(
            "secure",
            rule("secure.example.com", path("/", "web")),
            rule("plain.example.com", path("/", "web")),
            tls=[{"hosts": ["secure.example.com"], "secretName": "secure-cert"}],
        ),
        tls_secret,
        config=CompileConfig(ingress_defaults=IngressDefaults(hsts=True)),
    )


def test_hsts_goes_on_https_answers_of_a_host_with_a_certificate_only(secure: RouteTable) -> None:
    hsts = (b"strict-transport-security", b"max-age=31536000; includeSubDomains")
    assert decide(secure, "secure.example.com", port=443, tls=True).response_fields == (hsts,)
    assert decide(secure, "plain.example.com", port=443, tls=True).response_fields == ()


def test_a_port_named_with_an_x_is_not_http_s_default(secure: RouteTable) -> None:
    table = build_table(secure.snapshot, ingress_http_port=8080, ingress_https_port=8443)
    decision = decide(table, "secure.example.com:X80", "/p", port=8080)
    assert (decision.status, decision.redirect) == (308, "https://secure.example.com:8443/p")


def test_a_backend_s_tls_problem_is_the_503_s_reason() -> None:
    table = annotated("upstream", "a", backend_protocol="HTTPS", proxy_ssl_secret="gone")
    decision = decide(table, "a.example.com")
    assert (decision.status, decision.reason) == (
        503,
        "host 'a.example.com', Prefix path '/' of Ingress apps/upstream: annotation"
        f" {PREFIX}proxy-ssl-secret names Secret apps/gone, which does not exist",
    )


@pytest.mark.parametrize(
    ("header", "port"),
    [("a:1:2", "2"), ("[::]", ""), ("[a]:1]", "1]"), ("a:1]b", "1]b")],
)
def test_port_of_takes_what_follows_the_last_colon_after_an_ipv6_literal(
    header: str, port: str
) -> None:
    assert port_of(header) == port
