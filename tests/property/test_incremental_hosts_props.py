"""A listener table edited host by host equals one compiled from scratch (``compile.memo``).

``gateway.cells`` gathers and sorts again only the hosts a changed route adds to, and
``snapshot_json`` hashes again only those hosts' pieces (``edited_table_text``); routes here
share a few hosts on one listener, so an edit adds, moves, reorders and drops hosts that other
routes keep. After every event the memo's snapshot must be byte-identical, version included,
to the pure ``compile``'s, and a host no route of the event touched keeps its very rule list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coxswain.compile import CompileConfig, SharedPool, build_state, compile
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.gateway_objects import HTTPRoute
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.state import Deleted, Upserted, apply
from coxswain.compile.snapshot_json import dump_snapshot
from coxswain.compile.state_changes import lookup
from tests.integration.manifests import gateway, gateway_class

if TYPE_CHECKING:
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.snapshot import Snapshot

pytestmark = pytest.mark.property

CONFIG = CompileConfig()
_HOSTS = ("a.example.com", "b.example.com", "c.example.com", "*.example.com")
_NAMES = ("r0", "r1", "r2", "r3", "r4")


def _route(name: str, hostnames: list[str], paths: list[str]) -> dict[str, Any]:
    rules = [
        {
            "matches": [{"path": {"type": "PathPrefix", "value": path}}],
            "backendRefs": [{"name": "svc", "port": 80}],
        }
        for path in paths
    ]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {"parentRefs": [{"name": "one"}], "hostnames": hostnames, "rules": rules},
    }


_routes = st.builds(
    _route,
    st.sampled_from(_NAMES),
    st.lists(st.sampled_from(_HOSTS), max_size=3, unique=True),
    st.lists(st.sampled_from(("/", "/a", "/a/b", "/c")), min_size=1, max_size=3),
)
_events = st.one_of(_routes, st.sampled_from(_NAMES))  # a name: that route deleted


def _world() -> list[dict[str, Any]]:
    return [
        gateway_class(),
        gateway("one", 80),
        gateway("two", 81),
        *(_route(name, [_HOSTS[i % 3]], ["/", f"/{name}"]) for i, name in enumerate(_NAMES)),
    ]


def _hosts(snapshot: Snapshot) -> dict[tuple[int, str, str], object]:
    """Every listener host's rule list, by internal port, listener hostname and host."""
    return {
        (port, hostname, host): rules
        for port, tables in snapshot.gateways.items()
        for hostname, table in tables.items()
        for host, rules in table.hosts.items()
    }


def _step(state: ClusterState, event: dict[str, Any] | str) -> tuple[ClusterState, ObjectKey]:
    if isinstance(event, str):
        key = ObjectKey("HTTPRoute", "app", event)
        return apply(state, Deleted(key)), key
    decoded = decode_object(event)
    assert isinstance(decoded, Decoded)
    return apply(state, Upserted(decoded.obj)), decoded.obj.meta.key


@settings(max_examples=200)
@given(events=st.lists(_events, min_size=1, max_size=10), hinted=st.booleans())
def test_a_table_edited_host_by_host_equals_one_compiled_from_scratch(
    events: list[dict[str, Any] | str], hinted: bool
) -> None:
    state = build_state(_world())
    memo = CompileMemo()
    before = memo.compile(state, SharedPool(), CONFIG).snapshot
    for event in events:
        base, (state, key) = state, _step(state, event)
        if hinted:
            memo.changed(base, state, {key})
        after = memo.compile(state, SharedPool(), CONFIG).snapshot
        assert dump_snapshot(after) == dump_snapshot(compile(state, SharedPool(), CONFIG).snapshot)
        touched = {
            host
            for holder in (base, state)
            if isinstance(route := lookup(holder, key), HTTPRoute)
            for host in (route.hostnames or ("*",))
        }
        was, now = _hosts(before), _hosts(after)
        for place, rules in now.items():
            if place[2] not in touched and place in was:
                assert rules is was[place]
        before = after
