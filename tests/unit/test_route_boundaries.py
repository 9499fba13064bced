"""route at its edges: Gateway selection, SNI lookups, query parsing and socket plans.

Each test pins a comparison, a constant or a reason that mutation testing found no other test
noticed (docs/quality.md). The snapshots are written as the JSON the compiler emits
(``snapshot_from_data``), so each case holds exactly the listeners and rules it is about.
"""

from __future__ import annotations

from typing import Any

import pytest

from coxswain.compile.snapshot_read import snapshot_from_data
from coxswain.route import RequestHead, build_table, select
from coxswain.route.gateway import index_gateway_port, parse_query, percent_decode
from coxswain.route.plan import ListenerSpec, listener_specs
from coxswain.route.select import host_of

PORT = 30000


def _backend(service: str, *, weight: int = 1, valid: bool = True) -> dict[str, Any]:
    return {"namespace": "app", "service": service, "port": 80, "weight": weight, "valid": valid}


def _rule(path: str = "/", path_type: str = "PathPrefix", **action: Any) -> dict[str, Any]:
    return {
        "match": {"path_type": path_type, "path": path, **action.pop("match", {})},
        "route": {"kind": "HTTPRoute", "namespace": "app", "name": "r", "rule": "spec.rules[0]"},
        "backends": action.pop("backends", [_backend("web")]),
        **action,
    }


def _listener(hostname: str, hosts: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "gateway": "app/gw",
        "listener": hostname.replace("*", "any"),
        "port": 8443,
        "protocol": "HTTPS",
        "hostname": hostname,
        "hosts": hosts,
    }


def _table(
    listeners: dict[str, dict[str, Any]], *, client_certs: bool = False, endpoints: bool = True
) -> Any:
    data: dict[str, Any] = {
        "version": "v",
        "scope": "shared",
        "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
        "gateways": {str(PORT): listeners},
        "endpoints": {"app/web/80": [{"address": "10.0.0.1", "port": 8080}]} if endpoints else {},
    }
    if client_certs:
        data["client_certs"] = {
            str(PORT): {h: {"ca_bundle": "x", "mode": "AllowValidOnly"} for h in listeners}
        }
    return build_table(snapshot_from_data(data))


def _select(
    table: Any, target: str = "/", host: str = "a.example.com", method: str = "GET", **head: Any
) -> Any:
    return select(table, RequestHead(port=PORT, method=method, target=target, host=host, **head))


WHERE = "listener app/gw/any, host '*', HTTPRoute app/r spec.rules[0]"


def test_a_route_for_any_host_is_named_by_a_star_in_the_reason():
    decision = _select(_table({"*": _listener("*", {"*": [_rule()]})}))
    assert decision.reason == f"{WHERE}: forwarded to 1 weighted backend(s)"
    assert (decision.matched, decision.status) == (True, None)


@pytest.mark.parametrize(
    ("backends", "status", "reason"),
    [
        ([], 500, "the rule has no backendRefs"),
        ([_backend("web", weight=0)], 500, "every backend has weight 0"),
        ([_backend("web", valid=False)], 500, "every weighted backend is invalid"),
        ([_backend("idle")], 503, "no weighted backend has a ready endpoint"),
        (
            [_backend("web", weight=0), _backend("idle")],
            503,
            "no weighted backend has a ready endpoint",
        ),
    ],
)
def test_a_rule_that_cannot_be_served_says_why(backends, status, reason):
    table = _table({"*": _listener("*", {"*": [_rule(backends=backends)]})})
    decision = _select(table, "/p?q")
    assert (decision.matched, decision.status, decision.reason) == (
        True,
        status,
        f"{WHERE}: {reason}",
    )
    assert decision.route is not None
    assert decision.route.name == "r"
    assert decision.action is not None
    assert (decision.host, decision.path) == ("a.example.com", "/p?q")


def test_a_rule_with_a_problem_answers_500_with_the_problem():
    table = _table({"*": _listener("*", {"*": [_rule(problem="unsupported filter")]})})
    decision = _select(table)
    assert (decision.matched, decision.status, decision.reason) == (
        True,
        500,
        f"{WHERE}: unsupported filter",
    )


