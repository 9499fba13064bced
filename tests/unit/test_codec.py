"""Every golden case's snapshot survives the protobuf form unchanged (shell.codec)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.model.manifests import parse_manifests
from coxswain.compile.scope import parse_scope
from coxswain.shell.codec import decode_snapshot, encode_snapshot

CASES = Path(__file__).resolve().parents[1] / "golden" / "cases"


def _bodies(path: Path) -> tuple[str, list[object]]:
    parsed = parse_manifests(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(parsed, list)
    header, *objects = [b.body for b in parsed]
    assert isinstance(header, dict)
    bodies = list(objects)
    for include in header.get("include", []):
        included = parse_manifests((CASES / include).read_text(encoding="utf-8"), include)
        assert isinstance(included, list)
        bodies.extend(b.body for b in included)
    return str(header.get("scope", "shared")), bodies


@pytest.mark.parametrize("path", sorted(CASES.glob("*/*.in.yaml")), ids=lambda p: p.stem)
def test_golden_snapshot_round_trips_through_protobuf(path: Path) -> None:
    scope, bodies = _bodies(path)
    snapshot = compile(build_state(bodies), parse_scope(scope) or SharedPool()).snapshot
    wire = encode_snapshot(snapshot).SerializeToString()
    assert decode_snapshot(pb.Snapshot.FromString(wire)) == snapshot


def test_a_snapshot_without_scope_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="scope"):
        decode_snapshot(pb.Snapshot(version="sha256:x"))
