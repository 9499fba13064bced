"""route.select on snapshots compiled from small in-memory states: host, path, answers."""

from __future__ import annotations

from typing import Any

import pytest

from coxswain.compile import CompileConfig
from coxswain.route import Decision, RequestHead, RouteTable, build_table, select
from coxswain.route.select import port_of
from tests.unit import ingress_world
from tests.unit.ingress_world import (
    ingress,
    path,
    rule,
    service,
    service_backend,
    table_of,
)


def decide(
    table: RouteTable, host: str | None, target: str = "/", *, port: int = 80, tls: bool = False
) -> Decision:
    return select(
        table, RequestHead(port=port, method="GET", target=target, host=host, tls=tls, sni=None)
    )


def served_by(decision: Decision) -> str | None:
    """The Service a forwarded request goes to (None when the proxy answers itself)."""
    assert decision.status is None, decision
    assert decision.matched
    return decision.backends[0].service


# --- hosts --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hosts() -> RouteTable:
    return table_of(
        ingress(
            "hosts",
            rule("a.example.com", path("/", "a")),
            rule("b.example.com", path("/", "b")),
            rule("exact.wild.example.com", path("/", "exact")),
            rule("*.wild.example.com", path("/", "wild")),
        )
    )


@pytest.fixture(scope="module")
def hosts_and_catch_all() -> RouteTable:
    return table_of(
        ingress(
            "hosts",
            rule("a.example.com", path("/", "a")),
            rule("*.wild.example.com", path("/", "wild")),
            rule(None, path("/", "catch")),
        )
    )


def test_exact_host_selects_its_rules(hosts):
    assert served_by(decide(hosts, "a.example.com")) == "a"
    assert served_by(decide(hosts, "b.example.com")) == "b"


@pytest.mark.parametrize(
    "header", ["A.EXAMPLE.COM", "a.example.com:8080", "A.Example.Com:80", "a.example.com."]
)
def test_host_matches_when_case_port_or_trailing_dot_differ(hosts, header):
    decision = decide(hosts, header)
    assert served_by(decision) == "a"
    assert decision.host == header


def test_wildcard_host_matches_one_label(hosts):
    assert served_by(decide(hosts, "x.wild.example.com")) == "wild"


def test_exact_host_wins_over_the_wildcard_when_both_match(hosts):
    assert served_by(decide(hosts, "exact.wild.example.com")) == "exact"


@pytest.mark.parametrize("header", ["a.b.wild.example.com", "wild.example.com", "example.com"])
def test_wildcard_host_does_not_match_when_labels_are_not_exactly_one(hosts, header):
    decision = decide(hosts, header)
    assert (decision.matched, decision.status) == (False, 404)


def test_wildcard_host_does_not_match_an_empty_label(hosts):
    assert decide(hosts, ".wild.example.com").status == 404


def test_unknown_host_is_404_with_a_reason_when_there_is_no_catch_all(hosts):
    decision = decide(hosts, "unknown.example.org")
    assert (decision.matched, decision.status) == (False, 404)
    assert "unknown.example.org" in decision.reason
    assert decision.route is None
    assert decision.backends == ()


@pytest.mark.parametrize("header", ["unknown.example.org", "a.b.wild.example.com", "10.1.2.3:80"])
def test_catch_all_serves_every_other_host(hosts_and_catch_all, header):
    assert served_by(decide(hosts_and_catch_all, header)) == "catch"


def test_catch_all_does_not_shadow_exact_or_wildcard_hosts(hosts_and_catch_all):
    assert served_by(decide(hosts_and_catch_all, "a.example.com")) == "a"
    assert served_by(decide(hosts_and_catch_all, "q.wild.example.com")) == "wild"


@pytest.mark.parametrize("header", ["[::1]", "[::1]:8080", "[2001:DB8::1]:443"])
def test_ipv6_literal_host_goes_to_the_catch_all(hosts_and_catch_all, header):
    decision = decide(hosts_and_catch_all, header)
    assert served_by(decision) == "catch"
    assert decision.host == header


def test_ipv6_literal_host_is_404_when_there_is_no_catch_all(hosts):
    decision = decide(hosts, "[::1]:8080")
    assert decision.status == 404
    assert "[::1]" in decision.reason


def test_missing_host_goes_to_the_catch_all(hosts_and_catch_all):
    assert served_by(decide(hosts_and_catch_all, None)) == "catch"
    assert served_by(decide(hosts_and_catch_all, "")) == "catch"