@pytest.mark.parametrize(
    ("redirect", "tls", "location"),
    [
        ({"status": 302}, False, "http://a.example.com:8443/p?q"),
        ({"status": 302}, True, "https://a.example.com:8443/p?q"),
        ({"status": 301, "scheme": "https"}, False, "https://a.example.com/p?q"),
        ({"status": 301, "scheme": "http", "port": 80}, True, "http://a.example.com/p?q"),
        ({"status": 301, "scheme": "ftp"}, False, "ftp://a.example.com:8443/p?q"),
        (
            {"status": 308, "hostname": "b.example.com", "port": 443},
            True,
            "https://b.example.com/p?q",
        ),
        (
            {"status": 302, "path": {"type": "ReplaceFullPath", "value": "/full"}},
            False,
            "http://a.example.com:8443/full?q",
        ),
        (
            {"status": 302, "path": {"type": "ReplacePrefixMatch", "value": "/new/"}},
            False,
            "http://a.example.com:8443/new/p?q",
        ),
    ],
)
def test_a_redirect_builds_its_location_from_scheme_port_host_and_path(redirect, tls, location):
    table = _table({"*": _listener("*", {"*": [_rule(redirect=redirect)]})})
    decision = _select(table, "/p?q", tls=tls)
    assert (decision.status, decision.redirect) == (redirect["status"], location)
    assert decision.reason == f"{WHERE}: redirected to {location}"


@pytest.mark.parametrize(
    ("prefix", "edit", "target", "forwarded"),
    [
        ("/", {"type": "ReplacePrefixMatch", "value": "/v2"}, "/a/b", "/v2/a/b"),
        ("/", {"type": "ReplacePrefixMatch", "value": "v2/"}, "/a", "/v2/a"),
        ("/api", {"type": "ReplacePrefixMatch", "value": "/"}, "/api/x", "/x"),
        ("/api", {"type": "ReplacePrefixMatch", "value": "/v2/"}, "/api", "/v2"),
        ("/api", {"type": "ReplacePrefixMatch", "value": "//v2//"}, "/api/x", "//v2/x"),
        ("/api", {"type": "ReplaceFullPath", "value": "/only"}, "/api/x", "/only"),
        ("/api", {"type": "ReplacePrefixMatch", "value": "/vX"}, "/api/x", "/vX/x"),
    ],
)
def test_a_rewrite_replaces_the_matched_prefix_or_the_whole_path(prefix, edit, target, forwarded):
    rewrite = {"hostname": None, "path": edit}
    table = _table({"*": _listener("*", {"*": [_rule(prefix, rewrite=rewrite)]})})
    decision = _select(table, target + "?q=1")
    assert (decision.status, decision.path, decision.host) == (
        None,
        forwarded + "?q=1",
        "a.example.com",
    )


def test_a_rewrite_of_the_host_alone_keeps_the_path():
    rewrite = {"hostname": "internal.example.com", "path": None}
    table = _table({"*": _listener("*", {"*": [_rule(rewrite=rewrite)]})})
    decision = _select(table, "/a")
    assert (decision.host, decision.path) == ("internal.example.com", "/a")


def test_no_listener_and_no_rule_are_404s_that_say_which():
    table = _table({"a.example.com": _listener("a.example.com", {"*": [_rule("/x", "Exact")]})})
    missed = _select(table, "/p?q", host="b.example.com")
    assert (missed.matched, missed.status, missed.path, missed.route) == (False, 404, "/p?q", None)
    assert missed.reason == f"no listener on port {PORT} matches host 'b.example.com'"
    unmatched = _select(table, "/y?q")
    assert (unmatched.matched, unmatched.status, unmatched.path) == (False, 404, "/y?q")
    assert unmatched.reason == (
        "no route rule attached to listener app/gw/a.example.com matches GET a.example.com/y"
    )


CLIENT_CHECKED = {
    "a.example.com": _listener("a.example.com", {"*": [_rule()]}),
    "*.example.com": _listener("*.example.com", {"*": [_rule()]}),
}


