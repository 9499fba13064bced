"""GRPCRoute from manifests to the proxy's decision: GEP-1016's match translation and precedence,
cross-serving with HTTPRoutes, and the gRPC status the proxy answers a call with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from pyrsistent import pvector

from coxswain.compile import SharedPool, build_state, compile, status
from coxswain.compile.config import CompileConfig
from coxswain.compile.gateway.attach import hostnames_overlap
from coxswain.compile.gateway.grpcroute import grpc_path_match, grpc_precedence
from coxswain.compile.gateway.status import supported_features
from coxswain.compile.model.gateway_objects import (
    GRPCMethodMatch,
    GRPCRoute,
    GRPCRouteMatch,
    ValueMatch,
)
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.objects import Meta
from coxswain.compile.regex import FullMatch, compile_pattern
from coxswain.compile.snapshot import BackendProtocol
from coxswain.route import RequestHead, build_table, select
from coxswain.route.grpc_status import grpc_status, is_grpc_call, status_label
from tests.integration import manifests

if TYPE_CHECKING:
    from coxswain.route.decision import Decision

GRPC = (("content-type", "application/grpc"),)


def grpc_route(name: str, *rules: dict[str, Any], created: str = "", **spec: Any) -> dict[str, Any]:
    route = manifests.grpc_route(name, "gw", *rules, **spec)
    if created:
        route["metadata"]["creationTimestamp"] = created
    return route


def rule(backend: str, *matches: dict[str, Any], **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"backendRefs": [{"name": backend, "port": 80}], **extra}
    if matches:
        found["matches"] = list(matches)
    return found


def not_ready(name: str) -> list[dict[str, Any]]:
    """A Service whose only endpoint is not ready."""
    service, endpoints = manifests.backend(name, 3000)
    endpoints["endpoints"][0]["conditions"] = {"ready": False}
    return [service, endpoints]


def call(
    objects: list[dict[str, Any]],
    path: str,
    *,
    headers: tuple[tuple[str, str], ...] = GRPC,
    host: str = "a.example.com",
) -> Decision:
    bodies = [manifests.gateway_class(), manifests.gateway("gw", 80), *objects]
    for name in ("one", "two", "three"):
        bodies.extend(manifests.backend(name, 3000))
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    head = RequestHead(port=30000, method="POST", target=path, host=host, headers=headers)
    return select(build_table(snapshot), head)


def served_by(decision: Decision) -> str | None:
    return None if decision.route is None else decision.backends[0].service


# --- match translation (GEP-1016, "Matcher Types") ------------------------------------------------


def _match(type_: str = "Exact", service: str | None = None, method: str | None = None):
    return GRPCRouteMatch(
        field="spec.rules[0].matches[0]",
        method=GRPCMethodMatch(type=type_, service=service, method=method),
    )


@pytest.mark.parametrize(
    ("match", "path_type", "path"),
    [
        (_match(service="a.B", method="C"), "Exact", "/a.B/C"),
        (_match(service="a.B"), "PathPrefix", "/a.B"),
        (_match(method="C"), "RegularExpression", "/[^/]+/C"),
        (
            _match("RegularExpression", "a\\.(B|D)", "C.*"),
            "RegularExpression",
            "/(?:a\\.(B|D))/(?:C.*)",
        ),
        (_match("RegularExpression", "a\\..+"), "RegularExpression", "/(?:a\\..+)/[^/]+"),
        (_match("RegularExpression", method="Get.*"), "RegularExpression", "/[^/]+/(?:Get.*)"),
        (_match("RegularExpression"), "PathPrefix", "/"),
        (GRPCRouteMatch(field="m"), "PathPrefix", "/"),
    ],
)
def test_a_method_match_is_the_path_match_gep_1016_gives_it(match, path_type, path):
    compiled = grpc_path_match(match)
    assert (compiled.path_type, compiled.path) == (path_type, path)
    assert (compiled.method, list(compiled.query)) == (None, [])


@pytest.mark.parametrize(
    ("match", "calls", "others"),
    [
        (_match(method="C"), ["/a.B/C", "/x/C"], ["/a/b/C", "/a.B/CD", "//C"]),
        (_match("RegularExpression", "a\\.(B|D)", "C.*"), ["/a.B/C", "/a.D/Cx"], ["/a.E/C"]),
        (_match("RegularExpression", "a\\..+"), ["/a.B/C", "/a.x.y/M"], ["/a.B/", "/b.B/C"]),
    ],
)
def test_a_method_regular_expression_matches_whole_calls_only(match, calls, others):
    pattern = compile_pattern(grpc_path_match(match).path)
    assert isinstance(pattern, FullMatch)
    assert all(pattern.matches(c) for c in calls)
    assert not any(pattern.matches(c) for c in others)


def test_only_the_first_of_equivalent_header_names_is_kept():
    match = GRPCRouteMatch(
        field="m",
        headers=(
            ValueMatch(name="x-a", type="Exact", value="1"),
            ValueMatch(name="x-a", type="Exact", value="2"),
            ValueMatch(name="x-b", type="RegularExpression", value="v.*"),
        ),
    )
    headers = grpc_path_match(match).headers
    assert [(h.name, h.value) for h in headers] == [("x-a", "1"), ("x-b", "v.*")]


def _route(created: str) -> GRPCRoute:
    return GRPCRoute(meta=Meta(key=ObjectKey("GRPCRoute", "app", "r"), created=created))


def test_precedence_is_service_length_then_method_length_then_headers_then_age():
    route, older = _route("2025-02-01T00:00:00Z"), _route("2025-01-01T00:00:00Z")
    header = pvector([ValueMatch(name="x", type="Exact", value="1")])
    keys = [
        grpc_precedence(route, _match(service="long.Service"), 0, 0),
        grpc_precedence(route, _match(service="a.B", method="LongMethod"), 0, 0),
        grpc_precedence(route, _match(service="a.B", method="M"), 0, 0),
        grpc_precedence(
            route,
            GRPCRouteMatch(field="m", method=GRPCMethodMatch(method="M"), headers=header),
            0,
            0,
        ),
        grpc_precedence(older, _match(method="M"), 1, 0),
        grpc_precedence(route, _match(method="M"), 0, 0),
        grpc_precedence(route, GRPCRouteMatch(field="m"), 0, 0),
    ]
    assert sorted(keys) == keys


# --- selection ------------------------------------------------------------------------------------


def test_a_longer_service_beats_a_method_match_whatever_the_path_types():
    objects = [
        grpc_route(
            "r",
            rule("one", {"method": {"method": "SayHello"}}),
            rule("two", {"method": {"service": "helloworld.Greeter"}}),
        )
    ]
    assert served_by(call(objects, "/helloworld.Greeter/SayHello")) == "two"
    assert served_by(call(objects, "/other.Service/SayHello")) == "one"


def test_service_and_method_beat_the_service_alone_and_a_catch_all_comes_last():
    objects = [
        grpc_route(
            "r",
            rule("one"),
            rule("two", {"method": {"service": "a.B"}}),
            rule("three", {"method": {"service": "a.B", "method": "C"}}),
        )
    ]
    assert served_by(call(objects, "/a.B/C")) == "three"
    assert served_by(call(objects, "/a.B/D")) == "two"
    assert served_by(call(objects, "/x.Y/C")) == "one"


def test_more_header_matches_win_then_the_oldest_route():
    version = {"headers": [{"name": "version", "value": "2"}]}
    both = {"headers": [{"name": "version", "value": "2"}, {"name": "color", "value": "red"}]}
    objects = [
        grpc_route("young", rule("one", version), created="2025-02-01T00:00:00Z"),
        grpc_route("old", rule("two", version), created="2025-01-01T00:00:00Z"),
        grpc_route("both", rule("three", both), created="2025-03-01T00:00:00Z"),
    ]
    assert served_by(call(objects, "/a.B/C", headers=(*GRPC, ("Version", "2")))) == "two"
    red = (*GRPC, ("version", "2"), ("color", "red"))
    assert served_by(call(objects, "/a.B/C", headers=red)) == "three"


def test_a_method_match_does_not_take_a_path_of_three_segments():
    objects = [grpc_route("r", rule("one", {"method": {"method": "C"}}))]
    decision = call(objects, "/a/b/C")
    assert (decision.matched, decision.status) == (False, 404)
    assert grpc_status(decision, call=True) == 12


def test_http_and_grpc_routes_share_a_listener_on_separate_hostnames():
    http_route = manifests.http_route("web", "gw", "one", hostnames=["www.example.com"])
    objects = [http_route, grpc_route("rpc", rule("two"), hostnames=["api.example.com"])]
    web = call(objects, "/index.html", headers=(), host="www.example.com")
    rpc = call(objects, "/a.B/C", host="api.example.com")
    assert (served_by(web), web.action is not None and web.action.grpc) == ("one", False)
    assert (served_by(rpc), rpc.action is not None and rpc.action.grpc) == ("two", True)
    assert rpc.backends[0].protocol is BackendProtocol.H2C
    assert web.backends[0].protocol is BackendProtocol.HTTP1


# --- the gRPC status of the proxy's own answers ---------------------------------------------------


def test_unavailable_for_no_ready_endpoint_and_for_an_invalid_backend():
    objects = [
        grpc_route(
            "r",
            rule("gone", {"method": {"service": "a.Gone"}}),
            rule("idle", {"method": {"service": "a.Idle"}}),
        ),
        *not_ready("idle"),
    ]
    invalid, idle = call(objects, "/a.Gone/M"), call(objects, "/a.Idle/M")
    assert (invalid.status, grpc_status(invalid, call=True)) == (500, 14)
    assert (idle.status, grpc_status(idle, call=True)) == (503, 14)


def test_internal_for_a_filter_the_proxy_cannot_apply():
    extension = {"type": "ExtensionRef", "extensionRef": {"group": "x", "kind": "Y", "name": "z"}}
    decision = call([grpc_route("r", rule("one", filters=[extension]))], "/a.B/C")
    assert (decision.status, grpc_status(decision, call=True)) == (500, 13)


def test_a_forwarded_call_and_an_httproute_answer_have_no_grpc_status():
    forwarded = call([grpc_route("r", rule("one"))], "/a.B/C")
    assert (forwarded.status, grpc_status(forwarded, call=True)) == (None, None)
    http_route = manifests.http_route("web", "gw", "gone")
    answered = call([http_route], "/a.B/C")
    assert (answered.status, grpc_status(answered, call=True)) == (500, None)


def test_an_unmatched_request_is_a_grpc_answer_only_when_it_is_a_call():
    decision = call([], "/a.B/C")
    assert grpc_status(decision, call=True) == 12
    assert grpc_status(decision, call=False) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("application/grpc", True),
        ("application/grpc+proto", True),
        ("Application/GRPC; charset=utf-8", True),
        ("application/grpc-web", False),
        ("application/json", False),
    ],
)
def test_a_grpc_call_is_told_by_its_content_type(value, expected):
    assert is_grpc_call([("Content-Type", value)]) is expected
    assert is_grpc_call([]) is False


# --- cross serving (GEP-1016) and the GatewayClass's features -------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ("*", "a.example.com", True),
        ("a.example.com", "a.example.com", True),
        ("*.example.com", "a.b.example.com", True),
        ("*.example.com", "*.b.example.com", True),
        ("*.example.com", "example.com", False),
        ("*.a.example.com", "*.b.example.com", False),
        ("a.example.com", "b.example.com", False),
    ],
)
def test_route_hostnames_overlap_when_some_host_matches_both(first, second, overlap):
    assert hostnames_overlap(first, second) is overlap
    assert hostnames_overlap(second, first) is overlap


def test_grpcroute_features_are_declared_only_when_the_proxies_serve_http2():
    undeclared = supported_features(CompileConfig(serves_http2=False))
    assert "GRPCRoute" not in undeclared
    assert "HTTPRouteBackendProtocolH2C" not in undeclared
    declared = supported_features(CompileConfig())
    assert {"GRPCRoute", "GRPCRouteNamedRouteRule", "HTTPRouteBackendProtocolH2C"} <= set(declared)
    assert declared == sorted(declared)


def test_grpcroutes_get_their_status_whatever_the_gatewayclass_declares():
    bodies = [manifests.gateway_class(), manifests.gateway("gw", 80), grpc_route("r", rule("one"))]
    state = build_state([*bodies, *manifests.backend("one", 3000)])
    kinds = {s.kind for s in status(state)}
    assert "GRPCRoute" in kinds
    assert kinds == {s.kind for s in status(state, CompileConfig(serves_http2=False))}


def test_a_grpc_status_label_takes_bounded_values() -> None:
    assert status_label([(b"grpc-message", b"x"), (b"grpc-status", b"14")]) == "14"
    assert status_label([(b"grpc-status", b"17")]) == "other"
    assert status_label([(b"grpc-status", b"0" * 1000)]) == "other"
    assert status_label([(b"content-type", b"application/grpc")]) == ""