def test_missing_host_is_404_when_there_is_no_catch_all(hosts):
    decision = decide(hosts, None)
    assert (decision.matched, decision.status) == (False, 404)


def test_rules_of_several_ingresses_on_one_host_are_merged():
    table = table_of(
        ingress("one", rule("m.example.com", path("/a", "a"))),
        ingress("two", rule("m.example.com", path("/b", "b"))),
    )
    assert served_by(decide(table, "m.example.com", "/a")) == "a"
    assert served_by(decide(table, "m.example.com", "/b/x")) == "b"
    assert decide(table, "m.example.com", "/b/x").route.name == "two"


# --- paths --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paths() -> RouteTable:
    return table_of(
        ingress(
            "paths",
            rule(
                "p.example.com",
                path("/foo", "prefix", "Prefix"),
                path("/foo", "exact", "Exact"),
                path("/api", "a"),
                path("/api/v1", "b"),
                path("/api/v1/users", "c"),
                path("/slash/", "web"),
                path("/exact-only", "exact", "Exact"),
                path("/exact-slash/", "exact", "Exact"),
                path("/impl", "root", "ImplementationSpecific"),
                path("/public", "web"),
                path("/admin", "admin"),
            ),
        )
    )


def test_exact_path_wins_over_an_equal_prefix(paths):
    assert served_by(decide(paths, "p.example.com", "/foo")) == "exact"
    assert served_by(decide(paths, "p.example.com", "/foo/bar")) == "prefix"
    assert served_by(decide(paths, "p.example.com", "/foo/")) == "prefix"


@pytest.mark.parametrize(
    ("target", "service"),
    [
        ("/api", "a"),
        ("/api/", "a"),
        ("/api/v2", "a"),
        ("/api/v1", "b"),
        ("/api/v1/", "b"),
        ("/api/v1/groups", "b"),
        ("/api/v1/users", "c"),
        ("/api/v1/users/42/posts", "c"),
    ],
)
def test_longest_prefix_wins(paths, target, service):
    assert served_by(decide(paths, "p.example.com", target)) == service


@pytest.mark.parametrize("target", ["/foobar", "/apis", "/api2/v1", "/FOO", "/"])
def test_prefix_matches_whole_path_elements_only(paths, target):
    decision = decide(paths, "p.example.com", target)
    assert (decision.matched, decision.status) == (False, 404)


@pytest.mark.parametrize("target", ["/slash", "/slash/", "/slash/x"])
def test_prefix_with_a_trailing_slash_matches_with_or_without_it(paths, target):
    assert served_by(decide(paths, "p.example.com", target)) == "web"


def test_exact_path_requires_the_same_trailing_slash(paths):
    assert served_by(decide(paths, "p.example.com", "/exact-only")) == "exact"
    assert decide(paths, "p.example.com", "/exact-only/").status == 404
    assert decide(paths, "p.example.com", "/exact-only/x").status == 404
    assert served_by(decide(paths, "p.example.com", "/exact-slash/")) == "exact"
    assert decide(paths, "p.example.com", "/exact-slash").status == 404


def test_implementation_specific_is_served_as_prefix(paths):
    assert served_by(decide(paths, "p.example.com", "/impl/deeper")) == "root"


def test_path_is_normalised_before_it_is_matched_and_forwarded(paths):
    decision = decide(paths, "p.example.com", "/public/../admin")
    assert served_by(decision) == "admin"
    assert decision.path == "/admin"
    decision = decide(paths, "p.example.com", "/public/%2e%2e/admin?x=1")
    assert served_by(decision) == "admin"
    assert decision.path == "/admin?x=1"
    assert served_by(decide(paths, "p.example.com", "//api///v1")) == "b"


def test_query_string_is_preserved_in_the_forwarded_path(paths):
    decision = decide(paths, "p.example.com", "/api/v1/users?id=7&sort=name%20asc")
    assert served_by(decision) == "c"
    assert decision.path == "/api/v1/users?id=7&sort=name%20asc"


def test_query_string_does_not_take_part_in_path_matching(paths):
    assert served_by(decide(paths, "p.example.com", "/api?/v1/users")) == "a"