@pytest.mark.parametrize("sni", ["a.example.com", "A.EXAMPLE.COM.", "a.example.com."])
def test_a_host_on_the_listener_the_sni_chose_is_served(sni):
    decision = _select(_table(CLIENT_CHECKED, client_certs=True), tls=True, sni=sni)
    assert (decision.matched, decision.status) == (True, None)


@pytest.mark.parametrize("client_certs", [True, False])
@pytest.mark.parametrize("sni", ["b.example.com", ".a.example.com", "c.example.org"])
def test_a_host_on_another_listener_than_the_sni_chose_is_misdirected(sni, client_certs):
    table = _table(CLIENT_CHECKED, client_certs=client_certs)
    decision = _select(table, "/p?q", tls=True, sni=sni)
    assert (decision.matched, decision.status, decision.path) == (False, 421, "/p?q")
    assert decision.reason == (
        f"the TLS server name {sni!r} chose another listener than host 'a.example.com' "
        "(RFC 9110 §15.5.20)"
    )


def test_without_a_server_name_only_a_port_that_validates_clients_misdirects():
    assert _select(_table(CLIENT_CHECKED), tls=True, sni=None).status is None
    assert _select(_table(CLIENT_CHECKED, client_certs=True), tls=True, sni=None).status == 421


def test_without_a_server_name_the_catch_all_listener_is_the_one_chosen():
    """No SNI is no name at all: on a port that validates clients it selects the catch-all
    listener, never a named one (``xxxx`` is a valid listener hostname)."""
    table = _table(
        {"*": _listener("*", {"*": [_rule()]}), "xxxx": _listener("xxxx", {"*": [_rule()]})},
        client_certs=True,
    )
    assert _select(table, host="b.example.com", tls=True, sni=None).status is None


def test_a_host_no_listener_takes_is_404_whatever_the_sni_chose():
    decision = _select(_table(CLIENT_CHECKED), host="a.example.org", tls=True, sni="a.example.com")
    assert (decision.status, decision.reason) == (
        404,
        f"no listener on port {PORT} matches host 'a.example.org'",
    )


# Gateway API conformance, HTTPRouteHTTPSListenerDetectMisdirectedRequests: four HTTPS
# listeners on one port, each with a route for its own hosts.
MISDIRECTED = {
    "*": _listener("*", {"example.org": [_rule()]}),
    "second-example.org": _listener("second-example.org", {"*": [_rule()]}),
    "*.wildcard.org": _listener("*.wildcard.org", {"*": [_rule()]}),
    "fourth-example.wildcard.org": _listener("fourth-example.wildcard.org", {"*": [_rule()]}),
}


@pytest.mark.parametrize(
    ("sni", "host", "status"),
    [
        ("example.org", "example.org", None),
        ("example.org", "second-example.org", 421),
        ("example.org", "unknown-example.org", 404),
        ("second-example.org", "second-example.org", None),
        ("second-example.org", "example.org", 421),
        ("second-example.org", "unknown-example.org", 421),
        ("third-example.wildcard.org", "third-example.wildcard.org", None),
        ("third-example.wildcard.org", "fith-example.wildcard.org", None),
        ("third-example.wildcard.org", "fourth-example.wildcard.org", 421),
        ("third-example.wildcard.org", "second-example.org", 421),
        ("third-example.wildcard.org", "unknown-example.org", 421),
        ("fourth-example.wildcard.org", "fourth-example.wildcard.org", None),
        ("fourth-example.wildcard.org", "fith-example.wildcard.org", 421),
        ("unknown-example.org", "example.org", None),
        ("unknown-example.org", "unknown-example.org", 404),
    ],
)
def test_misdirected_requests_as_the_conformance_suite_expects(sni, host, status):
    assert _select(_table(MISDIRECTED), host=host, tls=True, sni=sni).status == status


def test_without_tls_the_sni_does_not_matter():
    checked = _table(CLIENT_CHECKED, client_certs=True)
    assert _select(checked, tls=False, sni="b.example.com").status is None


def test_repeated_request_headers_are_joined_with_commas_for_matching():
    rule = _rule(match={"headers": [{"name": "x-h", "type": "Exact", "value": "1,2"}]})
    table = _table({"*": _listener("*", {"*": [rule]})})
    assert _select(table, headers=(("X-H", "1"), ("x-h", "2"))).status is None
    assert _select(table, headers=(("X-H", "1"),)).status == 404


