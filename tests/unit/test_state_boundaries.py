"""compile.model.state: every kind stored and removed by events as a batch build would.

The property test (tests/property/test_compile_props.py) replays random events; these replay,
deterministically, one upsert and one delete of every kind the state holds, on a world taken
from the golden inputs, plus the index entries two routes or two slices share.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Final

import pytest

from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.manifests import ManifestSyntaxError, parse_manifests
from coxswain.compile.model.state import Deleted, Upserted, apply, build_state

CASES: Final = Path(__file__).resolve().parents[1] / "golden" / "cases"
_SKIPPED: Final = {"CompileCase", "Pod"}


def _world() -> list[dict[str, Any]]:
    """The first object of each kind found in the golden inputs, and a second HTTPRoute and
    EndpointSlice indexed under the same entry as the first."""
    first: dict[str, dict[str, Any]] = {}
    for path in sorted(CASES.glob("*/*.yaml")):
        parsed = parse_manifests(path.read_text(encoding="utf-8"), str(path))
        assert not isinstance(parsed, ManifestSyntaxError)
        for sourced in parsed:
            body = sourced.body
            kind = body.get("kind") if isinstance(body, dict) else None
            if isinstance(kind, str) and kind not in _SKIPPED:
                decoded = decode_object(body)
                if isinstance(decoded, Decoded) and not decoded.obj.diagnostics:
                    first.setdefault(kind, body)
    world = list(first.values())
    for kind in ("HTTPRoute", "EndpointSlice"):
        twin = copy.deepcopy(first[kind])
        twin["metadata"]["name"] += "-twin"
        world.append(twin)
    return world


WORLD: Final = _world()


def _key(body: dict[str, Any]) -> ObjectKey:
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    return decoded.obj.meta.key


def test_the_world_holds_every_kind_the_state_stores():
    kinds = {body["kind"] for body in WORLD}
    assert kinds >= {
        *("Ingress", "IngressClass", "Service", "EndpointSlice", "Secret", "Namespace"),
        *("ConfigMap", "GatewayClass", "Gateway", "HTTPRoute", "ReferenceGrant"),
        *("CoxswainGatewayParameters", "Deployment", "ServiceAccount"),
    }


@pytest.mark.parametrize("body", WORLD, ids=lambda b: f"{b['kind']}-{b['metadata']['name']}")
def test_upserting_an_object_equals_building_with_it(body):
    others = [b for b in WORLD if b is not body]
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    assert apply(build_state(others), Upserted(decoded.obj)) == build_state(WORLD)


@pytest.mark.parametrize("body", WORLD, ids=lambda b: f"{b['kind']}-{b['metadata']['name']}")
def test_deleting_an_object_equals_building_without_it(body):
    others = [b for b in WORLD if b is not body]
    assert apply(build_state(WORLD), Deleted(_key(body))) == build_state(others)


def test_deleting_what_is_not_there_changes_nothing():
    state = build_state(WORLD)
    for body in WORLD:
        key = _key(body)
        missing = ObjectKey(key.kind, key.namespace, key.name + "-missing")
        assert apply(state, Deleted(missing)) == state


def test_moving_a_route_to_another_parent_moves_its_index_entry():
    [route] = [b for b in WORLD if b["kind"] == "HTTPRoute"][:1]
    moved = copy.deepcopy(route)
    moved["spec"]["parentRefs"] = [{"name": "elsewhere"}]
    decoded = decode_object(moved)
    assert isinstance(decoded, Decoded)
    after = apply(build_state(WORLD), Upserted(decoded.obj))
    rebuilt = build_state([moved if b is route else b for b in WORLD])
    assert after == rebuilt
    assert after.routes_by_parent == rebuilt.routes_by_parent


def test_deleting_every_route_of_a_parent_removes_its_index_entry():
    routes = [b for b in WORLD if b["kind"] == "HTTPRoute"]
    others = [b for b in WORLD if b["kind"] != "HTTPRoute"]
    state = build_state(WORLD)
    for route in routes:
        state = apply(state, Deleted(_key(route)))
    assert state == build_state(others)
    assert state.routes_by_parent == build_state(others).routes_by_parent
