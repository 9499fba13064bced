"""Ingress fragments reused by a memo give the table a fresh compile gives, as a property.

Random sequences of Ingress, Secret, Service and IngressClass edits and deletions, with the
annotations whose fragments read Secrets, certificates or other Ingresses (basic auth, backend
TLS, canaries, passthrough, aliases, regex paths) and with the installation's defaults switched
on and off between steps: after each step the shared pool compiled through one ``CompileMemo``
kept across the sequence (its Ingress fragments in ``compile.ingress.memo``) must be
byte-identical to ``compile`` on the same state (docs/architecture.md, "Rules of the core").
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coxswain.compile import CompileConfig, SharedPool, build_state, compile
from coxswain.compile.config import IngressDefaults
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.state import ClusterState, Deleted, Upserted, apply
from coxswain.compile.snapshot_json import dump_snapshot

from .strategies import OUR_CONTROLLER, ingress_classes, ingresses, secrets, services

if TYPE_CHECKING:
    from coxswain.compile.model.keys import ObjectKey

pytestmark = pytest.mark.property

_PREFIX = "nginx.ingress.kubernetes.io/"
_ANNOTATIONS = st.sampled_from(
    (
        {"canary": "true"},
        {"canary": "true", "canary-weight": "30"},
        {"auth-type": "basic", "auth-secret": "x"},
        {"backend-protocol": "HTTPS", "proxy-ssl-secret": "a/y"},
        {"ssl-passthrough": "true"},
        {"server-alias": "alias.example.com"},
        {"from-to-www-redirect": "true"},
        {"use-regex": "true"},
        {"rewrite-target": "/$1"},
        {"force-ssl-redirect": "true"},
        {"proxy-body-size": "1m"},
        {"ssl-redirect": "false"},
    )
)
_CONFIGS = (
    CompileConfig(),
    CompileConfig(
        ingress_defaults=IngressDefaults(body_size=1 << 20, read_timeout=120, ssl_redirect=False)
    ),
)


@st.composite
def _annotated_ingresses(draw: st.DrawFn) -> dict[str, Any]:
    body = copy.deepcopy(draw(ingresses(mostly_ours=True)))
    for extra in draw(st.lists(_ANNOTATIONS, max_size=2)):
        annotations = body["metadata"].setdefault("annotations", {})
        annotations.update({_PREFIX + k: v for k, v in extra.items()})
    return body


_bodies = st.one_of(
    _annotated_ingresses(),
    _annotated_ingresses(),
    secrets(),
    services(),
    services(),
    ingress_classes(),
)
_OURS = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "IngressClass",
    "metadata": {"name": "ours"},
    "spec": {"controller": OUR_CONTROLLER},
}
"""Our class, present from the start, so that most Ingresses drawn are ours."""
_events = st.one_of(
    _bodies.map(lambda b: ("upsert", b)),
    st.integers(0, 1_000).map(lambda i: ("delete", i)),
    st.integers(0, len(_CONFIGS) - 1).map(lambda i: ("config", i)),
)


def _step(
    state: ClusterState, bodies: dict[ObjectKey, dict[str, Any]], kind: str, value: Any
) -> ClusterState:
    if kind == "upsert":
        decoded = decode_object(value)
        if not isinstance(decoded, Decoded):
            return state
        bodies[decoded.obj.meta.key] = value
        return apply(state, Upserted(decoded.obj))
    if not bodies:
        return state
    key = sorted(bodies)[value % len(bodies)]
    del bodies[key]
    return apply(state, Deleted(key))


@settings(max_examples=60)
@given(
    world=st.lists(_bodies, min_size=4, max_size=12),
    events=st.lists(_events, min_size=1, max_size=10),
)
def test_ingress_fragments_reused_equal_a_fresh_compile(
    world: list[dict[str, Any]], events: list[tuple[str, Any]]
) -> None:
    bodies: dict[ObjectKey, dict[str, Any]] = {}
    state = build_state([])
    for body in [_OURS, *world]:
        state = _step(state, bodies, "upsert", body)
    memo = CompileMemo()
    config = _CONFIGS[0]
    for kind, value in [("config", 0), *events]:
        if kind == "config":
            config = _CONFIGS[value]
        else:
            state = _step(state, bodies, kind, value)
        fresh = compile(state, SharedPool(), config)
        incremental = memo.compile(state, SharedPool(), config)
        assert dump_snapshot(incremental.snapshot) == dump_snapshot(fresh.snapshot)
        assert incremental.snapshot.version == fresh.snapshot.version
        assert incremental.diagnostics == fresh.diagnostics
