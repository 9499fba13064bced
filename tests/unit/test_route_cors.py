"""coxswain.compile.cors and coxswain.route.cors: origins, preflights and marked responses, as
the Gateway API conformance HTTPRouteCORS expects them."""

from __future__ import annotations

from typing import Any

import pytest
from pyrsistent import pvector

from coxswain.compile.cors import cors_problem, origin_allowed, parse_origin
from coxswain.compile.snapshot import Cors
from coxswain.route.cors import cors_outcome, with_cors


def _cors(**fields: Any) -> Cors:
    lists = ("allow_origins", "allow_methods", "allow_headers", "expose_headers")
    return Cors(**{k: pvector(v) if k in lists else v for k, v in fields.items()})


# the conformance manifest's first rule
CORS_1 = _cors(
    allow_origins=["https://www.foo.com", "https://*.bar.com"],
    allow_methods=["GET", "OPTIONS"],
    allow_headers=["x-header-1", "x-header-2"],
    expose_headers=["x-header-3", "x-header-4"],
    allow_credentials=True,
    max_age=3600,
)
PREFLIGHT = {
    "access-control-request-method": "GET",
    "access-control-request-headers": "x-header-1, x-header-2",
}


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("https://www.foo.com", ("https", "www.foo.com", 443)),
        ("HTTP://WWW.Foo.com", ("http", "www.foo.com", 80)),
        ("https://foobar.com:12345", ("https", "foobar.com", 12345)),
        ("https://[::1]:8443", ("https", "[::1]", 8443)),
        ("https://[::1]", ("https", "[::1]", 443)),
        ("chrome-extension://abc", ("chrome-extension", "abc", 0)),
        ("null", None),
        ("https://", None),
        ("https://a.com/path", None),
        ("https://user@a.com", None),
        ("https://a.com:0", None),
        ("https://a.com:65536", None),
        ("https://a.com:123456", None),
        ("https://a.com:8o", None),
        ("https://a.com:", ("https", "a.com", 443)),
        ("https://[::1", None),
        ("https://[::1]x", None),
        ("://a.com", None),
    ],
)
def test_an_origin_parses_to_scheme_host_and_port(text, parsed):
    assert parse_origin(text) == parsed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://www.foo.com", True),
        ("https://www.foo.com:443", True),
        ("https://WWW.FOO.COM", True),
        ("http://www.foo.com", False),
        ("https://www.foo.com:8443", False),
        ("https://www.bar.com", True),
        ("https://xpto.www.bar.com", True),
        ("https://bar.com", False),
        ("https://xbar.com", False),
        ("https://foobar.com", False),
        ("null", False),
    ],
)
def test_origins_match_exactly_or_by_a_leading_wildcard_with_default_ports(origin, allowed):
    assert origin_allowed(CORS_1.allow_origins, origin) is allowed


def test_a_star_allows_every_origin_and_a_star_host_every_host_of_its_scheme_and_port():
    assert origin_allowed(["*"], "null")
    assert origin_allowed(["https://*"], "https://anything.example")
    assert not origin_allowed(["https://*"], "http://anything.example")
    assert not origin_allowed(["https://*:8443"], "https://anything.example")


def test_a_preflight_from_an_allowed_origin_gets_every_field():
    outcome = cors_outcome(CORS_1, "OPTIONS", "https://xpto.www.bar.com", PREFLIGHT)
    assert outcome.status == 204
    assert outcome.fields == (
        (b"access-control-allow-origin", b"https://xpto.www.bar.com"),
        (b"access-control-allow-credentials", b"true"),
        (b"access-control-allow-methods", b"GET, OPTIONS"),
        (b"access-control-allow-headers", b"x-header-1, x-header-2"),
        (b"access-control-expose-headers", b"x-header-3, x-header-4"),
        (b"access-control-max-age", b"3600"),
        (b"vary", b"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"),
    )


def test_a_preflight_from_another_origin_is_403_without_fields():
    outcome = cors_outcome(CORS_1, "OPTIONS", "https://foobar.com", PREFLIGHT)
    assert (outcome.status, outcome.fields) == (403, ())
    assert (
        outcome.reason == "the Origin 'https://foobar.com' is not allowed by the rule's CORS filter"
    )


def test_an_actual_request_from_an_allowed_origin_is_forwarded_and_marked():
    outcome = cors_outcome(CORS_1, "GET", "https://www.foo.com", {})
    assert outcome.status is None
    assert outcome.fields == (
        (b"access-control-allow-origin", b"https://www.foo.com"),
        (b"access-control-allow-credentials", b"true"),
        (b"access-control-expose-headers", b"x-header-3, x-header-4"),
        (b"vary", b"Origin"),
    )


def test_an_actual_request_from_another_origin_is_forwarded_unmarked():
    outcome = cors_outcome(CORS_1, "GET", "https://foobar.com", {})
    assert (outcome.status, outcome.fields) == (None, ())


