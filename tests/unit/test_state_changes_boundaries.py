"""Whom a change concerns, at its edges (``compile.state_changes``): a kind the state has no
table for, a parentRef without a namespace (the route's own, Gateway API ``ParentReference``),
and a parentRef to something other than a Gateway."""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pmap, pvector

from coxswain.compile.model.gateway_objects import GATEWAY_GROUP, HTTPRoute, ParentRef
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.objects import Meta
from coxswain.compile.model.state import ClusterState
from coxswain.compile.state_changes import lookup, named_gateways, named_parents

ROUTE = HTTPRoute(
    meta=Meta(key=ObjectKey("HTTPRoute", "apps", "web")),
    parent_refs=pvector(
        [
            ParentRef(group=GATEWAY_GROUP, kind="Gateway", name="edge"),
            ParentRef(group=GATEWAY_GROUP, kind="Gateway", name="edge", namespace="infra"),
            ParentRef(group=GATEWAY_GROUP, kind="ListenerSet", name="extra"),
            ParentRef(group="", kind="Service", name="mesh"),
        ]
    ),
)


def test_a_kind_without_a_table_has_no_object() -> None:
    assert lookup(ClusterState(), ObjectKey("Widget", "apps", "web")) is None
    assert lookup(ClusterState(), ObjectKey("ConfigMap", "apps", "web")) is None


def test_the_named_gateways_are_the_gateway_refs_in_the_route_s_namespace_by_default() -> None:
    assert list(named_gateways(ROUTE)) == [
        ObjectKey("Gateway", "apps", "edge"),
        ObjectKey("Gateway", "infra", "edge"),
    ]


def test_a_parent_ref_without_namespace_names_a_parent_in_the_route_s_namespace() -> None:
    before = ClusterState()
    after = replace(before, httproutes=pmap({ROUTE.meta.key: ROUTE}))
    named = {("apps", "edge"), ("infra", "edge"), ("apps", "extra"), ("apps", "mesh")}
    assert set(named_parents(before, after, ROUTE.meta.key)) == named
    assert set(named_parents(after, before, ROUTE.meta.key)) == named  # deleted: as it was
    assert not set(named_parents(before, before, ROUTE.meta.key))  # in neither state
