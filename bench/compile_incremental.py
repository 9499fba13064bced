"""Benchmark: incremental compilation (``compile.memo``) — one change, the round it costs.

Run from the repository root::

    .venv/bin/python bench/compile_incremental.py --gateways 100 --edits 20
    .venv/bin/python bench/compile_incremental.py --quick   # tiny smoke run, for tests
    .venv/bin/python bench/compile_incremental.py --gateways 1000 --clock cpu  # CPU time

The world is ``compile_scopes.workload`` (Gateways of 10 HTTPRoutes of 10 rules, half of them
dedicated, a quarter with a ready proxy). One controller round is timed as the controller runs
it (``shell.controller``, minus the API calls): the memo's cluster-wide analysis, the grants,
every granted scope's compile through the memo, status and provision; the memo is told the
changed key, as the controller's cluster view tells it. After a cold round:

1. one HTTPRoute edited (its first path changed), ``--edits`` times, a different route each
   time: median, p99 and max of the whole round, of the time until every scope's snapshot is
   ready to publish, and of the time until the status to write is known (from the event's
   ``apply``); how many scopes were compiled and reused;
2. one EndpointSlice changed (an endpoint address), as many times: the same figures.

Every incremental snapshot is checked against ``compile`` from scratch once at the end (the
property test checks that at every step; this checks the big world). Targets (docs/benchmarks.md):
edit published p99 < 100 ms, its status p99 < 250 ms; EndpointSlice published p99 < 50 ms.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import api_objects as objects
from compile_scopes import TLS_SERIAL, workload

from coxswain.compile.api import compile as compile_state
from coxswain.compile.config import CompileConfig
from coxswain.compile.grants import subscription_grants
from coxswain.compile.memo import CompileMemo
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.state import ClusterState, Upserted, apply, build_state
from coxswain.compile.scope import SharedPool

Clock = Callable[[], float]
"""What rounds are timed with: wall time, or with ``--clock cpu`` this process's CPU time (the
figure a machine shared with other jobs can still give)."""


def _round(
    memo: CompileMemo, state: ClusterState, config: CompileConfig, clock: Clock
) -> tuple[float, float]:
    """One controller round; the seconds (from the call) when every scope's snapshot was
    ready to publish, and when the status to write was known."""
    began = clock()
    model = memo.analyse(state, config)
    grants = memo.grants(state, config, model)
    scopes = sorted({SharedPool(), *grants.values()}, key=str)
    for scope in scopes:
        memo.compile(state, scope, config)
    memo.forget(scopes)
    published = clock() - began
    memo.status(state, config)
    status = clock() - began
    memo.provision(state, config)
    return published, status


def _upserted(body: dict[str, Any]) -> Upserted:
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    return Upserted(decoded.obj)


def _timed(
    memo: CompileMemo,
    state: ClusterState,
    config: CompileConfig,
    events: list[Upserted],
    clock: Clock,
) -> tuple[ClusterState, dict[str, list[float]], int, int]:
    """Each event applied and its round run, the memo told the changed key as the controller
    tells it (``shell.control.cluster_view``); the round's, publish's and status's seconds."""
    times: dict[str, list[float]] = {"round": [], "published": [], "status": []}
    compiled, reused = memo.compiled, memo.reused
    for event in events:
        began = clock()
        base, state = state, apply(state, event)
        memo.changed(base, state, {event.obj.meta.key})
        applied = clock() - began
        published, status = _round(memo, state, config, clock)
        times["round"].append(clock() - began)
        times["published"].append(applied + published)
        times["status"].append(applied + status)
    return state, times, memo.compiled - compiled, memo.reused - reused


def _spread(times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"median {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
        f"max {ordered[-1] * 1000:.1f} ms"
    )


def _report(what: str, times: dict[str, list[float]], compiled: int, reused: int) -> None:
    print(f"{what}: round {_spread(times['round'])}; scopes compiled {compiled}, reused {reused}")
    print(f"  every scope published: {_spread(times['published'])}")
    print(f"  status known (to write): {_spread(times['status'])}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateways", type=int, default=100)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run, for tests")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.quick:
        args.gateways, args.edits = 4, 2
    load = workload(args.gateways, objects.make_tls_data(TLS_SERIAL))
    bodies = load["bodies"]
    config = CompileConfig()
    state = build_state(bodies)
    memo = CompileMemo()
    began = time.perf_counter()
    _round(memo, state, config, clock)
    cold = time.perf_counter() - began
    gc.freeze()  # as the controller does after its first round (shell.controller)
    print(
        f"{load['gateways']} Gateways, {load['routes']} HTTPRoutes, {load['rules']} rules, "
        f"{load['services']} Services; cold round {cold:.2f} s ({memo.compiled} scopes)"
    )
    routes = [b for b in bodies if b["kind"] == "HTTPRoute"]
    edits = []
    for i in range(args.edits):
        body = copy.deepcopy(routes[(i * 7919) % len(routes)])
        body["spec"]["rules"][0]["matches"][0]["path"]["value"] = f"/edited-{i}"
        edits.append(_upserted(body))
    state, times, compiled, reused = _timed(memo, state, config, edits, clock)
    _report("HTTPRoute edit", times, compiled, reused)
    slices = [b for b in bodies if b["kind"] == "EndpointSlice"]
    changes = []
    for i in range(args.edits):
        body = copy.deepcopy(slices[(i * 7919) % len(slices)])
        body["endpoints"][0]["addresses"] = [f"10.250.{i // 250}.{i % 250}"]
        changes.append(_upserted(body))
    state, times, compiled, reused = _timed(memo, state, config, changes, clock)
    _report("EndpointSlice change", times, compiled, reused)
    grants = subscription_grants(state, config)
    for scope in sorted({SharedPool(), *grants.values()}, key=str):
        fresh = compile_state(state, scope, config)
        if memo.compile(state, scope, config).snapshot.version != fresh.snapshot.version:
            raise SystemExit(f"FAIL: {scope} differs from a compile from scratch")
    print("every scope equals a compile from scratch")
    print(
        "Targets (docs/benchmarks.md): edit published p99 < 100 ms, status p99 < 250 ms; "
        "EndpointSlice published p99 < 50 ms"
    )


if __name__ == "__main__":
    main()