def test_path_miss_is_404_with_a_reason_when_the_host_has_no_default(paths):
    decision = decide(paths, "p.example.com", "/nowhere?q=1")
    assert (decision.matched, decision.status) == (False, 404)
    assert "/nowhere" in decision.reason
    assert "default backend" in decision.reason
    assert decision.path == "/nowhere?q=1"


def test_matched_decision_names_the_rule(paths):
    decision = decide(paths, "p.example.com", "/api/v1")
    assert (decision.route.kind, decision.route.namespace, decision.route.name) == (
        "Ingress",
        "apps",
        "paths",
    )
    assert decision.route.rule == "spec.rules[0].http.paths[3]"
    assert "/api/v1" in decision.reason


# --- default backends ---------------------------------------------------------------------------


def test_default_backend_serves_the_misses_of_its_own_hosts():
    table = table_of(
        ingress("site", rule("d.example.com", path("/api", "a")), default="fallback"),
        ingress("other", rule("o.example.com", path("/api", "b"))),
    )
    assert served_by(decide(table, "d.example.com", "/api/x")) == "a"
    decision = decide(table, "d.example.com", "/elsewhere")
    assert served_by(decision) == "fallback"
    assert decision.route.rule == "spec.defaultBackend"
    assert "default backend" in decision.reason
    assert decide(table, "o.example.com", "/elsewhere").status == 404


def test_default_backend_of_an_ingress_without_rules_is_the_catch_all():
    table = table_of(
        ingress("site", rule("d.example.com", path("/api", "a"))),
        ingress("fallback-only", default="fallback"),
    )
    for host, target in [("anything.example.org", "/"), (None, "/x/y"), ("[::1]", "/z")]:
        decision = decide(table, host, target)
        assert served_by(decision) == "fallback"
        assert decision.route.name == "fallback-only"
    assert served_by(decide(table, "d.example.com", "/api")) == "a"


def test_catch_all_paths_win_over_the_catch_all_default():
    table = table_of(ingress("both", rule(None, path("/only", "root")), default="fallback"))
    assert served_by(decide(table, "x.example.com", "/only/here")) == "root"
    assert served_by(decide(table, "x.example.com", "/else")) == "fallback"


# --- ports, TLS redirect ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_secret() -> dict[str, Any]:
    return ingress_world.tls_secret("secure.example.com", "secure-cert")


def secure_ingress(**extra: Any) -> dict[str, Any]:
    return ingress(
        "secure",
        rule("secure.example.com", path("/", "web")),
        rule("plain.example.com", path("/", "web")),
        tls=[{"hosts": ["secure.example.com"], "secretName": "secure-cert"}],
        **extra,
    )


@pytest.fixture(scope="module")
def secure(tls_secret) -> RouteTable:
    return table_of(secure_ingress(), tls_secret)


def test_plain_http_is_redirected_with_308_when_the_host_has_a_certificate(secure):
    decision = decide(secure, "Secure.Example.com:80", "/a/./b?x=1", port=80)
    assert decision.matched is True
    assert decision.status == 308
    assert decision.redirect == "https://secure.example.com/a/b?x=1"
    assert decision.route.name == "secure"


def test_https_request_is_forwarded_when_the_host_has_a_certificate(secure):
    decision = decide(secure, "secure.example.com", "/a", port=443, tls=True)
    assert served_by(decision) == "web"
    assert decision.redirect is None


def test_host_without_a_certificate_is_not_redirected(secure):
    decision = decide(secure, "plain.example.com", "/", port=80)
    assert served_by(decision) == "web"
    assert decision.redirect is None


def test_redirect_is_off_when_the_ingress_says_ssl_redirect_false(tls_secret):
    off = secure_ingress(annotations={"nginx.ingress.kubernetes.io/ssl-redirect": "false"})
    decision = decide(table_of(off, tls_secret), "secure.example.com", "/", port=80)
    assert served_by(decision) == "web"


def test_redirect_keeps_the_https_port_when_it_is_not_443(tls_secret):
    config = CompileConfig(ingress_http_port=8080, ingress_https_port=8443)
    table = table_of(secure_ingress(), tls_secret, config=config)
    decision = decide(table, "secure.example.com:8080", "/p?q", port=8080)
    assert decision.status == 308
    assert decision.redirect == "https://secure.example.com:8443/p?q"
    forwarded = decide(table, "secure.example.com:8443", "/p", port=8443, tls=True)
    assert served_by(forwarded) == "web"


