"""The Gateway API passes: port allocation and exhaustion, hostname intersection, selectors."""

from __future__ import annotations

import json

import pytest
from pyrsistent import pmap, pvector

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.gateway.attach import intersect_hostnames, matches_selector
from coxswain.compile.gateway.ports import PORT_BAND, allocate_ports
from coxswain.compile.model.decode_gateway import parse_duration
from coxswain.compile.model.gateway_objects import LabelSelector, SelectorRequirement
from tests.parity import unreported


def test_new_pairs_take_the_lowest_free_ports_in_sorted_order():
    got = allocate_ports([("b/gw", 443), ("a/gw", 80), ("a/gw", 443)], existing={})
    assert got == {("a/gw", 80): 30000, ("a/gw", 443): 30001, ("b/gw", 443): 30002}


def test_existing_assignments_are_kept_when_other_gateways_come_and_go():
    existing = {("b/gw", 443): 30002}
    got = allocate_ports([("b/gw", 443), ("c/gw", 80)], existing=existing)
    assert got[("b/gw", 443)] == 30002
    assert got[("c/gw", 80)] == 30000


def test_reserved_ports_are_not_handed_out_and_out_of_band_memory_is_ignored():
    got = allocate_ports(
        [("a/gw", 80), ("b/gw", 80)], existing={("a/gw", 80): 80}, reserved=[30000]
    )
    assert got == {("a/gw", 80): 30001, ("b/gw", 80): 30002}


def test_a_port_claimed_twice_in_memory_goes_to_the_first_pair_only():
    got = allocate_ports(
        [("a/gw", 80), ("b/gw", 80)], existing={("a/gw", 80): 30005, ("b/gw", 80): 30005}
    )
    assert got == {("a/gw", 80): 30005, ("b/gw", 80): 30000}


def test_exhaustion_gives_none():
    pairs = [(f"ns/g{i:05d}", 80) for i in range(len(PORT_BAND) + 2)]
    got = allocate_ports(pairs, existing={})
    assert sum(1 for p in got.values() if p is None) == 2
    assert len({p for p in got.values() if p is not None}) == len(PORT_BAND)


def test_a_listener_left_without_an_internal_port_is_not_accepted_with_a_diagnostic():
    api = "gateway.networking.k8s.io/v1"
    listeners = [
        {"name": f"l{i}", "port": 1000 + i, "protocol": "HTTP"} for i in range(len(PORT_BAND) + 1)
    ]
    state = build_state(
        [
            {
                "apiVersion": api,
                "kind": "GatewayClass",
                "metadata": {"name": "c"},
                "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
            },
            {
                "apiVersion": api,
                "kind": "Gateway",
                "metadata": {"name": "g", "namespace": "a"},
                "spec": {"gatewayClassName": "c", "listeners": listeners},
            },
        ]
    )
    config = CompileConfig(shared_ports_per_namespace=len(PORT_BAND))  # no share below the band
    (found,) = compile(state, SharedPool(), config).diagnostics
    where = f"spec.listeners[{len(PORT_BAND)}].port"
    assert (found.field, found.reason) == (where, "PortUnavailable")
    assert "30000-32767" in found.message
    gateway = next(s for s in status(state, config) if s.kind == "Gateway")
    last = json.loads(gateway.body)["listeners"][-1]["conditions"]
    assert [(c["reason"], c["status"]) for c in last if c["type"] == "Accepted"] == [
        ("PortUnavailable", "False")
    ]
    assert unreported(state, config) == []


@pytest.mark.parametrize(
    ("listener", "route", "expected"),
    [
        (None, (), ("*",)),
        ("a.example.com", (), ("a.example.com",)),
        (None, ("a.example.com", "*.example.com"), ("a.example.com", "*.example.com")),
        (
            "*.example.com",
            ("a.example.com", "a.b.example.com", "example.com"),
            ("a.example.com", "a.b.example.com"),
        ),
        ("a.example.com", ("*.example.com",), ("a.example.com",)),
        ("*.example.com", ("*.a.example.com",), ("*.a.example.com",)),
        ("*.a.example.com", ("*.example.com",), ("*.a.example.com",)),
        ("a.example.com", ("b.example.com", "*.other.com"), ()),
        ("*.example.com", ("test.example.net",), ()),
    ],
)
def test_hostname_intersection_follows_the_httproute_spec(listener, route, expected):
    assert intersect_hostnames(listener, route) == expected


def test_selectors_evaluate_labels_and_expressions():
    labels = pmap({"team": "a", "env": "prod"})
    assert matches_selector(LabelSelector(match_labels=pmap({"team": "a"})), labels)
    assert not matches_selector(LabelSelector(match_labels=pmap({"team": "b"})), labels)
    expressions = [
        (SelectorRequirement(key="env", operator="In", values=pvector(["prod", "qa"])), True),
        (SelectorRequirement(key="env", operator="NotIn", values=pvector(["prod"])), False),
        (SelectorRequirement(key="team", operator="Exists"), True),
        (SelectorRequirement(key="zone", operator="DoesNotExist"), True),
        (SelectorRequirement(key="zone", operator="In", values=pvector(["x"])), False),
    ]
    for requirement, expected in expressions:
        selector = LabelSelector(match_expressions=pvector([requirement]))
        assert matches_selector(selector, labels) is expected, requirement
    assert not matches_selector(LabelSelector(problem="bad"), labels)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10s", 10.0),
        ("1h30m", 5400.0),
        ("500ms", 0.5),
        ("0s", 0.0),
        ("1m1s1ms", 61.001),
        ("1d", None),
        ("", None),
        ("1.5s", None),
    ],
)
def test_durations_follow_gep_2257(text, seconds):
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)
