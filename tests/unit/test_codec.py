"""Every golden case's snapshot survives the protobuf form unchanged (shell.discovery.codec), and
the keyed-resource form of incremental delivery (shell.discovery.resources) splices the same
messages."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.model.manifests import parse_manifests
from coxswain.compile.scope import parse_scope
from coxswain.compile.snapshot import Endpoint, IngressTable, Snapshot
from coxswain.shell.discovery.codec import encode_snapshot
from coxswain.shell.discovery.delta_apply import apply_delta
from coxswain.shell.discovery.resources import ResourceCache
from coxswain.shell.discovery.snapshot_decode import decode_snapshot

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


@pytest.mark.parametrize("path", sorted(CASES.glob("*/*.in.yaml")), ids=lambda p: p.stem)
def test_golden_snapshot_spliced_from_resources_is_the_encoded_message(path: Path) -> None:
    """The server's full Snapshot is spliced from cached resource fragments, not encoded: it
    must parse to exactly the message ``encode_snapshot`` builds."""
    scope, bodies = _bodies(path)
    snapshot = compile(build_state(bodies), parse_scope(scope) or SharedPool()).snapshot
    version = ResourceCache().encode(snapshot)
    message = pb.ServerMessage.FromString(version.full_message())
    assert message.snapshot == encode_snapshot(snapshot, version.sequence)


def _endpoints(version: str, **addresses: str) -> Snapshot:
    table = {k.replace("_", "/"): pvector([Endpoint(a, 80)]) for k, a in addresses.items()}
    return Snapshot(
        version=version,
        scope=SharedPool(),
        ingress=IngressTable(http_port=80, https_port=443),
        endpoints=pmap(table),
    )


def _delta(old: Snapshot, new: Snapshot) -> pb.Delta:
    cache = ResourceCache()
    base = cache.encode(old)
    return pb.ServerMessage.FromString(cache.encode(new).delta_message(base)).delta


def test_only_changed_resources_are_re_encoded_and_sent() -> None:
    old = _endpoints("v1", a_s_80="10.0.0.1", a_t_80="10.0.0.2")
    delta = _delta(old, _endpoints("v2", a_s_80="10.0.0.9", b_u_80="10.0.0.3"))
    assert (delta.base_version, delta.version) == ("v1", "v2")
    assert sorted(r.key.name for r in delta.upserts) == ["a/s/80", "b/u/80"]
    assert [k.name for k in delta.removed] == ["a/t/80"]


def test_a_delta_against_another_base_is_refused() -> None:
    old = _endpoints("v1", a_s_80="10.0.0.1")
    delta = _delta(old, _endpoints("v2", a_s_80="10.0.0.2"))
    with pytest.raises(ValueError, match="holding 'v0'"):
        apply_delta(replace(old, version="v0"), delta)


def test_a_delta_that_does_not_fit_its_base_is_refused() -> None:
    old = _endpoints("v1", a_s_80="10.0.0.1", a_t_80="10.0.0.2")
    delta = _delta(old, _endpoints("v2", a_s_80="10.0.0.1"))
    with pytest.raises(ValueError, match="does not hold"):
        apply_delta(_endpoints("v1", a_s_80="10.0.0.1"), delta)
    routes = pb.Delta(version="v2", base_version="v1")
    stray = routes.upserts.add()
    stray.key.CopyFrom(pb.ResourceKey(kind=pb.ResourceKey.ROUTE_HOST, port=80, name="*", host="h"))
    stray.route_host.SetInParent()
    with pytest.raises(ValueError, match="does not exist"):
        apply_delta(old, routes)
    mislabelled = pb.Delta(version="v2", base_version="v1")
    wrong = mislabelled.upserts.add()
    wrong.key.CopyFrom(pb.ResourceKey(kind=pb.ResourceKey.ENDPOINTS, name="a/s/80"))
    wrong.route_host.SetInParent()
    with pytest.raises(ValueError, match="carries body"):
        apply_delta(old, mislabelled)


def test_a_snapshot_without_scope_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="scope"):
        decode_snapshot(pb.Snapshot(version="sha256:x"))


def test_a_backend_protocol_the_client_does_not_know_is_refused():
    bodies = _bodies(CASES / "gateway" / "grpcroute-exact-method-matching.in.yaml")[1]
    message = encode_snapshot(compile(build_state(bodies), SharedPool()).snapshot)
    [listener] = message.gateways[30000].by_hostname.values()
    rule = listener.hosts["*"].rules[0]
    assert (rule.action.grpc, rule.action.backends[0].protocol) == (True, pb.BACKEND_PROTOCOL_H2C)
    rule.action.backends[0].protocol = 7  # a value of a later server
    with pytest.raises(ValueError, match="backend protocol 7 is not HTTP1 or H2C"):
        decode_snapshot(message)


def test_a_snapshot_without_grpc_keeps_its_wire_form():
    """Neither field is on the wire for an HTTP rule and backend: a client from before them
    gets the bytes it always got."""
    bodies = _bodies(CASES / "gateway" / "httproute-match-headers.in.yaml")[1]
    message = encode_snapshot(compile(build_state(bodies), SharedPool()).snapshot)
    [listener] = message.gateways[30000].by_hostname.values()
    rule = listener.hosts["*"].rules[0]
    assert "grpc" not in {field.name for field, _ in rule.action.ListFields()}
    assert "protocol" not in {field.name for field, _ in rule.action.backends[0].ListFields()}
