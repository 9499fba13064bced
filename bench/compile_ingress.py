"""Benchmark: Ingress compile time and memory, and per-request route selection.

Run from the repository root::

    .venv/bin/python bench/compile_ingress.py           # full run (`make bench`)
    .venv/bin/python bench/compile_ingress.py --quick   # tiny smoke run, for tests

What it measures (results go in docs/benchmarks.md):

1. For 100, 1,000 and 10,000 Ingress paths: ``build_state`` from raw API dicts (decoding) and
   ``compile(state, SharedPool())``, separately; the peak memory traced by ``tracemalloc``
   during each; the process RSS after building and compiling. Each size runs in a fresh
   subprocess, so RSS figures do not carry over from one size to the next.
2. ``route.select`` on ``build_table(snapshot)`` at 10 and at 10,000 paths, over a fixed mix of
   requests (exact hits, deep prefix hits, wildcard-host hits, TLS redirects, unknown hosts,
   unmatched paths); microseconds per request. Both tables live in one process and are timed
   in interleaved slices, with a control: the big table answering the small table's requests.

Timings are wall-clock (``time.perf_counter``) with the garbage collector enabled, as in the
controller; the median of several runs decides pass or fail, the best is shown beside it.
The compile also reports the time spent in the collector, its CPU time, and its time after
``gc.freeze()``: a full collection walks every live object, inputs and state included.
``tracemalloc`` runs are separate from timed runs (tracing slows Python down several times).
The script prints PASS/FAIL per target and exits 0 whatever the figures: benchmarks report,
they do not gate. It exits non-zero only when it breaks, for instance when the generated
workload does not compile to the expected snapshot.
"""

from __future__ import annotations

import functools
import gc
import statistics
import sys
import time
from collections import Counter
from typing import Any

import api_objects as objects
import harness

from coxswain.compile.api import compile as compile_state
from coxswain.compile.model.state import build_state
from coxswain.compile.scope import SharedPool
from coxswain.route.request import RequestHead
from coxswain.route.select import select
from coxswain.route.table import build_table

PATHS_PER_HOST = 10
SELECT_PATHS_PER_HOST = 5  # so that the 10-path table still has an exact and a wildcard host
TLS_SERIAL = 1000  # of the one certificate every Secret holds

# Targets.
COMPILE_TARGET_S = 1.0  # compile of 10,000 paths
MEMORY_TARGET_MB = 100.0  # tracemalloc peak during the compile of 10,000 paths
SELECT_TARGET_US = 20.0  # per request, at 10 and at 10,000 paths
SELECT_SAME_RATIO = 1.25  # "the same": 10,000-path figure within 25% of the 10-path figure

# Host kinds cycle with the host index: 0 → exact with TLS, 1 → wildcard, 2-4 → exact, no TLS.
# The one certificate names *.example.com, which covers every exact host h<i>.example.com.
_HOST_CYCLE = 5

# Per-host paths: (pathType, path). The first SELECT_PATHS_PER_HOST are the ones the request
# mix relies on; Prefix paths hold several elements so that a deep request walks several
# element prefixes before it hits.
_TEMPLATE: tuple[tuple[str, str], ...] = (
    ("Exact", "/healthz"),
    ("Prefix", "/api/v1/users"),
    ("Prefix", "/static"),
    ("Exact", "/api/v1/login"),
    ("ImplementationSpecific", "/docs"),
    ("Prefix", "/api"),
    ("Prefix", "/api/v2/"),
    ("Exact", "/metrics"),
    ("Prefix", "/admin/console"),
    ("Prefix", "/assets/img/large"),
)


# --- workload -----------------------------------------------------------------------------------


def _host_name(index: int) -> str:
    return f"*.w{index}.example.com" if index % _HOST_CYCLE == 1 else f"h{index}.example.com"


def _has_tls(index: int) -> bool:
    return index % _HOST_CYCLE == 0