@pytest.mark.parametrize(
    ("pattern", "value", "matched"),
    [("v[0-9]+", "v12", True), ("v[0-9]+", "v12x", False), ("v[0-9]+", "xv1", False)],
)
def test_regular_expression_header_matches_are_full_matches(pattern, value, matched):
    rule = _rule(
        match={"headers": [{"name": "x-v", "type": "RegularExpression", "value": pattern}]}
    )
    table = _table({"*": _listener("*", {"*": [rule]})})
    assert (_select(table, headers=(("X-V", value),)).status is None) is matched


def test_an_exact_header_match_is_not_a_pattern():
    rule = _rule(match={"headers": [{"name": "x-v", "type": "Exact", "value": "v.*"}]})
    table = _table({"*": _listener("*", {"*": [rule]})})
    assert _select(table, headers=(("X-V", "v.*"),)).status is None
    assert _select(table, headers=(("X-V", "vv"),)).status == 404


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ("plain", "plain"),
        ("a%20b", "a b"),
        ("%41%4a%4A", "AJJ"),
        ("%7e%7E", "~~"),
        ("%zz%4", "%zz%4"),
        ("%2541", "%41"),
    ],
)
def test_percent_decode_decodes_two_hex_digits_of_either_case(text, decoded):
    assert percent_decode(text) == decoded


@pytest.mark.parametrize(
    ("query", "params"),
    [
        ("", {}),
        ("?a=1&b=2", {"a": "1", "b": "2"}),
        ("a=1&&b=2&", {"a": "1", "b": "2"}),
        ("?a=b=c", {"a": "b=c"}),
        ("?a=1&a=2", {"a": "1"}),
        ("?flag", {"flag": ""}),
        ("??X=1", {"X": "1"}),
        ("?a%3Db=%26", {"a=b": "&"}),
        ("?a b=1 2", {"a b": "1 2"}),
    ],
)
def test_parse_query_keeps_the_first_value_of_each_name(query, params):
    assert parse_query(query) == params


def test_a_port_index_validates_client_certificates_only_when_told():
    assert index_gateway_port({}).client_validation is False
    assert index_gateway_port({}, client_validation=True).client_validation is True
    assert _table(CLIENT_CHECKED, client_certs=True).gateway_ports[PORT].client_validation is True


@pytest.mark.parametrize(
    ("host", "listener"),
    [
        ("x.b", "any.b"),
        ("x.y.b", "any.b"),
        ("x..b", "any.b"),
        (".b", None),
        ("b", None),
    ],
)
def test_a_wildcard_listener_stands_for_one_or_more_labels(host, listener):
    index = _table({"*.b": _listener("*.b", {})}).gateway_ports[PORT]
    found = index.find_listener(host)
    assert (found.table.listener if found else None) == listener


CERTS = {"cert_chain": "c", "private_key": "k", "secret": "app/s"}


def _tls_table(tls: dict[str, dict[str, Any]], gateways: dict[str, Any] | None = None) -> Any:
    data: dict[str, Any] = {
        "version": "v",
        "scope": "shared",
        "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
        "gateways": gateways or {},
        "tls": tls,
    }
    return build_table(snapshot_from_data(data))


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("a.example.com", "app/exact"),
        ("A.Example.COM.", "app/exact"),
        ("b.example.com", "app/wild"),
        ("B.EXAMPLE.COM.", "app/wild"),
        ("x.b.example.com", "app/default"),
        ("example.com", "app/default"),
        ("", "app/default"),
        (None, "app/default"),
    ],
)
def test_the_ingress_certificate_is_exact_then_wildcard_then_default(name, secret):
    store = {
        "a.example.com": {**CERTS, "secret": "app/exact"},
        "*.example.com": {**CERTS, "secret": "app/wild"},
        "*": {**CERTS, "secret": "app/default"},
    }
    table = _tls_table({"443": store})
    found = table.certificate(443, name)
    assert found is not None
    assert found.secret == secret


