"""Properties of the pure compiler (docs/architecture.md, "Tests"): totality,
order-insensitivity, purity, referential closure, the JSON codec and content hash, and
incremental = batch.

Every property runs on small worlds from small alphabets (``strategies.py``), so that the
interesting collisions (two Ingresses on one host and path, a Service and its slices, duplicate
keys) happen in most examples.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from hypothesis import example, given
from hypothesis import strategies as st
from pyrsistent import pmap, pvector

from coxswain.compile import ClusterState, SharedPool, build_state, compile
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.state import Deleted, Upserted, apply
from coxswain.compile.snapshot import (
    Backend,
    Endpoint,
    PathMatch,
    PathRule,
    RouteRef,
    VirtualHost,
)
from coxswain.compile.snapshot_json import (
    dump_snapshot,
    seal,
    snapshot_from_data,
    snapshot_to_data,
)

from .strategies import (
    FOREIGN_CONTROLLER,
    any_body,
    event_keys,
    ingresses,
    malformed_worlds,
    with_duplicates,
    worlds,
)

if TYPE_CHECKING:
    from coxswain.compile import CompileResult, Snapshot

pytestmark = pytest.mark.property

SCOPE = SharedPool()


def _compile(bodies: list[Any]) -> tuple[ClusterState, CompileResult]:
    state = build_state(bodies)
    return state, compile(state, SCOPE)


def _canonical(bodies: list[Any]) -> str:
    return json.dumps(bodies, sort_keys=True)


def _rules(snapshot: Snapshot) -> list[PathRule]:
    return [
        rule
        for vhost in snapshot.ingress.hosts.values()
        for rule in (*vhost.paths, *((vhost.default,) if vhost.default else ()))
    ]


# --- totality ------------------------------------------------------------------------------------


# Found by this property (see the reasons): each is the smallest input that makes it fail.
_SURROGATE_IN_STRING_DATA = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "x", "namespace": "a"},
    "type": "kubernetes.io/tls",
    "stringData": {"tls.crt": "\ud800", "tls.key": "k"},
}
_LONG_DIGIT_TARGET_PORT = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "x", "namespace": "a"},
    "spec": {"ports": [{"port": 80, "targetPort": "9" * 4400}]},
}


@example(bodies=[_SURROGATE_IN_STRING_DATA])
@example(bodies=[_LONG_DIGIT_TARGET_PORT])
@given(malformed_worlds())
def test_compile_is_total(bodies: list[Any]) -> None:
    """No body makes build_state or compile raise (malformed Ingresses, IngressClasses, Services,
    EndpointSlices and Secrets, next to well-formed ones); the snapshot encodes as strict JSON
    and reads back; the input is left untouched; the reversed input gives the same output."""
    before = _canonical(bodies)
    _, result = _compile(bodies)
    text = dump_snapshot(result.snapshot)
    data_back = json.loads(text)
    json.dumps(data_back, allow_nan=False)
    assert snapshot_from_data(data_back) == result.snapshot
    assert all(str(d) for d in result.diagnostics)
    assert _canonical(bodies) == before
    _, reversed_result = _compile(bodies[::-1])
    assert dump_snapshot(reversed_result.snapshot) == text
    assert reversed_result.diagnostics == result.diagnostics


# --- determinism ---------------------------------------------------------------------------------


@given(data=st.data())
def test_any_permutation_gives_byte_identical_output(data: st.DataObject) -> None:
    """The snapshot text and the diagnostics do not depend on input order, duplicates included."""
    bodies = data.draw(with_duplicates(worlds()), label="bodies")
    shuffled = data.draw(st.permutations(bodies), label="shuffled")
    state, result = _compile(bodies)
    shuffled_state, shuffled_result = _compile(shuffled)
    assert shuffled_state == state
    assert dump_snapshot(shuffled_result.snapshot) == dump_snapshot(result.snapshot)
    assert [str(d) for d in shuffled_result.diagnostics] == [str(d) for d in result.diagnostics]
    assert shuffled_result == result


@given(with_duplicates(worlds()))
def test_compile_is_pure(bodies: list[Any]) -> None:
    """Compiling one state twice gives equal results, and the state (and input) is unchanged."""
    before = _canonical(bodies)
    state = build_state(bodies)
    fingerprint = hash(state)
    first = compile(state, SCOPE)
    second = compile(state, SCOPE)
    assert first == second
    assert dump_snapshot(first.snapshot) == dump_snapshot(second.snapshot)
    assert hash(state) == fingerprint
    assert state == build_state(bodies)
    assert _canonical(bodies) == before


# --- referential closure -------------------------------------------------------------------------


def _pem_pair_matches(chain_pem: str, key_pem: str) -> bool:
    chain = x509.load_pem_x509_certificates(chain_pem.encode())
    key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    der, spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    leaf = chain[0].public_key().public_bytes(der, spki)
    return key.public_key().public_bytes(der, spki) == leaf


@given(with_duplicates(worlds()))
def test_references_are_closed(bodies: list[Any]) -> None:
    """Every valid backend has its endpoints entry and every entry belongs to a valid backend;
    every rule comes from an Ingress of the state; every TLS entry is a usable key pair."""
    state, result = _compile(bodies)
    snapshot = result.snapshot
    rules = _rules(snapshot)
    wanted = {rule.backend.endpoints_key for rule in rules if rule.backend.valid}
    assert set(snapshot.endpoints) == wanted
    for rule in rules:
        assert rule.route.kind == "Ingress"
        assert any(
            (key.namespace, key.name) == (rule.route.namespace, rule.route.name)
            for key in state.ingresses
        )
    for host, vhost in snapshot.ingress.hosts.items():
        assert vhost.host == host
    assert set(snapshot.tls) <= {snapshot.ingress.https_port}
    for by_host in snapshot.tls.values():
        for host, certificate in by_host.items():
            assert host == host.lower()
            assert _pem_pair_matches(certificate.chain_pem, certificate.key_pem)


# --- scope isolation ------------------------------------------------------------------------------

_ELSEWHERE = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "IngressClass",
    "metadata": {"name": "elsewhere"},
    "spec": {"controller": FOREIGN_CONTROLLER},
}


def _foreign(body: dict[str, Any]) -> dict[str, Any]:
    """The Ingress renamed out of the world's way and given to another controller's class."""
    metadata = {**body["metadata"], "name": f"noise-{body['metadata']['name']}"}
    metadata.pop("annotations", None)
    return {**body, "metadata": metadata, "spec": {**body["spec"], "ingressClassName": "elsewhere"}}


_NOISE = st.lists(
    ingresses().map(_foreign),
    min_size=1,
    max_size=3,
    unique_by=lambda body: (body["metadata"]["namespace"], body["metadata"]["name"]),
)


@given(worlds(), _NOISE)
def test_another_controllers_ingresses_change_nothing(
    bodies: list[Any], noise: list[dict[str, Any]]
) -> None:
    """Ingresses of another controller's class (sharing hosts, paths, Services and Secrets with
    ours) leave the snapshot and the diagnostics as they were."""
    _, alone = _compile(bodies)
    _, noisy = _compile([*bodies, _ELSEWHERE, *noise])
    assert dump_snapshot(noisy.snapshot) == dump_snapshot(alone.snapshot)
    assert noisy.diagnostics == alone.diagnostics


# --- JSON form and content hash ------------------------------------------------------------------


@given(with_duplicates(worlds()))
def test_json_form_round_trips(bodies: list[Any]) -> None:
    """The JSON form reads back to an equal snapshot; sealing again keeps the version."""
    snapshot = _compile(bodies)[1].snapshot
    assert snapshot_from_data(snapshot_to_data(snapshot)) == snapshot
    assert snapshot_from_data(json.loads(dump_snapshot(snapshot))) == snapshot
    assert seal(snapshot) == snapshot
    assert seal(replace(snapshot, version="")).version == snapshot.version
    assert snapshot.version.startswith("sha256:")


def _content(snapshot: Snapshot) -> dict[str, Any]:
    data = snapshot_to_data(snapshot)
    del data["version"]
    return data


@given(worlds(max_ingresses=2), worlds(max_ingresses=2))
def test_version_changes_exactly_when_content_changes(a: list[Any], b: list[Any]) -> None:
    """Two compiles have the same version if and only if their content is the same."""
    first, second = _compile(a)[1].snapshot, _compile(b)[1].snapshot
    assert (first.version == second.version) == (_content(first) == _content(second))


_EDITS = (
    "http_port",
    "https_port",
    "add_host",
    "add_endpoint",
    "flip_redirect",
    "backend_port",
    "rule_name",
)


@given(worlds(), st.sampled_from(_EDITS))
def test_any_edit_changes_the_version(bodies: list[Any], edit: str) -> None:
    """Any change of content, however small, gives another version."""
    snapshot = _compile(bodies)[1].snapshot
    ingress = snapshot.ingress
    rules = [(host, vhost) for host, vhost in sorted(ingress.hosts.items()) if vhost.paths]
    backend = Backend(namespace="a", service="x", port=80)
    if edit == "http_port":
        edited = replace(snapshot, ingress=replace(ingress, http_port=ingress.http_port + 1))
    elif edit == "https_port":
        edited = replace(snapshot, ingress=replace(ingress, https_port=ingress.https_port + 1))
    elif edit == "add_host":
        rule = PathRule(
            path="/",
            match=PathMatch.PREFIX,
            backend=backend,
            route=RouteRef("Ingress", "a", "x", "spec.defaultBackend"),
        )
        hosts = ingress.hosts.set("new.test", VirtualHost(host="new.test", default=rule))
        edited = replace(snapshot, ingress=replace(ingress, hosts=hosts))
    elif edit == "add_endpoint":
        endpoints = snapshot.endpoints.set(
            "a/new/80", pvector([*snapshot.endpoints.get("a/new/80", ()), Endpoint("10.9.9.9", 1)])
        )
        edited = replace(snapshot, endpoints=endpoints)
    elif rules:
        host, vhost = rules[0]
        rule = vhost.paths[0]
        if edit == "flip_redirect":
            rule = replace(rule, tls_redirect=not rule.tls_redirect)
        elif edit == "backend_port":
            rule = replace(rule, backend=replace(rule.backend, port=rule.backend.port + 1))
        else:
            rule = replace(rule, route=replace(rule.route, name=rule.route.name + "-2"))
        vhost = replace(vhost, paths=vhost.paths.set(0, rule))
        edited = replace(snapshot, ingress=replace(ingress, hosts=ingress.hosts.set(host, vhost)))
    else:
        edited = replace(snapshot, tls=pmap({1: pmap()}) if not snapshot.tls else pmap())
    assert _content(edited) != _content(snapshot)
    assert seal(edited).version != snapshot.version


# --- incremental = batch -------------------------------------------------------------------------


_EVENTS = st.lists(
    st.one_of(
        any_body().map(lambda body: ("upsert", body)),
        event_keys().map(lambda key: ("delete", key)),
    ),
    max_size=16,
)


@given(_EVENTS)
def test_events_reduce_to_the_batch_state(events: list[tuple[str, Any]]) -> None:
    """Applying Upserted/Deleted events to an empty state equals building the final bodies."""
    state = ClusterState()
    final: dict[Any, Any] = {}
    for what, item in events:
        if what == "delete":
            state = apply(state, Deleted(item))
            final.pop(item, None)
            continue
        decoded = decode_object(item)
        assert isinstance(decoded, Decoded)  # well-formed bodies all decode
        state = apply(state, Upserted(decoded.obj))
        final[decoded.obj.meta.key] = item
    batch = build_state(list(final.values()))
    assert state == batch
    incremental, rebuilt = compile(state, SCOPE), compile(batch, SCOPE)
    assert dump_snapshot(incremental.snapshot) == dump_snapshot(rebuilt.snapshot)
    assert incremental.diagnostics == rebuilt.diagnostics