def workload(paths: int, paths_per_host: int, tls_data: dict[str, str]) -> dict[str, Any]:
    """Raw API bodies for ``paths`` Ingress paths, and a description of what they hold.

    Hosts carry ``paths_per_host`` paths each; Ingresses carry one host, every third one two.
    Every path has its own Service (port 80 named ``http``, target 8080) and EndpointSlice
    (3 ready endpoints, 1 not ready); a third of the backends name the port by name. Every
    fifth host has TLS through a Secret of its own, all Secrets holding the same certificate.
    Namespaces: 10 to 50, Ingresses spread over them round-robin.
    """
    if paths % paths_per_host:
        raise ValueError(f"{paths} paths is not a multiple of {paths_per_host} paths per host")
    hosts = paths // paths_per_host
    namespaces = [f"team-{n:02d}" for n in range(max(1, min(50, max(10, hosts // 20), hosts)))]
    bodies: list[dict[str, Any]] = [objects.default_ingress_class()]
    bodies.extend(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces
    )
    # Group hosts into Ingresses of 1, 1, 2 hosts (cycling).
    groups: list[list[int]] = []
    index, size_cycle = 0, (1, 1, 2)
    while index < hosts:
        size = size_cycle[len(groups) % len(size_cycle)]
        groups.append(list(range(index, min(hosts, index + size))))
        index += size
    counts: Counter[str] = Counter()
    for number, group in enumerate(groups):
        namespace = namespaces[number % len(namespaces)]
        name = f"ing-{number}"
        rules = []
        tls_hosts = []
        for host_index in group:
            host = _host_name(host_index)
            if _has_tls(host_index):
                tls_hosts.append(host)
            http_paths = []
            for slot, (path_type, path) in enumerate(_TEMPLATE[:paths_per_host]):
                service = f"svc-{host_index}-{slot}"
                port = {"name": "http"} if slot % 3 == 2 else {"number": 80}
                http_paths.append(
                    {
                        "path": path,
                        "pathType": path_type,
                        "backend": {"service": {"name": service, "port": port}},
                    }
                )
                seed = host_index * 100 + slot
                cluster_ip = f"172.20.{(seed >> 8) % 256}.{seed % 256}"
                bodies.extend(objects.service_bodies(namespace, service, seed, cluster_ip))
                counts["Service"] += 1
                counts["EndpointSlice"] += 1
            rules.append({"host": host, "http": {"paths": http_paths}})
        spec: dict[str, Any] = {"rules": rules}
        if number % 4 != 3:  # every fourth Ingress relies on the default class
            spec["ingressClassName"] = "coxswain"
        if tls_hosts:
            secret = f"{name}-tls"
            spec["tls"] = [{"hosts": tls_hosts, "secretName": secret}]
            bodies.append(objects.tls_secret(namespace, secret, tls_data))
            counts["Secret"] += 1
        bodies.append(
            objects.api_object(
                "networking.k8s.io/v1",
                "Ingress",
                namespace,
                name,
                spec,
                uid=f"uid-{number}",
                created=number,
            )
        )
        counts["Ingress"] += 1
    return {
        "bodies": bodies,
        "paths": paths,
        "hosts": hosts,
        "tls_hosts": sum(1 for h in range(hosts) if _has_tls(h)),
        "ingresses": counts["Ingress"],
        "namespaces": len(namespaces),
        "services": counts["Service"],
        "slices": counts["EndpointSlice"],
        "secrets": counts["Secret"],
        "objects": len(bodies),
    }


def _check_compiled(load: dict[str, Any], result: Any) -> None:
    """Fail loudly unless the snapshot holds exactly what the workload describes."""
    snapshot = result.snapshot
    hosts = snapshot.ingress.hosts
    served = sum(len(v.paths) for v in hosts.values())
    tls = snapshot.tls.get(snapshot.ingress.https_port, {})
    problems = []
    if len(hosts) != load["hosts"]:
        problems.append(f"{len(hosts)} hosts, expected {load['hosts']}")
    if served != load["paths"]:
        problems.append(f"{served} paths, expected {load['paths']}")
    if len(tls) != load["tls_hosts"]:
        problems.append(f"{len(tls)} TLS hosts, expected {load['tls_hosts']}")
    if len(snapshot.endpoints) != load["services"]:
        problems.append(f"{len(snapshot.endpoints)} endpoint keys, expected {load['services']}")
    if any(len(e) != objects.ENDPOINTS_READY for e in snapshot.endpoints.values()):
        problems.append(f"an endpoint list is not {objects.ENDPOINTS_READY} long")
    if any(not r.backend.valid for v in hosts.values() for r in v.paths):
        problems.append("an invalid backend")
    reasons = Counter(d.reason for d in result.diagnostics)
    if reasons:
        problems.append(f"unexpected diagnostics {dict(reasons)}")
    harness.stop_unless_empty("workload did not compile as expected", problems)


# --- workers (each run in its own process) ------------------------------------------------------


def worker_compile(paths: int, build_repeat: int, compile_repeat: int) -> dict[str, Any]:
    rss_start = harness.rss_bytes()
    load = workload(paths, PATHS_PER_HOST, objects.make_tls_data(TLS_SERIAL))
    figures = harness.build_and_compile(
        load.pop("bodies"),
        build_state,
        lambda state: compile_state(state, SharedPool()),
        lambda result: _check_compiled(load, result),
        harness.CompileRepeats(build_repeat, compile_repeat, compile_repeat, trace_build=True),
    )
    return {**load, **figures, "rss_start_bytes": rss_start}


_MIX = (  # request kind, share of the mix
    ("exact", 25),
    ("deep_prefix", 25),
    ("wildcard", 15),
    ("redirect", 10),
    ("404_host", 15),
    ("404_path", 10),
)


def requests(hosts: int, count: int) -> list[tuple[str, RequestHead]]:
    """``count`` distinct requests in the ``_MIX`` proportions, spread over every host."""
    exact = [h for h in range(hosts) if h % _HOST_CYCLE != 1]
    tls = [h for h in range(hosts) if _has_tls(h)]
    wild = [h for h in range(hosts) if h % _HOST_CYCLE == 1]
    kinds = [kind for kind, share in _MIX for _ in range(share)]
    made: list[tuple[str, RequestHead]] = []
    for n in range(count):
        kind = kinds[(n * 37) % len(kinds)]  # interleave kinds
        host_index = exact[(n * 7919) % len(exact)]
        secure = _has_tls(host_index)
        host = _host_name(host_index)
        port = 443 if secure else 80
        header = host if n % 4 else f"{host}:{port}"
        if kind == "exact":
            target = "/healthz" if n % 2 else f"/api/v1/login?next=/home/{n}"
        elif kind == "deep_prefix":
            target = f"/api/v1/users/{n}/orders/{n % 97}/items/{n % 13}?page=2"
        elif kind == "wildcard":
            parent = _host_name(wild[(n * 7919) % len(wild)])[2:]
            header, target, secure, port = f"edge-{n}.{parent}", "/static/css/site.css", False, 80
        elif kind == "redirect":
            host = _host_name(tls[(n * 7919) % len(tls)])
            header, target, secure, port = host, f"/docs/guide/{n}", False, 80
        elif kind == "404_host":
            header, target, secure, port = f"unknown-{n}.example.net", "/api/v1/users/1", False, 80
        else:
            target = f"/nothing/here/{n}/at/all"
        head = RequestHead(
            port=port,
            method="GET",
            target=target,
            host=header,
            tls=secure,
            sni=header.split(":")[0] if secure else None,
        )
        made.append((kind, head))
    return made


_EXPECTED = {  # kind → (status, matched path); status None means forwarded
    "exact": (None, None),
    "deep_prefix": (None, "/api/v1/users"),
    "wildcard": (None, "/static"),
    "redirect": (308, None),
    "404_host": (404, None),
    "404_path": (404, None),
}


def _select_table(paths: int) -> tuple[Any, int, float]:
    load = workload(paths, SELECT_PATHS_PER_HOST, objects.make_tls_data(TLS_SERIAL))
    result = compile_state(build_state(load.pop("bodies")), SharedPool())
    _check_compiled(load, result)
    times, _, table = harness.timed(lambda: build_table(result.snapshot), 3)
    return table, load["hosts"], statistics.median(times)


def _check_requests(table: Any, mix: list[tuple[str, RequestHead]]) -> None:
    """The workload must do what it claims before it is timed."""
    for kind, head in mix:
        decision = select(table, head)
        status, path = _EXPECTED[kind]
        if decision.status != status or (
            path is not None and f"path {path!r}" not in decision.reason
        ):
            raise SystemExit(f"request {kind} {head} gave {decision}, expected {status} {path}")


def worker_select(small: int, big: int, count: int, slices: int, rounds: int) -> dict[str, Any]:
    """Both tables in one process, timed in interleaved slices so that drift hits both alike.

    Configurations: the small table with its requests; the big table with requests spread over
    all its hosts; and a control, the big table with the small table's requests (its first two
    hosts), which separates the size of the table from the spread of the requests over it.
    """
    small_table, small_hosts, small_build = _select_table(small)
    big_table, big_hosts, big_build = _select_table(big)
    small_mix, big_mix = requests(small_hosts, count), requests(big_hosts, count)
    _check_requests(small_table, small_mix)
    _check_requests(big_table, big_mix)
    _check_requests(big_table, small_mix)
    configs = {
        "small": (small_table, [h for _, h in small_mix]),
        "big": (big_table, [h for _, h in big_mix]),
        "control": (big_table, [h for _, h in small_mix]),
    }
    per_slice: dict[str, list[float]] = {name: [] for name in configs}
    gc.collect()
    for _ in range(slices):
        for name, (table, heads) in configs.items():
            start = time.perf_counter()
            for _ in range(rounds):
                for head in heads:
                    select(table, head)
            per_slice[name].append((time.perf_counter() - start) / (rounds * len(heads)))
    per_kind: dict[str, dict[str, float]] = {}
    per_kind_requests = max(200, count * rounds * slices // 10)
    for name, table, mix in (("small", small_table, small_mix), ("big", big_table, big_mix)):
        per_kind[name] = {}
        for kind, _ in _MIX:
            subset = [head for k, head in mix if k == kind]
            reps = max(1, per_kind_requests // len(subset))
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                for _ in range(reps):
                    for head in subset:
                        select(table, head)
                best = min(best, (time.perf_counter() - start) / (reps * len(subset)))
            per_kind[name][kind] = best
    return {
        "requests": count * rounds * slices,
        "slices": slices,
        "per_kind_requests": per_kind_requests,
        "configs": {
            "small": {"paths": small, "hosts": small_hosts, "build_table_s": small_build},
            "big": {"paths": big, "hosts": big_hosts, "build_table_s": big_build},
            "control": {"paths": big, "hosts": big_hosts, "build_table_s": big_build},
        },
        "per_request_s": per_slice,
        "per_kind_s": per_kind,
    }


# --- report -------------------------------------------------------------------------------------


# This script's figures print without a thousands separator (the other scripts group them).
_mb = functools.partial(harness.mb, grouping="")
_med_best = functools.partial(harness.med_best, grouping="")


def report(compiles: list[dict[str, Any]], select_run: dict[str, Any], quick: bool) -> None:
    print()
    print("Compile (Ingress). Times in ms: median (best); memory in MB (10^6 bytes).")
    columns = [
        ("paths", 6), ("hosts", 5), ("ingr", 4), ("ns", 3), ("objects", 7), ("build_state", 15),
        ("compile", 15), ("gc", 5), ("frozen", 13), ("build pk", 8), ("compile pk", 10),
        ("RSS", 6), ("maxRSS", 6),
    ]  # fmt: skip
    rows = [
        [
            c["paths"], c["hosts"], c["ingresses"], c["namespaces"], c["objects"],
            _med_best(c["build_s"]), _med_best(c["compile_s"]),
            f"{statistics.median(c['compile_gc_s']) * 1e3:.1f}", _med_best(c["frozen_s"]),
            _mb(c["build_peak_bytes"]), _mb(c["compile_peak_bytes"]),
            _mb(c["rss_after_bytes"]), _mb(c["max_rss_bytes"]),
        ]
        for c in compiles
    ]  # fmt: skip
    harness.print_table(columns, rows)
    runs = ", ".join(f"{c['paths']}: {len(c['build_s'])}/{len(c['compile_s'])}" for c in compiles)
    print(
        f"  runs (build_state/compile): {runs}. gc: median ms of the compile spent in the\n"
        "  cyclic collector. frozen: compile after gc.freeze() of inputs and state. pk: peak\n"
        "  traced by tracemalloc during the call. RSS: resident after build_state + compile\n"
        f"  (imports alone: {_mb(compiles[0]['rss_start_bytes'])}); maxRSS: high-water mark."
    )
    print()
    print("Route selection: route.select on build_table(snapshot). µs per request.")
    kinds = [kind for kind, _ in _MIX]
    columns = [
        ("config", 8), ("paths", 6), ("hosts", 5), ("requests", 8), ("median (best)", 13),
        ("table ms", 8), *((k, 11) for k in kinds),
    ]  # fmt: skip
    rows = []
    for name, info in select_run["configs"].items():
        kind_times = select_run["per_kind_s"].get(name)
        per_kind = [f"{kind_times[k] * 1e6:.2f}" if kind_times else "-" for k in kinds]
        row = [
            name, info["paths"], info["hosts"], select_run["requests"],
            _med_best(select_run["per_request_s"][name], 1e6, 2),
            f"{info['build_table_s'] * 1e3:.1f}", *per_kind,
        ]  # fmt: skip
        rows.append(row)
    harness.print_table(columns, rows)
    mix = ", ".join(f"{kind} {share}%" for kind, share in _MIX)
    print(
        f"  mix: {mix}.\n"
        f"  Interleaved in {select_run['slices']} slices per config; median and best are per\n"
        "  slice; per-kind columns: best of 3 runs of "
        f"{select_run['per_kind_requests']:,}. control: the big table answering\n"
        "  the small table's requests (two hosts), i.e. table size without request spread."
    )
    print()
    print("Targets")
    big = next((c for c in compiles if c["paths"] == 10_000), None)
    sizes = (select_run["configs"]["small"]["paths"], select_run["configs"]["big"]["paths"])
    if quick or big is None or sizes != (10, 10_000):
        harness.print_skipped_targets()
        return
    compile_s = statistics.median(big["compile_s"])
    peak = big["compile_peak_bytes"] / harness.MB
    per = select_run["per_request_s"]
    small_us = statistics.median(per["small"]) * 1e6
    big_us = statistics.median(per["big"]) * 1e6
    # Slices of the three configurations run back to back, so the ratio within a slice is the
    # least disturbed by other load on the machine; the median of those ratios decides.
    ratio = statistics.median(b / s for b, s in zip(per["big"], per["small"], strict=True))
    control = statistics.median(c / s for c, s in zip(per["control"], per["small"], strict=True))
    lines = [
        (compile_s < COMPILE_TARGET_S, f"compile of 10,000 paths < {COMPILE_TARGET_S:g} s: "
         f"median {compile_s:.3f} s (best {min(big['compile_s']):.3f} s; "
         f"CPU time median {statistics.median(big['compile_cpu_s']):.3f} s)"),
        (peak < MEMORY_TARGET_MB, f"compile peak memory (tracemalloc) at 10,000 paths "
         f"< {MEMORY_TARGET_MB:g} MB: {peak:.1f} MB"),
        (small_us < SELECT_TARGET_US, f"select at 10 paths < {SELECT_TARGET_US:g} µs/request: "
         f"{small_us:.2f} µs"),
        (big_us < SELECT_TARGET_US, f"select at 10,000 paths < {SELECT_TARGET_US:g} µs/request: "
         f"{big_us:.2f} µs"),
        (ratio <= SELECT_SAME_RATIO, f"select the same at 10 and 10,000 paths, requests "
         f"spread over all hosts (ratio <= {SELECT_SAME_RATIO:g}): ratio {ratio:.2f}"),
        (control <= SELECT_SAME_RATIO, f"select the same at 10 and 10,000 paths, same "
         f"requests (control; ratio <= {SELECT_SAME_RATIO:g}): ratio {control:.2f}"),
    ]  # fmt: skip
    harness.print_targets(lines)
    print(
        f"info  at 10,000 paths, RSS: {_mb(big['rss_start_bytes'])} MB after imports, "
        f"{_mb(big['rss_inputs_bytes'])} MB with the raw input dicts, "
        f"{_mb(big['rss_after_bytes'])} MB after build_state + compile "
        f"(high-water mark {_mb(big['max_rss_bytes'])} MB)"
    )
    print(
        f"info  at 10,000 paths, held after the call (tracemalloc): state "
        f"{_mb(big['state_held_bytes'])} MB, compile result {_mb(big['result_held_bytes'])} MB"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = harness.parse_args(__doc__, argv)
    if args.worker:
        harness.answer_worker(args.worker, {"compile": worker_compile, "select": worker_select})
        return 0
    if args.quick:
        compile_plan = [(10, 2, 2), (100, 2, 2)]
        select_plan = (10, 100, 200, 2, 1)
    else:
        compile_plan = [(100, 15, 30), (1_000, 7, 15), (10_000, 3, 7)]
        select_plan = (10, 10_000, 10_000, 20, 1)
    with harness.session(__file__, argv):
        compiles = harness.run_workers(
            __file__, "compile", compile_plan, lambda entry: f"compile: {entry[0]} paths"
        )
        print(f"  select: {select_plan[0]} and {select_plan[1]} paths ...", flush=True)
        select_run = harness.run_worker(__file__, ["select", *map(str, select_plan)])
        report(compiles, select_run, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
