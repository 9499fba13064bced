"""route.explain and route.forward: the whole JSON object of a decision, field by field.

``coxswain route -o json`` prints what ``explain`` returns (tests/unit/test_cli.py checks the
command in a subprocess); these pin every field in process, with exact values, for a Gateway
rule with header edits, mirrors and timeouts, an Ingress redirect and a miss.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyrsistent import pvector

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot import (
    Backend,
    Certificate,
    Mirror,
    RouteAction,
    RouteRef,
    SubjectAltName,
    UpstreamTLS,
)
from coxswain.route import RequestHead, build_table, select
from coxswain.route.decision import Decision
from coxswain.route.explain import backend_data, explain
from coxswain.route.forward import apply_edits, connection_named, forwarded_headers, wire_edits
from tests.integration.manifests import gateway, gateway_class, ingress_class
from tests.unit.boundary_objects import tls_secret

GW = "gateway.networking.k8s.io/v1"


def _service(name: str, *addresses: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "app"},
            "spec": {"ports": [{"port": 80}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-1",
                "namespace": "app",
                "labels": {"kubernetes.io/service-name": name},
            },
            "ports": [{"name": "", "port": 8080}],
            "endpoints": [{"addresses": list(addresses)}],
        },
    ]


WORLD: list[dict[str, Any]] = [
    gateway_class(),
    gateway("gw", 80),
    {
        "apiVersion": GW,
        "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "app"},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "hostnames": ["a.example.com"],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                    "filters": [
                        {
                            "type": "RequestHeaderModifier",
                            "requestHeaderModifier": {
                                "set": [{"name": "X-Set", "value": "s"}],
                                "add": [{"name": "X-Add", "value": "a"}],
                                "remove": ["X-Gone"],
                            },
                        },
                        {
                            "type": "ResponseHeaderModifier",
                            "responseHeaderModifier": {
                                "set": [{"name": "X-R", "value": "1"}],
                                "add": [
                                    {"name": "X-A", "value": "1"},
                                    {"name": "X-A", "value": "2"},
                                ],
                                "remove": ["Server"],
                            },
                        },
                        {
                            "type": "RequestMirror",
                            "requestMirror": {
                                "backendRef": {"name": "mirror", "port": 80},
                                "percent": 25,
                            },
                        },
                    ],
                    "backendRefs": [
                        {"name": "one", "port": 80, "weight": 3},
                        {"name": "two", "port": 80, "weight": 1},
                    ],
                    "timeouts": {"request": "10s", "backendRequest": "2s"},
                },
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/bad"}}],
                    "filters": [
                        {
                            "type": "RequestHeaderModifier",
                            "requestHeaderModifier": {"set": [{"name": "X-U", "value": "é€"}]},
                        }
                    ],
                    "backendRefs": [{"name": "one", "port": 80}],
                },
            ],
        },
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "ing", "namespace": "app"},
        "spec": {
            "ingressClassName": "coxswain",
            "tls": [{"hosts": ["s.example.com"], "secretName": "cert"}],
            "rules": [
                {
                    "host": "s.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "one", "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ],
        },
    },
    ingress_class(),
    tls_secret("cert", "app", "s.example.com"),
    *_service("one", "10.0.0.1", "10.0.0.2"),
    *_service("two", "10.0.0.3"),
    *_service("mirror", "10.0.0.9"),
]


def _explained(head: RequestHead, headers: list[tuple[str, str]]) -> dict[str, Any]:
    table = build_table(compile(build_state(WORLD), SharedPool()).snapshot)
    return explain(table, head, headers, select(table, head))


def _gateway_port() -> int:
    table = build_table(compile(build_state(WORLD), SharedPool()).snapshot)
    [port] = table.gateway_ports
    return port


def test_a_forwarded_gateway_rule_shows_every_field():
    head = RequestHead(
        port=_gateway_port(), method="GET", target="/api/x?q=1", host="A.example.com"
    )
    got = _explained(
        head,
        [
            ("Host", "A.example.com"),
            ("X-Gone", "g"),
            ("X-Set", "old"),
            ("X-Forwarded-For", "1.2.3.4"),
            ("Connection", "close, X-Hop"),
            ("X-Hop", "h"),
            ("Accept", "ü☃"),
        ],
    )
    assert got == {
        "matched": True,
        "status": None,
        "grpc_status": None,
        "route": {"kind": "HTTPRoute", "namespace": "app", "name": "r", "rule": "spec.rules[0]"},
        "backends": [
            {
                "namespace": "app",
                "service": "one",
                "port": 80,
                "weight": 3,
                "valid": True,
                "endpoints": ["10.0.0.1:8080"],
                "tls": None,
                "protocol": "http1",
            },
            {
                "namespace": "app",
                "service": "two",
                "port": 80,
                "weight": 1,
                "valid": True,
                "endpoints": ["10.0.0.3:8080"],
                "tls": None,
                "protocol": "http1",
            },
        ],
        "mirrors": [
            {"namespace": "app", "service": "mirror", "port": 80, "percent": 25.0, "tls": None}
        ],
        "redirect": None,
        "host": "A.example.com",
        "path": "/api/x?q=1",
        "request_headers": {
            "host": ["A.example.com"],
            "accept": ["ü?"],
            "x-forwarded-proto": ["http"],
            "x-forwarded-host": ["A.example.com"],
            "x-set": ["s"],
            "x-add": ["a"],
        },
        "response_headers": {"set": {"x-r": "1"}, "add": {"x-a": ["1", "2"]}, "remove": ["server"]},
        "cors_headers": {},
        "timeouts": {"request": 10.0, "backend_request": 2.0},
        "reason": "listener app/gw/http, host 'a.example.com', HTTPRoute app/r spec.rules[0]: "
        "forwarded to 2 weighted backend(s)",
    }
    assert list(got["request_headers"]) == [
        "host",
        "accept",
        "x-forwarded-proto",
        "x-forwarded-host",
        "x-set",
        "x-add",
    ]


def test_an_edit_that_is_not_latin_1_drops_its_rule_at_compile_time():
    # a header value the proxy could not write (beyond Latin-1) makes the rule invalid when
    # compiled (compile/http_fields.py), so nothing of it is served: /bad matches no rule
    head = RequestHead(port=_gateway_port(), method="GET", target="/bad", host="a.example.com")
    got = _explained(head, [("X-U", "mine")])
    assert (got["matched"], got["status"], got["route"]) == (False, 404, None)
    assert got["request_headers"] == {}


def test_a_redirect_shows_its_location_and_no_forwarded_headers():
    head = RequestHead(port=80, method="GET", target="/p?x", host="s.example.com", tls=False)
    got = _explained(head, [("Host", "s.example.com")])
    assert got == {
        "matched": True,
        "status": 308,
        "grpc_status": None,
        "route": {
            "kind": "Ingress",
            "namespace": "app",
            "name": "ing",
            "rule": "spec.rules[0].http.paths[0]",
        },
        "backends": got["backends"],
        "mirrors": [],
        "redirect": {"location": "https://s.example.com/p?x"},
        "host": "s.example.com",
        "path": "/p?x",
        "request_headers": {},
        "response_headers": {"set": {}, "add": {}, "remove": []},
        "cors_headers": {},
        "timeouts": {"request": None, "backend_request": None},
        "reason": got["reason"],
    }


def test_a_miss_has_no_route_no_backends_and_no_headers():
    head = RequestHead(port=80, method="GET", target="/", host="nowhere.example.com")
    got = _explained(head, [])
    assert got == {
        "matched": False,
        "status": 404,
        "grpc_status": None,
        "route": None,
        "backends": [],
        "mirrors": [],
        "redirect": None,
        "host": "nowhere.example.com",
        "path": "/",
        "request_headers": {},
        "response_headers": {"set": {}, "add": {}, "remove": []},
        "cors_headers": {},
        "timeouts": {"request": None, "backend_request": None},
        "reason": "no Ingress rule matches host 'nowhere.example.com'",
    }


def test_https_requests_are_forwarded_with_the_https_proto():
    head = RequestHead(port=443, method="GET", target="/", host="s.example.com", tls=True)
    got = _explained(head, [])
    assert got["request_headers"]["x-forwarded-proto"] == ["https"]


def test_connection_names_are_tokens_stripped_of_blanks_and_lower_cased():
    headers = [(b"CONNECTION", b" Keep-Alive ,\tX-A"), (b"connection", b"x-b"), (b"other", b"y")]
    assert connection_named(headers) == {b"keep-alive", b"x-a", b"x-b"}


def test_connection_tokens_are_stripped_of_spaces_and_tabs_only():
    # RFC 9110 §5.6.3: optional whitespace is SP and HTAB
    assert connection_named([(b"Connection", b"\x0ba\x0c, b")]) == {b"\x0ba\x0c", b"b"}


def test_forwarded_headers_with_a_trusted_client_append_it_after_what_the_client_sent():
    out = forwarded_headers(
        [(b"X-Forwarded-For", b"1.1.1.1"), (b"x-forwarded-for", b"2.2.2.2"), (b"Expect", b"100")],
        host=b"h",
        proto=b"https",
        client=b"3.3.3.3",
        trusted=True,
    )
    assert out == [
        (b"host", b"h"),
        (b"x-forwarded-for", b"1.1.1.1, 2.2.2.2, 3.3.3.3"),
        (b"x-real-ip", b"3.3.3.3"),  # the trusted peer sent none
        (b"x-forwarded-proto", b"https"),
        (b"x-forwarded-host", b"h"),
    ]


def test_forwarded_headers_use_the_given_connection_options_instead_of_reading_them():
    out = forwarded_headers(
        [(b"Connection", b"x-a"), (b"X-A", b"1"), (b"X-B", b"2")],
        host=b"h",
        proto=b"http",
        client=None,
        named={b"x-b"},
    )
    assert out == [
        (b"host", b"h"),
        (b"x-a", b"1"),
        (b"x-forwarded-proto", b"http"),
        (b"x-forwarded-host", b"h"),
    ]


def test_apply_edits_replaces_set_names_case_insensitively_then_appends():
    headers = [(b"X-Set", b"old"), (b"x-rm", b"r"), (b"keep", b"k")]
    table = build_table(compile(build_state(WORLD), SharedPool()).snapshot)
    head = RequestHead(port=_gateway_port(), method="GET", target="/api", host="a.example.com")
    action = select(table, head).action
    assert action is not None
    assert action.request_headers is not None
    edits = wire_edits(action.request_headers)
    assert edits.replaced == frozenset({b"x-gone", b"x-set"})
    assert apply_edits([*headers, (b"X-Gone", b"g")], edits) == [
        (b"x-rm", b"r"),
        (b"keep", b"k"),
        (b"x-set", b"s"),
        (b"x-add", b"a"),
    ]


def test_a_grpc_call_that_matches_nothing_shows_its_grpc_status():
    head = RequestHead(port=80, method="POST", target="/", host="nowhere.example.com")
    got = _explained(head, [("Content-Type", "application/grpc+proto")])
    assert (got["status"], got["grpc_status"]) == (404, 12)  # UNIMPLEMENTED
    assert _explained(head, [("Content-Type", "text/plain")])["grpc_status"] is None


REF = RouteRef(kind="HTTPRoute", namespace="app", name="r", rule="spec.rules[0]")
POLICY_TLS = UpstreamTLS(
    policy="app/p",
    server_name="b.example",
    ca_pem="PEM",
    subject_alt_names=pvector(
        [
            SubjectAltName(type="Hostname", value="*.b.example"),
            SubjectAltName(type="URI", value="spiffe://x"),
        ]
    ),
    client_certificate=Certificate(chain_pem="c", key_pem="k", secret="app/client"),
    problem="no CA",
    sni=False,
)
POLICY_JSON = {
    "policy": "app/p",
    "server_name": "b.example",
    "trust": "ca_bundle",
    "sni": False,
    "subject_alt_names": ["Hostname:*.b.example", "URI:spiffe://x"],
    "client_certificate": "app/client",
    "problem": "no CA",
}


def test_a_decision_shows_its_authority_cors_fields_and_each_backends_tls():
    table = build_table(compile(build_state(WORLD), SharedPool()).snapshot)
    backend = Backend(namespace="app", service="one", port=80, tls=POLICY_TLS)
    decision = Decision(
        matched=True,
        status=None,
        reason="r",
        host="h.example",
        path="/",
        route=REF,
        backends=(backend,),
        action=RouteAction(route=REF, mirrors=pvector([Mirror(backend=backend, percent=5.0)])),
        authority="auth.example:8443",
        response_fields=((b"access-control-allow-origin", b"https://\xe9.example"),),
    )
    head = RequestHead(port=80, method="GET", target="http://auth.example:8443/", host="h.example")
    got = explain(table, head, [("Host", "h.example")], decision)
    assert got["request_headers"] == {
        "host": ["h.example"],
        "x-forwarded-proto": ["http"],
        "x-forwarded-host": ["auth.example:8443"],  # the absolute target's authority
    }
    assert got["cors_headers"] == {"access-control-allow-origin": "https://é.example"}
    assert got["backends"][0]["tls"] == POLICY_JSON
    assert got["backends"][0]["endpoints"] == ["10.0.0.1:8080"]
    assert got["mirrors"] == [
        {"namespace": "app", "service": "one", "port": 80, "percent": 5.0, "tls": POLICY_JSON}
    ]


def test_the_trust_of_a_backend_tls_is_system_ca_bundle_or_none():
    def shown(tls: UpstreamTLS) -> Any:
        return backend_data(Backend(namespace="a", service="s", port=1, tls=tls), {})["tls"]

    system = UpstreamTLS(policy="a/p", server_name="s.example")
    assert shown(system) == {
        "policy": "a/p",
        "server_name": "s.example",
        "trust": "system",
        "sni": True,
        "subject_alt_names": [],
        "client_certificate": None,
        "problem": None,
    }
    assert shown(replace(system, ca_pem="PEM"))["trust"] == "ca_bundle"
    assert shown(replace(system, verify=False))["trust"] == "none"
    assert shown(replace(system, ca_pem="PEM", verify=False))["trust"] == "none"
