"""Differential test of gRPC call selection against a naive matcher written from GEP-1016.

The oracle reads the **input bodies** (never the snapshot) and follows the GRPCRoute API
reference (gateway.networking.k8s.io/v1, ``GRPCRouteRule.matches``, ``GRPCMethodMatch``,
``GRPCHeaderMatch``) step by step; it imports nothing from ``coxswain.compile.gateway`` or
``coxswain.route``. The worlds are one Gateway with one HTTP listener and GRPCRoutes without
hostnames, so every route serves every host and only the rules decide. For a call
``/service/method`` with some headers:

1. **Matching.** A match without ``method`` matches every call. A method match of type
   ``Exact`` matches when the given service equals the call's and the given method equals the
   call's (one not given matches any); of type ``RegularExpression`` when each given pattern
   matches the whole service or method (the patterns drawn mean the same in Python's ``re`` and
   RE2). Header matches: for each name (case-insensitive), the first entry only; the request's
   field of that name must equal the value. A rule matches when one of its matches does; a rule
   without matches matches every call.
2. **Precedence** among matching rules: the most characters of service, then of method (as
   written), then the most header matches; then the oldest route (one without a creation time
   is the newest), then ``namespace/name``; then the first rule, then the first match.

What is compared: the chosen route and rule (``Decision.route``), or no match (a 404, which a
gRPC client sees as UNIMPLEMENTED). The same worlds shuffled compile to the same snapshot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot_json import dump_snapshot
from coxswain.route import RequestHead, build_table, select
from tests.integration.manifests import backend, gateway, gateway_class

pytestmark = pytest.mark.property

GW = "gateway.networking.k8s.io/v1"
SERVICES = ("a.S", "a.T", "b.S")
METHODS = ("M", "N", "MN")
SERVICE_PATTERNS = ("a\\..*", "[ab]\\.S", ".*T")
METHOD_PATTERNS = ("M.*", "N", "[MN]+")
HEADERS = (("x-a", "1"), ("x-a", "2"), ("X-B", "1"))
TIMES = ("2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z", None)
BASE = [gateway_class(), gateway("gw", 80), *backend("svc", 3000)]


@st.composite
def method_matches(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        found: dict[str, Any] = {"type": "Exact"}
        services, methods = SERVICES, METHODS
    else:
        found = {"type": "RegularExpression"}
        services, methods = SERVICE_PATTERNS, METHOD_PATTERNS
    service, method = draw(st.sampled_from(((True, True), (True, False), (False, True))))
    if service:
        found["service"] = draw(st.sampled_from(services))
    if method:
        found["method"] = draw(st.sampled_from(methods))
    return found


@st.composite
def matches(draw: st.DrawFn) -> dict[str, Any]:
    match: dict[str, Any] = {}
    if draw(st.booleans()):
        match["method"] = draw(method_matches())
    headers = draw(st.lists(st.sampled_from(HEADERS), max_size=2))
    if headers:
        match["headers"] = [{"name": n, "value": v} for n, v in headers]
    return match


@st.composite
def grpc_routes(draw: st.DrawFn, index: int) -> dict[str, Any]:
    rules = [
        {
            "matches": draw(st.lists(matches(), max_size=2)),
            "backendRefs": [{"name": "svc", "port": 80}],
        }
        for _ in range(draw(st.integers(1, 3)))
    ]
    metadata: dict[str, Any] = {"name": draw(st.sampled_from(("x", "y", "z"))) + str(index)}
    metadata["namespace"] = "app"
    if (created := draw(st.sampled_from(TIMES))) is not None:
        metadata["creationTimestamp"] = created
    return {
        "apiVersion": GW,
        "kind": "GRPCRoute",
        "metadata": metadata,
        "spec": {"parentRefs": [{"name": "gw"}], "rules": rules},
    }


@dataclass(frozen=True)
class Call:
    service: str
    method: str
    headers: tuple[tuple[str, str], ...]


calls = st.builds(
    Call,
    st.sampled_from(SERVICES),
    st.sampled_from(METHODS),
    st.lists(st.sampled_from(HEADERS), max_size=2, unique_by=lambda h: h[0].lower()).map(tuple),
)
worlds = st.integers(1, 4).flatmap(lambda n: st.tuples(*(grpc_routes(i) for i in range(n))))


def _method_matches(method: dict[str, Any], call: Call) -> bool:
    wanted = ((method.get("service"), call.service), (method.get("method"), call.method))
    if method["type"] == "Exact":
        return all(given is None or given == value for given, value in wanted)
    return all(given is None or re.fullmatch(given, value) for given, value in wanted)


def _first_headers(match: dict[str, Any]) -> dict[str, str]:
    first: dict[str, str] = {}
    for header in match.get("headers", []):
        first.setdefault(header["name"].lower(), header["value"])
    return first


def _matches(match: dict[str, Any], call: Call) -> bool:
    if "method" in match and not _method_matches(match["method"], call):
        return False
    given = {name.lower(): value for name, value in call.headers}
    return all(given.get(name) == value for name, value in _first_headers(match).items())


def oracle(routes: tuple[dict[str, Any], ...], call: Call) -> tuple[str, str] | None:
    """The (route name, rule field) GEP-1016 chooses, or None."""
    best: tuple[tuple[object, ...], tuple[str, str]] | None = None
    for route in routes:
        meta = route["metadata"]
        created = meta.get("creationTimestamp")
        for r, rule in enumerate(route["spec"]["rules"]):
            for m, match in enumerate(rule["matches"] or [{}]):
                if not _matches(match, call):
                    continue
                method = match.get("method", {})
                key = (
                    -len(method.get("service", "")),
                    -len(method.get("method", "")),
                    -len(_first_headers(match)),
                    created is None,
                    created or "",
                    f"{meta['namespace']}/{meta['name']}",
                    r,
                    m,
                )
                if best is None or key < best[0]:
                    best = (key, (meta["name"], f"spec.rules[{r}]"))
    return None if best is None else best[1]


def _snapshot(bodies: list[dict[str, Any]]) -> Any:
    return compile(build_state(bodies), SharedPool()).snapshot


@given(worlds, st.lists(calls, min_size=1, max_size=6))
def test_select_picks_the_rule_gep_1016_picks(routes, reqs):
    table = build_table(_snapshot([*BASE, *routes]))
    for call in reqs:
        head = RequestHead(
            port=30000,
            method="POST",
            target=f"/{call.service}/{call.method}",
            host="grpc.test",
            headers=(("content-type", "application/grpc"), *call.headers),
        )
        decision = select(table, head)
        chosen = None if decision.route is None else (decision.route.name, decision.route.rule)
        assert chosen == oracle(routes, call), call


@given(st.data(), worlds)
def test_grpc_worlds_compile_the_same_in_any_order(data, routes):
    bodies = [*BASE, *routes]
    shuffled = data.draw(st.permutations(bodies))
    assert dump_snapshot(_snapshot(shuffled)) == dump_snapshot(_snapshot(bodies))
