"""The protobuf form carries the same content as the JSON form (ARCHITECTURE §3)."""

from __future__ import annotations

import pytest
from hypothesis import given

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.scope import GatewayScope
from coxswain.compile.snapshot_json import dump_snapshot
from coxswain.shell.codec import decode_snapshot, encode_snapshot

from .gateway_strategies import worlds as gateway_worlds
from .test_scope_props import worlds as scope_worlds

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
