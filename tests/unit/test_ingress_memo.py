"""Ingress fragments are reused by identity (``compile.ingress.memo``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coxswain.compile import CompileConfig, SharedPool, build_state, compile
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.state import ClusterState, Upserted, apply
from coxswain.compile.scope import GatewayScope
from coxswain.compile.snapshot_json import dump_snapshot

if TYPE_CHECKING:
    from coxswain.compile.snapshot import Snapshot

CONFIG = CompileConfig()


def _ingress(name: str, service: str = "web") -> dict[str, Any]:
    backend = {"service": {"name": service, "port": {"number": 80}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "a"},
        "spec": {
            "ingressClassName": "ours",
            "rules": [
                {
                    "host": f"{name}.example.com",
                    "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
                }
            ],
        },
    }


def _service(name: str, port: int = 80) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "a"},
        "spec": {"ports": [{"port": port}]},
    }


_CLASS = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "IngressClass",
    "metadata": {"name": "ours"},
    "spec": {"controller": CONFIG.ingress_controller},
}


def _upserted(state: ClusterState, body: dict[str, Any]) -> ClusterState:
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    return apply(state, Upserted(decoded.obj))


def _same_as_fresh(memo: CompileMemo, state: ClusterState) -> Snapshot:
    got = memo.compile(state, SharedPool(), CONFIG)
    fresh = compile(state, SharedPool(), CONFIG)
    assert dump_snapshot(got.snapshot) == dump_snapshot(fresh.snapshot)
    assert got.diagnostics == fresh.diagnostics
    return got.snapshot


def test_only_a_new_or_changed_ingress_and_those_reading_a_changed_service_are_computed():
    state = build_state(
        [_CLASS, _service("web"), _service("api"), *(_ingress(f"r{i}") for i in range(5))]
    )
    state = _upserted(state, _ingress("r-api", service="api"))
    memo = CompileMemo()
    before = _same_as_fresh(memo, state).ingress.hosts
    assert (memo.ingresses.computed, memo.ingresses.reused) == (6, 0)

    state = _upserted(state, _ingress("new"))  # a new Ingress: only it is computed
    after = _same_as_fresh(memo, state).ingress.hosts
    assert (memo.ingresses.computed, memo.ingresses.reused) == (7, 6)
    assert all(after[host] is vhost for host, vhost in before.items())  # hashed pieces kept

    state = _upserted(state, _service("api", port=81))  # only the Ingress reading it
    _same_as_fresh(memo, state)
    assert (memo.ingresses.computed, memo.ingresses.reused) == (8, 12)

    state = _upserted(state, _ingress("r0", service="api"))  # an edit: that Ingress only
    _same_as_fresh(memo, state)
    assert (memo.ingresses.computed, memo.ingresses.reused) == (9, 18)


def test_a_gateway_s_scope_compiled_between_keeps_the_shared_pool_s_fragments_and_texts():
    state = build_state([_CLASS, _service("web"), *(_ingress(f"r{i}") for i in range(3))])
    memo = CompileMemo()
    _same_as_fresh(memo, state)
    texts = dict(memo.ingresses.texts)
    memo.compile(state, GatewayScope("a", "edge"), CONFIG)  # a scope without Ingresses
    assert memo.ingresses.texts == texts

    state = _upserted(state, _ingress("r0", service="api"))  # an edit: that Ingress only
    _same_as_fresh(memo, state)
    assert (memo.ingresses.computed, memo.ingresses.reused) == (4, 2)
