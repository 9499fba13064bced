"""The protobuf form carries the same content as the JSON form (docs/contracts.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.scope import GatewayScope
from coxswain.compile.snapshot import Endpoint
from coxswain.compile.snapshot_json import dump_snapshot
from coxswain.shell.discovery.codec import encode_snapshot
from coxswain.shell.discovery.delta_apply import apply_delta
from coxswain.shell.discovery.resources import ResourceCache
from coxswain.shell.discovery.snapshot_decode import decode_snapshot

from .gateway_strategies import worlds as gateway_worlds
from .scope_strategies import worlds as scope_worlds
from .strategies import worlds as ingress_worlds

pytestmark = pytest.mark.property


def _round_trip(snapshot):
    wire = encode_snapshot(snapshot, sequence=7).SerializeToString()
    message = pb.Snapshot.FromString(wire)
    assert message.sequence == 7
    return decode_snapshot(message)


@given(gateway_worlds)
def test_gateway_snapshots_round_trip_through_protobuf(bodies):
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    back = _round_trip(snapshot)
    assert back == snapshot
    assert dump_snapshot(back) == dump_snapshot(snapshot)


@given(scope_worlds())
def test_every_scope_round_trips_through_protobuf(bodies):
    state = build_state(bodies)
    scopes = [SharedPool()] + [
        GatewayScope(b["metadata"]["namespace"], b["metadata"]["name"])
        for b in bodies
        if b["kind"] == "Gateway"
    ]
    for scope in scopes:
        snapshot = compile(state, scope).snapshot
        assert _round_trip(snapshot) == snapshot


# --- incremental delivery: a chain of Deltas gives what full Snapshots give --------------------


def _delivered(snapshots):
    """Publish ``snapshots`` in order through one ``ResourceCache`` and follow them as a delta
    client does: the first in full, each next one as a Delta against the one before. Also
    checks each spliced full message against ``encode_snapshot`` and a Delta from the first
    version straight to each later one (a client further behind)."""
    cache = ResourceCache()
    encoded = [cache.encode(s) for s in snapshots]
    first = pb.ServerMessage.FromString(encoded[0].full_message())
    held = decode_snapshot(first.snapshot)
    for snapshot, version, before in zip(snapshots, encoded, [None, *encoded], strict=False):
        full = pb.ServerMessage.FromString(version.full_message()).snapshot
        assert full == encode_snapshot(snapshot, version.sequence)
        expected = decode_snapshot(full)
        if before is not None:
            delta = pb.ServerMessage.FromString(version.delta_message(before)).delta
            held = apply_delta(held, delta)
            assert held == expected
            assert held.version == snapshot.version
            skip = pb.ServerMessage.FromString(version.delta_message(encoded[0])).delta
            assert apply_delta(decode_snapshot(first.snapshot), skip) == expected


@given(st.lists(gateway_worlds, min_size=2, max_size=4))
def test_deltas_between_unrelated_gateway_worlds_give_the_full_decode(worlds):
    _delivered([compile(build_state(bodies), SharedPool()).snapshot for bodies in worlds])


@given(st.lists(ingress_worlds(), min_size=2, max_size=4))
def test_deltas_between_unrelated_ingress_worlds_give_the_full_decode(worlds):
    _delivered([compile(build_state(bodies), SharedPool()).snapshot for bodies in worlds])


@given(scope_worlds(), st.lists(st.sets(st.integers(0, 30)), min_size=1, max_size=4))
def test_deltas_of_small_edits_give_the_full_decode_in_every_scope(bodies, drops):
    """A world and the same world with a few bodies left out, as after small edits."""
    states = [build_state(bodies)] + [
        build_state([b for i, b in enumerate(bodies) if i not in dropped]) for dropped in drops
    ]
    scopes = [SharedPool()] + [
        GatewayScope(b["metadata"]["namespace"], b["metadata"]["name"])
        for b in bodies
        if b["kind"] == "Gateway"
    ]
    for scope in scopes:
        _delivered([compile(state, scope).snapshot for state in states])


_ENDPOINT_EDITS = st.lists(
    st.tuples(st.integers(0, 150), st.one_of(st.none(), st.integers(1, 250))),
    min_size=1,
    max_size=6,
)
"""Edits of an endpoints map: (name, new address or None to take it out)."""


@given(gateway_worlds, st.lists(_ENDPOINT_EDITS, min_size=1, max_size=4))
def test_deltas_of_endpoint_edits_give_the_full_decode(bodies, rounds):
    """Each version is the last one with its endpoints map set and removed as the compiler
    patches it (its buckets shared, ``resources._changed_names``; across a resize as names
    come and go) and every other cell the same object (the listener tables kept whole)."""
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    endpoints = pmap({f"ns/svc-{n}/80": pvector([Endpoint(f"10.0.0.{n}", 80)]) for n in range(60)})
    snapshots = [replace(snapshot, version="v0", endpoints=endpoints)]
    for number, edits in enumerate(rounds, start=1):
        for name, address in edits:
            key = f"ns/svc-{name}/80"
            if address is None:
                endpoints = endpoints.discard(key)
            else:
                endpoints = endpoints.set(key, pvector([Endpoint(f"10.1.0.{address}", 80)]))
        snapshots.append(replace(snapshot, version=f"v{number}", endpoints=endpoints))
    _delivered(snapshots)
