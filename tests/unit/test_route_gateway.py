"""route.select on Gateway listener ports: listener choice and precedence across routes."""

from __future__ import annotations

from typing import Any

import pytest
import trustme

from coxswain.compile import SharedPool, build_state, compile
from coxswain.route import RequestHead, build_table, select

GW = "gateway.networking.k8s.io/v1"
CLASS = {
    "apiVersion": GW,
    "kind": "GatewayClass",
    "metadata": {"name": "coxswain"},
    "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
}


def service(name: str, namespace: str = "app") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"ports": [{"port": 80}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-1",
                "namespace": namespace,
                "labels": {"kubernetes.io/service-name": name},
            },
            "ports": [{"name": "", "port": 8080}],
            "endpoints": [{"addresses": ["10.0.0.1"]}],
        },
    ]


def gateway(*listeners: dict[str, Any], name: str = "gw") -> dict[str, Any]:
    return {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {"gatewayClassName": "coxswain", "listeners": list(listeners)},
    }


def route(
    name: str,
    *rules: dict[str, Any],
    hostnames: list[str] | None = None,
    created: str | None = None,
    parent: str = "gw",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "app"}
    if created:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {"parentRefs": [{"name": parent}], "rules": list(rules)}
    if hostnames:
        spec["hostnames"] = hostnames
    return {"apiVersion": GW, "kind": "HTTPRoute", "metadata": meta, "spec": spec}


def rule(backend: str, **match: Any) -> dict[str, Any]:
    return {"matches": [match] if match else [], "backendRefs": [{"name": backend, "port": 80}]}


HTTP = {"name": "http", "port": 80, "protocol": "HTTP"}


def decide(objects: list[dict[str, Any]], url_path: str, host: str = "a.example.com", **kw: Any):
    bodies = [CLASS, *objects]
    for name in ("one", "two", "three", "four"):
        bodies.extend(service(name))
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    table = build_table(snapshot)
    port = next(iter(snapshot.gateways))
    head = RequestHead(
        port=port,
        method=kw.get("method", "GET"),
        target=url_path,
        host=host,
        headers=tuple(kw.get("headers", ())),
    )
    return select(table, head)


def backend_of(decision) -> str | None:
    return decision.backends[0].service if decision.backends else None


def test_exact_path_beats_longer_prefix_when_routes_compete():
    objects = [
        gateway(HTTP),
        route("r1", rule("one", path={"type": "PathPrefix", "value": "/foo/bar"})),
        route("r2", rule("two", path={"type": "Exact", "value": "/foo/bar"})),
    ]
    assert backend_of(decide(objects, "/foo/bar")) == "two"
    assert backend_of(decide(objects, "/foo/bar/baz")) == "one"


def test_longest_prefix_wins_across_routes():
    objects = [
        gateway(HTTP),
        route("r1", rule("one", path={"type": "PathPrefix", "value": "/"})),
        route("r2", rule("two", path={"type": "PathPrefix", "value": "/api"})),
    ]
    assert backend_of(decide(objects, "/api/v1")) == "two"
    assert backend_of(decide(objects, "/apiv1")) == "one"


def test_method_then_header_count_then_query_count_break_path_ties():
    objects = [
        gateway(HTTP),
        route("a", rule("one", path={"type": "PathPrefix", "value": "/p"})),
        route(
            "b",
            rule(
                "two",
                path={"type": "PathPrefix", "value": "/p"},
                headers=[{"name": "x-a", "value": "1"}],
            ),
        ),
        route("c", rule("three", path={"type": "PathPrefix", "value": "/p"}, method="POST")),
        route(
            "d",
            rule(
                "four",
                path={"type": "PathPrefix", "value": "/p"},
                queryParams=[{"name": "q", "value": "1"}],
            ),
        ),
    ]
    assert backend_of(decide(objects, "/p", method="POST", headers=[("X-A", "1")])) == "three"
    assert backend_of(decide(objects, "/p?q=1", headers=[("X-A", "1")])) == "two"
    assert backend_of(decide(objects, "/p?q=1")) == "four"
    assert backend_of(decide(objects, "/p")) == "one"


def test_oldest_route_then_name_break_full_ties():
    match = {"path": {"type": "PathPrefix", "value": "/"}}
    older = [
        gateway(HTTP),
        route("zz", rule("one", **match), created="2024-01-01T00:00:00Z"),
        route("aa", rule("two", **match), created="2024-06-01T00:00:00Z"),
    ]
    assert backend_of(decide(older, "/")) == "one"
    same_age = [
        gateway(HTTP),
        route("zz", rule("one", **match), created="2024-01-01T00:00:00Z"),
        route("aa", rule("two", **match), created="2024-01-01T00:00:00Z"),
    ]
    assert backend_of(decide(same_age, "/")) == "two"