def test_no_certificate_on_a_port_without_any_or_for_an_unknown_name():
    table = _tls_table({"443": {"a.example.com": CERTS}})
    assert table.certificate(8443, "a.example.com") is None
    assert table.certificate(443, "b.example.com") is None


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("a.example.com", "app/a"),
        ("A.EXAMPLE.COM.", "app/a"),
        ("b.example.com", "app/any"),
        (None, "app/any"),
    ],
)
def test_a_gateway_certificate_is_the_one_of_the_listener_the_name_selects(name, secret):
    gateways = {
        str(PORT): {
            "a.example.com": _listener("a.example.com", {}),
            "*": _listener("*", {}),
        }
    }
    store = {"a.example.com": {**CERTS, "secret": "app/a"}, "*": {**CERTS, "secret": "app/any"}}
    table = _tls_table({str(PORT): store}, gateways)
    found = table.certificate(PORT, name)
    assert found is not None
    assert found.secret == secret


@pytest.mark.parametrize(
    ("name", "mode"),
    [("a.example.com", "a"), ("A.EXAMPLE.COM.", "a"), ("b.example.com", None), (None, None)],
)
def test_client_validation_is_the_one_of_the_listener_the_name_selects(name, mode):
    data = {
        "version": "v",
        "scope": "shared",
        "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
        "gateways": {str(PORT): {"a.example.com": _listener("a.example.com", {})}},
        "client_certs": {str(PORT): {"a.example.com": {"ca_bundle": "x", "mode": "a"}}},
    }
    table = build_table(snapshot_from_data(data))
    found = table.client_validation(PORT, name)
    assert (found.mode if found else None) == mode
    assert table.client_validation(PORT + 1, name) is None


def _health(port: int, protocol: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "gateway": "app/gw",
        "listener": f"l{port}",
        "port": 443,
        "target_port": port,
        "protocol": protocol,
        "hostname": None,
        "attached_routes": 0,
        "ready": ready,
        "reason": "Ready" if ready else "Invalid",
    }


def test_a_listener_is_bound_when_it_is_ready_and_has_a_port_with_tls_for_https():
    data = {
        "version": "v",
        "scope": "app/gw",
        "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
        "listener_health": [
            _health(30000, "HTTPS"),
            _health(30001, "HTTP"),
            _health(30002, "HTTPS", ready=False),
            _health(0, "HTTP"),
        ],
    }
    specs = listener_specs(snapshot_from_data(data), ingress_http_port=80, ingress_https_port=443)
    assert specs == {
        30000: ListenerSpec(30000, tls=True),
        30001: ListenerSpec(30001, tls=False),
    }


@pytest.mark.parametrize(
    ("header", "host"),
    [
        (None, ""),
        ("", ""),
        ("A.Example.COM.:8080", "a.example.com"),
        ("a.example.com.", "a.example.com"),
        ("a:b:80", "a:b"),
        ("[::1]:8080", "[::1]"),
        ("[::1]", "[::1]"),
        ("[a]b]:1", "[a]"),
        ("[::1", "[::1"),
    ],
)
def test_the_host_of_a_host_header_drops_port_and_trailing_dot(header, host):
    assert host_of(header) == host


def test_ingress_answers_say_which_rule_and_service():
    data = {
        "version": "v",
        "scope": "shared",
        "ingress": {
            "http_port": 80,
            "https_port": 443,
            "hosts": {
                "h": {
                    "paths": [
                        {
                            "path": "/p",
                            "match": "Prefix",
                            "backend": {"namespace": "app", "service": "web", "port": 80},
                            "route": {
                                "kind": "Ingress",
                                "namespace": "app",
                                "name": "i",
                                "rule": "r",
                            },
                            "tls_redirect": True,
                        }
                    ],
                    "default_backend": {
                        "path": "/",
                        "match": "Prefix",
                        "backend": {"namespace": "app", "service": "idle", "port": 81},
                        "route": {"kind": "Ingress", "namespace": "app", "name": "i", "rule": "d"},
                    },
                }
            },
        },
        "endpoints": {"app/web/80": [{"address": "10.0.0.1", "port": 8080}]},
    }
    table = build_table(snapshot_from_data(data), ingress_https_port=8443)
    assert (table.ingress_http_port, table.ingress_https_port) == (80, 8443)
    redirected = select(table, RequestHead(port=80, method="GET", target="/p", host="h"))
    assert redirected.redirect == "https://h/p"
    assert [b.service for b in redirected.backends] == ["web"]
    forwarded = select(table, RequestHead(port=8443, method="GET", target="/p", host="h", tls=True))
    assert forwarded.reason == (
        "host 'h', Prefix path '/p' of Ingress app/i: forwarded to Service app/web port 80"
    )
    idle = select(table, RequestHead(port=8443, method="GET", target="/x", host="h", tls=True))
    assert (idle.status, idle.reason) == (
        503,
        "host 'h', default backend of Ingress app/i: "
        "Service app/idle port 81 has no ready endpoint",
    )