def test_options_without_a_requested_method_is_no_preflight():
    outcome = cors_outcome(CORS_1, "OPTIONS", "https://www.foo.com", {})
    assert outcome.status is None


@pytest.mark.parametrize("credentials", [True, False])
def test_wildcards_answer_what_was_asked_for(credentials):
    cors = _cors(
        allow_origins=["*"],
        allow_methods=["*"],
        allow_headers=["*"],
        allow_credentials=credentials,
    )
    outcome = cors_outcome(
        cors,
        "OPTIONS",
        "https://other.foo.com",
        {"access-control-request-method": "PUT", "access-control-request-headers": "x-a, x-b"},
    )
    fields = dict(outcome.fields)
    assert fields[b"access-control-allow-origin"] == b"https://other.foo.com"
    assert fields[b"access-control-allow-methods"] == b"PUT"
    assert fields[b"access-control-allow-headers"] == b"x-a, x-b"
    assert fields[b"access-control-max-age"] == b"5"
    assert (b"access-control-allow-credentials" in fields) is credentials


def test_without_requested_headers_a_wildcard_gives_no_allow_headers():
    cors = _cors(allow_origins=["*"], allow_methods=["PUT"], allow_headers=["*"])
    outcome = cors_outcome(
        cors, "OPTIONS", "https://foobar.com:12345", {"access-control-request-method": "PUT"}
    )
    fields = dict(outcome.fields)
    assert fields[b"access-control-allow-methods"] == b"PUT"
    assert b"access-control-allow-headers" not in fields
    assert b"access-control-allow-credentials" not in fields


def test_without_configured_methods_or_headers_those_fields_are_left_out():
    cors = _cors(allow_origins=["*"])
    fields = dict(cors_outcome(cors, "OPTIONS", "https://a.example", PREFLIGHT).fields)
    assert b"access-control-allow-methods" not in fields
    assert b"access-control-allow-headers" not in fields


@pytest.mark.parametrize(("credentials", "exposed"), [(True, False), (False, True)])
def test_exposing_every_header_is_left_out_with_credentials(credentials, exposed):
    cors = _cors(allow_origins=["*"], expose_headers=["*"], allow_credentials=credentials)
    fields = dict(cors_outcome(cors, "GET", "https://a.example", {}).fields)
    assert (fields.get(b"access-control-expose-headers") == b"*") is exposed


def test_marking_a_response_replaces_the_backends_cors_fields_and_adds_vary():
    fields = cors_outcome(CORS_1, "GET", "https://www.foo.com", {}).fields
    backend = [
        (b"access-control-allow-origin", b"*"),
        (b"vary", b"Accept-Encoding"),
        (b"content-type", b"text/plain"),
    ]
    marked = with_cors(backend, fields)
    assert marked == [(b"vary", b"Accept-Encoding"), (b"content-type", b"text/plain"), *fields]


NOT_AN_ORIGIN = "is not '*' or http(s)://host[:port] (a host may start with '*.')"


@pytest.mark.parametrize(
    ("cors", "problem"),
    [
        (
            _cors(allow_origins=["*", "https://a.com"]),
            "allowOrigins cannot hold '*' alongside other values",
        ),
        (
            _cors(allow_origins=["https://a.com/x"]),
            f"allowOrigins entry 'https://a.com/x' {NOT_AN_ORIGIN}",
        ),
        (
            _cors(allow_origins=["https://a..com"]),
            f"allowOrigins entry 'https://a..com' {NOT_AN_ORIGIN}",
        ),
        (
            _cors(allow_origins=["https://a_b.com"]),
            f"allowOrigins entry 'https://a_b.com' {NOT_AN_ORIGIN}",
        ),
        (
            _cors(allow_origins=["https://a.*.com"]),
            f"allowOrigins entry 'https://a.*.com' {NOT_AN_ORIGIN}",
        ),
        (_cors(allow_methods=["get"]), "allowMethods entry 'get' is not an RFC 9110 method or '*'"),
        (_cors(allow_headers=["*", "x-a"]), "allowHeaders cannot hold '*' alongside other values"),
        (
            _cors(expose_headers=["x a"]),
            "exposeHeaders entry 'x a' is not an RFC 9110 field name or '*'",
        ),
        (_cors(allow_headers=["x-a"] * 65), "allowHeaders has 65 entries, more than 64"),
    ],
)
def test_a_filter_the_proxy_cannot_honour_says_why(cors, problem):
    assert cors_problem(cors) == problem


def test_valid_filters_have_no_problem():
    assert cors_problem(CORS_1) is None
    assert cors_problem(_cors(allow_origins=["*"], expose_headers=["*", "x-a"])) is None
    assert cors_problem(_cors(allow_origins=["https://*", "http://*.a.com:8080"])) is None
    assert cors_problem(_cors(allow_headers=["x-a"] * 64)) is None
