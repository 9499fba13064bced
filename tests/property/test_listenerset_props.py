"""Properties of merging ListenerSets into their Gateway (GEP-1713) over random small worlds.

The worlds hold one Gateway of ours that admits ListenerSets from every namespace, a few
ListenerSets naming it whose listeners collide (the same names, ports and hostnames), routes
and what they reference.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile import SharedPool, build_state, compile, status
from coxswain.compile.snapshot_json import dump_snapshot

from .gateway_strategies import (
    GW,
    OUR_CLASS,
    httproutes,
    listener_sets,
    listeners,
    supporting,
)

pytestmark = pytest.mark.property

_LAST = "2030-01-01T00:00:00Z"  # later than every creation time the strategies draw


@st.composite
def _gateway(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": "x", "namespace": "a"},
        "spec": {
            "gatewayClassName": "coxswain",
            "allowedListeners": {"namespaces": {"from": "All"}},
            "listeners": [draw(listeners(i)) for i in range(draw(st.integers(1, 3)))],
        },
    }


def _parented(body: dict[str, Any]) -> dict[str, Any]:
    """The ListenerSet naming the worlds' Gateway."""
    body["spec"]["parentRef"] = {"name": "x", "namespace": "a"}
    return body


merging_worlds = st.tuples(
    _gateway(),
    st.lists(listener_sets().map(_parented), min_size=1, max_size=4),
    st.lists(st.one_of(httproutes(), supporting()), max_size=6),
).map(lambda parts: [OUR_CLASS, parts[0], *parts[1], *parts[2]])


def _outputs(bodies: list[dict[str, Any]]) -> tuple[str, list[str]]:
    state = build_state(bodies)
    snapshot = dump_snapshot(compile(state, SharedPool()).snapshot)
    return snapshot, [f"{s.kind} {s.namespace}/{s.name} {s.body}" for s in status(state)]


@given(st.data(), merging_worlds)
def test_merging_is_independent_of_input_order(data, bodies):
    shuffled = data.draw(st.permutations(bodies))
    assert _outputs(shuffled) == _outputs(bodies)


def _listener_outcomes(bodies: list[dict[str, Any]]) -> dict[tuple[str, str, str], Any]:
    """Each listener's status (conditions, attached routes) by (kind, ns/name, listener), and
    each object's top conditions; the count of attached ListenerSets left out."""
    found: dict[tuple[str, str, str], Any] = {}
    for item in status(build_state(bodies)):
        if item.kind not in ("Gateway", "ListenerSet"):
            continue
        body = json.loads(item.body)
        where = f"{item.namespace}/{item.name}"
        found[(item.kind, where, "")] = body["conditions"]
        for listener in body.get("listeners", ()):
            found[(item.kind, where, listener["name"])] = listener
    return found


@given(merging_worlds, listener_sets(created=_LAST).map(_parented))
def test_a_newer_listener_set_never_takes_a_listener_from_the_others(bodies, newest):
    """GEP-1713: in a conflict the listener of higher precedence wins, so a ListenerSet newer
    than all others changes nothing of any other object's listeners (nor of their top
    conditions), whatever its listeners collide with."""
    newest["metadata"]["name"] = "newest"
    before = _listener_outcomes(bodies)
    after = _listener_outcomes([*bodies, newest])
    assert {
        k: v for k, v in after.items() if k[1] != f"{newest['metadata']['namespace']}/newest"
    } == before