def test_redirect_happens_only_on_the_http_port(tls_secret):
    config = CompileConfig(ingress_http_port=8080, ingress_https_port=8443)
    table = table_of(secure_ingress(), tls_secret, config=config)
    # Plain HTTP that arrives on the HTTPS port is not redirected by this rule.
    assert decide(table, "secure.example.com", "/", port=8443, tls=False).status is None
    assert decide(table, "secure.example.com", "/", port=80).status == 404


@pytest.mark.parametrize(
    ("host", "location"),
    [
        # No port, or HTTP's default: the client came through the advertised 80/443.
        ("secure.example.com", "https://secure.example.com/p?q"),
        ("secure.example.com:80", "https://secure.example.com/p?q"),
        ("secure.example.com:080", "https://secure.example.com/p?q"),
        ("secure.example.com.:", "https://secure.example.com/p?q"),
        # Another port: the client reached the proxy's port, and gets its HTTPS port.
        ("secure.example.com:8080", "https://secure.example.com:8443/p?q"),
        ("Secure.Example.com:30080", "https://secure.example.com:8443/p?q"),
    ],
)
def test_redirect_keeps_a_port_the_client_named_as_the_proxys_https_port(
    tls_secret, host, location
):
    """The demo (``make run``): Ingress HTTP on 8080, HTTPS on 8443, advertised 80/443."""
    advertised = table_of(secure_ingress(), tls_secret).snapshot
    table = build_table(advertised, ingress_http_port=8080, ingress_https_port=8443)
    decision = decide(table, host, "/p?q", port=8080)
    assert (decision.status, decision.redirect) == (308, location)


def test_redirect_leaves_out_443_when_the_proxy_serves_https_there(tls_secret):
    advertised = table_of(secure_ingress(), tls_secret).snapshot
    table = build_table(advertised, ingress_http_port=8080, ingress_https_port=443)
    decision = decide(table, "secure.example.com:8080", "/", port=8080)
    assert decision.redirect == "https://secure.example.com/"


@pytest.mark.parametrize(
    ("header", "port"),
    [
        (None, ""),
        ("a.example.com", ""),
        ("a.example.com:8080", "8080"),
        (" a.example.com:80 ", "80"),
        ("[::1]", ""),
        ("[::1]:8443", "8443"),
        ("a.example.com:", ""),
    ],
)
def test_port_of_reads_the_port_a_host_header_names(header, port):
    assert port_of(header) == port


@pytest.mark.parametrize("port", [81, 8080, 8443, 1])
def test_unknown_port_is_404_with_a_reason(secure, port):
    decision = decide(secure, "secure.example.com", "/a?b", port=port)
    assert (decision.matched, decision.status) == (False, 404)
    assert str(port) in decision.reason
    assert decision.path == "/a?b"


# --- answers for broken backends ----------------------------------------------------------------


def test_missing_service_gives_503_with_an_invalid_backend():
    table = table_of(ingress("broken", rule("x.example.com", path("/", "does-not-exist"))))
    decision = decide(table, "x.example.com", "/")
    assert (decision.matched, decision.status) == (True, 503)
    assert decision.backends[0].service == "does-not-exist"
    assert decision.backends[0].valid is False
    assert "does not exist" in decision.reason


def test_missing_service_port_gives_503():
    bad_port = ingress("badport", rule("x.example.com", path("/", "web")))
    bad_port["spec"]["rules"][0]["http"]["paths"][0]["backend"] = service_backend("web", 9999)
    decision = decide(table_of(bad_port), "x.example.com", "/")
    assert (decision.status, decision.backends[0].valid) == (503, False)


def test_service_without_ready_endpoints_gives_503():
    table = table_of(
        ingress("idle", rule("x.example.com", path("/", "idle"))),
        *service("idle", ready=(), not_ready=("10.9.9.9",)),
    )
    decision = decide(table, "x.example.com", "/")
    assert (decision.matched, decision.status) == (True, 503)
    assert decision.backends[0].valid is True
    assert "no ready endpoint" in decision.reason


def test_forwarded_decision_has_no_status_and_names_the_service():
    decision = decide(
        table_of(ingress("ok", rule("x.example.com", path("/", "web")))), "x.example.com"
    )
    assert decision.status is None
    assert decision.matched is True
    assert decision.redirect is None
    assert (decision.backends[0].namespace, decision.backends[0].port) == ("apps", 80)
    assert "forwarded" in decision.reason