def test_first_rule_of_a_route_wins_a_tie_inside_it():
    objects = [
        gateway(HTTP),
        route(
            "r",
            rule("one", path={"type": "PathPrefix", "value": "/x"}),
            rule("two", path={"type": "PathPrefix", "value": "/x"}),
        ),
    ]
    assert backend_of(decide(objects, "/x")) == "one"


def test_specific_hostname_wins_and_falls_through_when_no_rule_matches():
    objects = [
        gateway(HTTP),
        route(
            "specific",
            rule("one", path={"type": "Exact", "value": "/only"}),
            hostnames=["a.example.com"],
        ),
        route("wild", rule("two"), hostnames=["*.example.com"]),
    ]
    assert backend_of(decide(objects, "/only")) == "one"
    assert backend_of(decide(objects, "/other")) == "two"
    assert backend_of(decide(objects, "/only", host="b.c.example.com")) == "two"
    assert decide(objects, "/", host="example.com").status == 404


def test_listener_hostname_isolates_routes():
    objects = [
        gateway(
            {"name": "exact", "port": 80, "protocol": "HTTP", "hostname": "a.example.com"},
            {"name": "wild", "port": 80, "protocol": "HTTP", "hostname": "*.example.com"},
        ),
        {
            **route("to-wild", rule("two")),
            "spec": {"parentRefs": [{"name": "gw", "sectionName": "wild"}], "rules": [rule("two")]},
        },
        {
            **route("to-exact", rule("one", path={"type": "Exact", "value": "/e"})),
            "spec": {
                "parentRefs": [{"name": "gw", "sectionName": "exact"}],
                "rules": [rule("one", path={"type": "Exact", "value": "/e"})],
            },
        },
    ]
    # a.example.com belongs to the exact listener: the wildcard listener's routes never see it.
    assert decide(objects, "/x", host="a.example.com").status == 404
    assert backend_of(decide(objects, "/e", host="a.example.com")) == "one"
    assert backend_of(decide(objects, "/x", host="b.example.com")) == "two"


# Gateway API conformance GatewayHTTPListenerIsolation: four listeners on one port, a route
# on each; a request reaches only the routes of the most specific listener for its host.
ISOLATED = {
    "empty-hostname": None,
    "wildcard-example-com": "*.example.com",
    "wildcard-foo-example-com": "*.foo.example.com",
    "abc-foo-example-com": "abc.foo.example.com",
}


@pytest.mark.parametrize(
    ("host", "served"),
    [
        ("bar.com", "empty-hostname"),
        ("bar.example.com", "wildcard-example-com"),
        ("bar.foo.example.com", "wildcard-foo-example-com"),
        ("abc.foo.example.com", "abc-foo-example-com"),
    ],
)
def test_each_listener_serves_only_its_own_routes(host, served):
    listeners = [
        {"name": name, "port": 80, "protocol": "HTTP", **({"hostname": h} if h else {})}
        for name, h in ISOLATED.items()
    ]
    objects: list[dict[str, Any]] = [gateway(*listeners)]
    for name in ISOLATED:
        attached = rule("one", path={"type": "PathPrefix", "value": f"/{name}"})
        spec = {"parentRefs": [{"name": "gw", "sectionName": name}], "rules": [attached]}
        objects.append({**route(f"to-{name}", attached), "spec": spec})
    for name in ISOLATED:
        expected = None if name == served else 404
        assert decide(objects, f"/{name}", host=host).status == expected, (host, name)


def test_regular_expression_paths_come_after_exact_and_before_prefixes():
    objects = [
        gateway(HTTP),
        route("p", rule("one", path={"type": "PathPrefix", "value": "/"})),
        route("r", rule("two", path={"type": "RegularExpression", "value": "/items/[0-9]+"})),
        route("e", rule("three", path={"type": "Exact", "value": "/items/42"})),
    ]
    assert backend_of(decide(objects, "/items/42")) == "three"
    assert backend_of(decide(objects, "/items/7")) == "two"
    assert backend_of(decide(objects, "/items/x")) == "one"