def test_without_a_server_name_the_listener_without_hostname_is_chosen():
    gateways = {
        str(PORT): {"xxxx": _listener("xxxx", {}), "*": _listener("*", {})},
    }
    store = {"xxxx": {**CERTS, "secret": "app/x"}, "*": {**CERTS, "secret": "app/any"}}
    table = _tls_table({str(PORT): store}, gateways)
    found = table.certificate(PORT, None)
    assert found is not None
    assert found.secret == "app/any"
    data = {
        "version": "v",
        "scope": "shared",
        "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
        "gateways": gateways,
        "client_certs": {str(PORT): {"xxxx": {"ca_bundle": "x", "mode": "m"}}},
    }
    assert build_table(snapshot_from_data(data)).client_validation(PORT, None) is None


CORS = {
    "allow_origins": ["https://www.foo.com"],
    "allow_methods": ["GET"],
    "allow_headers": [],
    "expose_headers": [],
    "allow_credentials": False,
    "max_age": 5,
}


def _cors_select(method: str, headers: tuple[tuple[str, str], ...], **action: Any) -> Any:
    table = _table({"*": _listener("*", {"*": [_rule(cors=CORS, **action)]})})
    return _select(table, "/p", method=method, headers=headers)


def test_a_cors_preflight_is_answered_by_the_proxy_with_its_fields():
    preflight = (("Origin", "https://www.foo.com"), ("Access-Control-Request-Method", "GET"))
    decision = _cors_select("OPTIONS", preflight)
    assert (decision.matched, decision.status) == (True, 204)
    assert decision.reason == f"{WHERE}: a CORS preflight from 'https://www.foo.com' allowed"
    assert dict(decision.response_fields)[b"access-control-allow-methods"] == b"GET"
    refused = _cors_select("OPTIONS", (("Origin", "https://x.com"), preflight[1]))
    assert (refused.status, refused.response_fields) == (403, ())


def test_a_cors_request_is_forwarded_with_the_fields_its_response_gets():
    decision = _cors_select("GET", (("Origin", "https://www.foo.com"),))
    assert decision.status is None
    assert decision.response_fields == (
        (b"access-control-allow-origin", b"https://www.foo.com"),
        (b"vary", b"Origin"),
    )
    assert _cors_select("GET", ()).response_fields == ()


def test_a_redirect_keeps_the_cors_fields_and_an_error_drops_them():
    redirect = {"status": 302, "scheme": "https", "hostname": None, "port": None, "path": None}
    origin = (("Origin", "https://www.foo.com"),)
    moved = _cors_select("GET", origin, redirect=redirect, backends=[])
    assert (moved.status, dict(moved.response_fields)[b"vary"]) == (302, b"Origin")
    failed = _cors_select("GET", origin, backends=[])
    assert (failed.status, failed.response_fields) == (500, ())


def test_a_listenerset_listener_is_named_by_its_listenerset_and_gateway():
    listener = {**_listener("*", {"*": [_rule("/x", "Exact")]}), "listener": "app/set/l1"}
    table = _table({"*": listener})
    assert _select(table, "/x").reason.startswith(
        "listener l1 of ListenerSet app/set (Gateway app/gw), host '*', HTTPRoute app/r"
    )
    assert _select(table, "/y").reason == (
        "no route rule attached to listener l1 of ListenerSet app/set (Gateway app/gw) "
        "matches GET a.example.com/y"
    )
