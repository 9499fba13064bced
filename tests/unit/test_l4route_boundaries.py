"""A layer-4 route's rules at their edges (``compile.gateway.l4route``, rule 1; Gateway API v1
TCPRoute, ``maxItems: 1``): a rule past the first is dropped with an ``UnsupportedValue``
finding that names it."""

from __future__ import annotations

from pyrsistent import pvector

from coxswain.compile.backends import ServiceIndex
from coxswain.compile.gateway.l4route import compile_stream_route
from coxswain.compile.gateway.refgrants import Grants
from coxswain.compile.model.gateway_objects import BackendRef, ObjectRef, StreamRoute, StreamRule
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.objects import Meta
from coxswain.compile.model.state import ClusterState, build_state


def test_a_second_rule_is_dropped_as_unsupported() -> None:
    route = StreamRoute(
        meta=Meta(key=ObjectKey("TCPRoute", "apps", "db")),
        rules=pvector([StreamRule(field="spec.rules[0]"), StreamRule(field="spec.rules[1]")]),
    )
    compiled = compile_stream_route(route, ServiceIndex(ClusterState()), Grants({}))
    assert compiled.partially_invalid is not None
    [finding] = compiled.partially_invalid.diagnostics
    assert (finding.field, finding.reason, finding.message) == (
        "spec.rules[1]",
        "UnsupportedValue",
        "a TCPRoute holds one rule (v1); this one is not served",
    )


def test_a_route_whose_every_backend_asks_for_the_proxy_protocol_has_them_all_marked() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "db",
            "namespace": "apps",
            "annotations": {"coxswain-labs.dev/proxy-protocol": "v2"},
        },
        "spec": {"ports": [{"port": 5432}]},
    }
    ref = BackendRef(ref=ObjectRef(group="", kind="Service", name="db"), port=5432)
    route = StreamRoute(
        meta=Meta(key=ObjectKey("TCPRoute", "apps", "db")),
        rules=pvector([StreamRule(field="spec.rules[0]", backend_refs=(ref,))]),
    )
    compiled = compile_stream_route(route, ServiceIndex(build_state([service])), Grants({}))
    [(_, rule)] = compiled.entries
    assert [b.proxy_protocol for b in rule.action.backends] == [True]