@pytest.mark.parametrize(
    ("redirect", "location"),
    [
        ({"scheme": "https"}, "https://a.example.com/p?q=1"),
        ({"scheme": "https", "port": 8443}, "https://a.example.com:8443/p?q=1"),
        ({"hostname": "b.example.com"}, "http://b.example.com/p?q=1"),
        ({"port": 8080}, "http://a.example.com:8080/p?q=1"),
        (
            {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/new"}},
            "http://a.example.com/new?q=1",
        ),
        (
            {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/full"}},
            "http://a.example.com/full?q=1",
        ),
    ],
)
def test_redirect_location_follows_the_port_rules(redirect, location):
    objects = [
        gateway(HTTP),
        route(
            "r",
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/p"}}],
                "filters": [{"type": "RequestRedirect", "requestRedirect": redirect}],
            },
        ),
    ]
    decision = decide(objects, "/p?q=1")
    assert (decision.status, decision.redirect) == (302, location)


# The Gateway API conformance test HTTPRouteRedirectPortAndScheme (v1.6.1,
# conformance/tests/httproute-redirect-port-and-scheme.go): (listener port and protocol, the
# filter's scheme and port, the Location expected). Unset port: with a scheme, the scheme's
# well-known port; without, the listener's port; 80 for http and 443 for https are left out.
PORT_AND_SCHEME = [
    ((80, "HTTP"), {}, "http://example.org/p"),
    ((80, "HTTP"), {"port": 80}, "http://example.org/p"),
    ((80, "HTTP"), {"port": 8080}, "http://example.org:8080/p"),
    ((80, "HTTP"), {"scheme": "https"}, "https://example.org/p"),
    ((80, "HTTP"), {"scheme": "https", "port": 443}, "https://example.org/p"),
    ((80, "HTTP"), {"scheme": "https", "port": 8443}, "https://example.org:8443/p"),
    ((8080, "HTTP"), {}, "http://example.org:8080/p"),
    ((8080, "HTTP"), {"port": 80}, "http://example.org/p"),
    ((8080, "HTTP"), {"scheme": "https"}, "https://example.org/p"),
    ((443, "HTTPS"), {}, "https://example.org/p"),
    ((443, "HTTPS"), {"port": 443}, "https://example.org/p"),
    ((443, "HTTPS"), {"port": 8443}, "https://example.org:8443/p"),
    ((443, "HTTPS"), {"scheme": "http"}, "http://example.org/p"),
    ((443, "HTTPS"), {"scheme": "http", "port": 80}, "http://example.org/p"),
    ((443, "HTTPS"), {"scheme": "http", "port": 8080}, "http://example.org:8080/p"),
]


@pytest.fixture(scope="module")
def example_org_secret() -> dict[str, Any]:
    leaf = trustme.CA().issue_cert("example.org")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "example-org", "namespace": "app"},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": b"".join(p.bytes() for p in leaf.cert_chain_pems).decode(),
            "tls.key": leaf.private_key_pem.bytes().decode(),
        },
    }


@pytest.mark.parametrize(("listener", "redirect", "location"), PORT_AND_SCHEME)
def test_redirect_port_and_scheme_follow_the_conformance_test(
    example_org_secret, listener, redirect, location
):
    port, protocol = listener
    spec: dict[str, Any] = {"name": "l", "port": port, "protocol": protocol}
    if protocol == "HTTPS":
        spec["tls"] = {"certificateRefs": [{"name": "example-org"}]}
    objects = [
        example_org_secret,
        gateway(spec),
        route(
            "r",
            {
                "filters": [
                    {
                        "type": "RequestRedirect",
                        "requestRedirect": {"hostname": "example.org", **redirect},
                    }
                ]
            },
        ),
    ]
    snapshot = compile(build_state([CLASS, *objects]), SharedPool()).snapshot
    internal = next(iter(snapshot.gateways))  # the shared pool's port for the listener
    tls = protocol == "HTTPS"
    head = RequestHead(
        port=internal,
        method="GET",
        target="/p",
        host=f"gateway.example.com:{port}",
        tls=tls,
        sni="example.org" if tls else None,
    )
    decision = select(build_table(snapshot), head)
    assert (decision.status, decision.redirect) == (302, location)


def test_rewrite_replaces_the_matched_prefix_and_host():
    objects = [
        gateway(HTTP),
        route(
            "r",
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/old"}}],
                "filters": [
                    {
                        "type": "URLRewrite",
                        "urlRewrite": {
                            "hostname": "inner.example.com",
                            "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"},
                        },
                    }
                ],
                "backendRefs": [{"name": "one", "port": 80}],
            },
        ),
    ]
    decision = decide(objects, "/old/page?x=1")
    assert (decision.status, decision.host, decision.path) == (
        None,
        "inner.example.com",
        "/page?x=1",
    )
    assert decide(objects, "/old").path == "/"


def test_invalid_backends_and_zero_weights_are_answered_500():
    invalid_only = [gateway(HTTP), route("r", {"backendRefs": [{"name": "nope", "port": 80}]})]
    assert decide(invalid_only, "/").status == 500
    zero = [gateway(HTTP), route("r", {"backendRefs": [{"name": "one", "port": 80, "weight": 0}]})]
    assert decide(zero, "/").status == 500
    none = [
        gateway(HTTP),
        route("r", {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}),
    ]
    assert decide(none, "/").status == 500
    mixed = [
        gateway(HTTP),
        route("r", {"backendRefs": [{"name": "one", "port": 80}, {"name": "nope", "port": 80}]}),
    ]
    decision = decide(mixed, "/")
    assert decision.status is None
    assert [b.valid for b in decision.backends] == [True, False]


def test_a_backend_without_ready_endpoints_is_answered_503():
    lonely = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "lonely", "namespace": "app"},
        "spec": {"ports": [{"port": 80}]},
    }
    objects = [gateway(HTTP), lonely, route("r", {"backendRefs": [{"name": "lonely", "port": 80}]})]
    assert decide(objects, "/").status == 503
