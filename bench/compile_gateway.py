"""Benchmark: Gateway API compile time and memory, from 1,000 to 100,000 HTTPRoute rules.

Run from the repository root::

    .venv/bin/python bench/compile_gateway.py           # full run (`make bench`)
    .venv/bin/python bench/compile_gateway.py --quick   # tiny smoke run, for tests

What it measures (results go in docs/benchmarks.md):

1. For 10, 100 and 1,000 Gateways, each with 10 HTTPRoutes of 10 rules (1,000, 10,000 and
   100,000 rules): ``build_state`` from raw API dicts (decoding) and ``compile(state,
   SharedPool())``, separately; the peak memory traced by ``tracemalloc`` during each (during
   the compile only at 100,000 rules, where a traced build_state would take another half
   minute); the process RSS after building and compiling; and ``status(state)``, the desired
   statuses of every GatewayClass, Gateway and HTTPRoute. Each size runs in a fresh
   subprocess, so RSS figures do not carry over from one size to the next.
2. Growth: compile time per rule at each size, and the ratio t(100,000) / t(10,000) against
   n log n (10 × log 100,000 / log 10,000 = 12.5).

Timings are wall-clock (``time.perf_counter``) with the garbage collector enabled, as in the
controller; the median of the runs decides pass or fail, the best is shown beside it. The
compile also reports the time spent in the collector, its CPU time, and its time after
``gc.freeze()`` of the inputs and the state (information, not a target). ``tracemalloc`` runs
are separate from timed runs (tracing slows Python down several times). The script prints
PASS/FAIL per target and exits 0 whatever the figures: benchmarks report, they do not gate. It
exits non-zero only when it breaks, for instance when the generated workload does not compile
to the expected snapshot.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import api_objects as objects
import harness
from api_objects import path_match

from coxswain.compile.api import compile as compile_state
from coxswain.compile.api import status as status_of
from coxswain.compile.config import DEFAULT_GATEWAY_CONTROLLER
from coxswain.compile.model.state import build_state
from coxswain.compile.scope import SharedPool

if TYPE_CHECKING:
    from collections.abc import Sequence

ROUTES_PER_GATEWAY = 10
RULES_PER_ROUTE = 10  # the length of _rule_template()
MAX_NAMESPACES = 50
# The one certificate every Secret holds names *.example.com, which does not cover the listeners'
# *.g<N>.example.com: the compiler does not match certificate names against listener hostnames.
TLS_SERIAL = 2000

# Targets (docs/benchmarks.md reports them).
TARGET_RULES = 100_000
COMPILE_TARGET_S = 10.0  # compile of 100,000 rules, median
MEMORY_TARGET_MB = 2_000.0  # 2 GB, at 100,000 rules
GROWTH_FROM = 10_000  # growth is checked from 10,000 to 100,000 rules, against n log n

# Routes r >= _BOTH_LISTENERS of a Gateway name its HTTPS listener by sectionName; the others
# name the Gateway alone and attach to both listeners (HTTP and HTTPS).
_BOTH_LISTENERS = 8
# Routes with an even index also have a canary Service; these rules split 90/10 onto it.
_SPLIT_RULES = frozenset({2, 9})


# --- workload -----------------------------------------------------------------------------------


def _rule_template(domain: str) -> list[dict[str, Any]]:
    """The 10 rules of every route, without backendRefs (fresh dicts on every call).

    Rules by path type: 2 Exact (one with a method), 1 RegularExpression, 7 PathPrefix (one
    of them with two matches: 11 matches in all); 4 matches carry a header or query match (one
    a query RegularExpression).
    Filters: 2 RequestHeaderModifier, 2 URLRewrite (prefix rewrite; host and full path).
    """
    return [
        {"matches": [path_match("Exact", "/healthz")]},
        {
            "matches": [
                {
                    **path_match("PathPrefix", "/api/v1/users"),
                    "headers": [{"name": "X-Tenant", "value": "blue"}],
                }
            ]
        },
        {
            "matches": [path_match("PathPrefix", "/api/v1")],
            "filters": [
                {
                    "type": "RequestHeaderModifier",
                    "requestHeaderModifier": {
                        "set": [{"name": "X-Api-Version", "value": "v1"}],
                        "add": [{"name": "X-Served-By", "value": "coxswain"}],
                        "remove": ["X-Debug"],
                    },
                }
            ],
        },
        {
            "matches": [path_match("PathPrefix", "/static")],
            "filters": [
                {
                    "type": "URLRewrite",
                    "urlRewrite": {
                        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/assets"}
                    },
                }
            ],
        },
        {"matches": [{**path_match("Exact", "/login"), "method": "POST"}]},
        {"matches": [path_match("RegularExpression", r"/items/[0-9]+(/reviews)?")]},
        {
            "matches": [
                {
                    **path_match("PathPrefix", "/search"),
                    "queryParams": [{"name": "version", "value": "2"}],
                }
            ]
        },
        {
            "matches": [
                {
                    **path_match("PathPrefix", "/admin"),
                    "headers": [{"name": "X-Admin", "value": "true"}],
                },
                {
                    **path_match("PathPrefix", "/admin"),
                    "queryParams": [
                        {"type": "RegularExpression", "name": "token", "value": "[a-f0-9]{32}"}
                    ],
                },
            ],
            "filters": [
                {
                    "type": "RequestHeaderModifier",
                    "requestHeaderModifier": {"set": [{"name": "X-Admin-Route", "value": domain}]},
                }
            ],
        },
        {
            "matches": [path_match("PathPrefix", "/docs")],
            "filters": [
                {
                    "type": "URLRewrite",
                    "urlRewrite": {
                        "hostname": f"docs.{domain}",
                        "path": {"type": "ReplaceFullPath", "replaceFullPath": "/index.html"},
                    },
                }
            ],
        },
        {"matches": [path_match("PathPrefix", "/")]},
    ]


_MATCHES_PER_ROUTE = sum(len(r["matches"]) for r in _rule_template("x"))


def _route_hostnames(route: int, domain: str) -> list[str]:
    """1 or 2 hostnames under the Gateway's domain; the last route a deeper wildcard."""
    if route == ROUTES_PER_GATEWAY - 1:
        return [f"*.edge.{domain}"]
    if route % 3 == 0:
        return [f"app{route}.{domain}", f"www{route}.{domain}"]
    return [f"app{route}.{domain}"]


def _allowed_routes(gateway: int, namespace: str) -> dict[str, Any] | None:
    """Every Gateway admits routes of its own namespace, in one of three ways."""
    variant = gateway % 4
    if variant == 2:
        return {"namespaces": {"from": "All"}}
    if variant == 3:
        return {
            "namespaces": {
                "from": "Selector",
                "selector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            }
        }
    return None  # the default: from Same


def workload(gateways: int, tls_data: dict[str, str]) -> dict[str, Any]:
    """Raw API bodies for ``gateways`` Gateways, and a description of what they should compile to.

    Each Gateway ``gw-<g>`` has an HTTP listener (80) and an HTTPS listener (443, terminating
    with its own ``kubernetes.io/tls`` Secret, all Secrets holding the same certificate), both
    for ``*.g<g>.example.com``, and 10 HTTPRoutes of 10 rules in its namespace. Every route has
    its own Service (port 80 named ``http``, target 8080) and EndpointSlice (3 ready endpoints,
    1 not ready); even-numbered routes also a canary Service that two of their rules split
    90/10 onto. Gateways are spread round-robin over up to 50 Namespaces.
    """
    namespaces = [f"team-{n:02d}" for n in range(max(1, min(MAX_NAMESPACES, gateways)))]
    bodies = [objects.gateway_class("coxswain", DEFAULT_GATEWAY_CONTROLLER)]
    bodies.extend(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"team": ns, "kubernetes.io/metadata.name": ns}},
        }
        for ns in namespaces
    )
    counts: Counter[str] = Counter()
    expected_entries = 0  # GatewayRules in the snapshot: per listener, per hostname, per match
    expected_hosts = 0  # hosts across every listener table
    for g in range(gateways):
        namespace = namespaces[g % len(namespaces)]
        domain = f"g{g}.example.com"
        gateway, secret = f"gw-{g}", f"gw-{g}-tls"
        allowed = _allowed_routes(g, namespace)
        listeners: list[dict[str, Any]] = [
            {"name": "http", "port": 80, "protocol": "HTTP", "hostname": f"*.{domain}"},
            objects.https_listener(f"*.{domain}", secret),
        ]
        if allowed is not None:
            for listener in listeners:
                listener["allowedRoutes"] = allowed
        spec = {"gatewayClassName": "coxswain", "listeners": listeners}
        bodies.extend(objects.gateway_and_secret(namespace, g, spec, tls_data))
        counts["Gateway"] += 1
        counts["Secret"] += 1
        http_hosts: set[str] = set()
        https_hosts: set[str] = set()
        for r in range(ROUTES_PER_GATEWAY):
            parent: dict[str, Any] = {"name": gateway}
            if r >= _BOTH_LISTENERS:
                parent["sectionName"] = "https"
            hostnames = _route_hostnames(r, domain)
            rules = _rule_template(domain)
            spec = {"parentRefs": [parent], "hostnames": hostnames, "rules": rules}
            found, services = objects.gateway_route(
                namespace, g, r, spec, _SERVICES, routes_per_gateway=ROUTES_PER_GATEWAY
            )
            bodies.extend(found)
            counts.update(
                HTTPRoute=1, rules=len(rules), Service=len(services), EndpointSlice=len(services)
            )
            attached = 1 if r >= _BOTH_LISTENERS else 2
            expected_entries += _MATCHES_PER_ROUTE * len(hostnames) * attached
            https_hosts.update(hostnames)
            if r < _BOTH_LISTENERS:
                http_hosts.update(hostnames)
        expected_hosts += len(http_hosts) + len(https_hosts)
    return {
        "bodies": bodies,
        "gateways": gateways,
        "routes": counts["HTTPRoute"],
        "rules": counts["rules"],
        "entries": expected_entries,
        "hosts": expected_hosts,
        "namespaces": len(namespaces),
        "services": counts["Service"],
        "slices": counts["EndpointSlice"],
        "secrets": counts["Secret"],
        "objects": len(bodies),
    }


def _service_bodies(namespace: str, service: str, seed: int) -> list[dict[str, Any]]:
    cluster_ip = f"172.{16 + (seed >> 16) % 16}.{(seed >> 8) % 256}.{seed % 256}"
    return objects.service_bodies(namespace, service, seed, cluster_ip)


_SERVICES = objects.RouteServices(split=_SPLIT_RULES, bodies=_service_bodies)


def _check_compiled(load: dict[str, Any], result: Any) -> None:
    """Fail loudly unless the snapshot holds exactly what the workload describes."""
    snapshot = result.snapshot
    tables = [t for by_host in snapshot.gateways.values() for t in by_host.values()]
    entries = sum(len(rules) for t in tables for rules in t.hosts.values())
    hosts = sum(len(t.hosts) for t in tables)
    health = snapshot.listener_health
    listeners = 2 * load["gateways"]
    problems = []
    if len(tables) != listeners:
        problems.append(f"{len(tables)} listener tables, expected {listeners}")
    if entries != load["entries"]:
        problems.append(f"{entries} rules in listener tables, expected {load['entries']}")
    if hosts != load["hosts"]:
        problems.append(f"{hosts} listener hosts, expected {load['hosts']}")
    if len(health) != listeners:
        problems.append(f"{len(health)} listener_health entries, expected {listeners}")
    if not_ready := [f"{h.gateway}/{h.listener}: {h.reason}" for h in health if not h.ready]:
        problems.append(f"{len(not_ready)} listeners not ready, e.g. {not_ready[:3]}")
    attached = Counter(h.attached_routes for h in health)
    want = {_BOTH_LISTENERS: load["gateways"], ROUTES_PER_GATEWAY: load["gateways"]}
    if attached != Counter(want):
        problems.append(f"attached routes per listener {dict(attached)}, expected {want}")
    certificates = sum(len(by_host) for by_host in snapshot.tls.values())
    if certificates != load["gateways"]:
        problems.append(f"{certificates} certificates, expected {load['gateways']}")
    if len(snapshot.endpoints) != load["services"]:
        problems.append(f"{len(snapshot.endpoints)} endpoint keys, expected {load['services']}")
    if any(len(e) != objects.ENDPOINTS_READY for e in snapshot.endpoints.values()):
        problems.append(f"an endpoint list is not {objects.ENDPOINTS_READY} long")
    if any(
        not b.valid
        for t in tables
        for rules in t.hosts.values()
        for rule in rules
        for b in rule.action.backends
    ):
        problems.append("an invalid backend")
    if snapshot.ingress.hosts:
        problems.append(f"{len(snapshot.ingress.hosts)} Ingress hosts, expected none")
    reasons = Counter(d.reason for d in result.diagnostics)
    if reasons:
        problems.append(f"unexpected diagnostics {dict(reasons)}")
    harness.stop_unless_empty("workload did not compile as expected", problems)


def _check_statuses(load: dict[str, Any], statuses: Any) -> None:
    """Every route Accepted and ResolvedRefs on every parent; every Gateway Accepted."""
    kinds = Counter(s.kind for s in statuses)
    want = Counter(GatewayClass=1, Gateway=load["gateways"], HTTPRoute=load["routes"])
    problems = [] if kinds == want else [f"statuses {dict(kinds)}, expected {dict(want)}"]
    for item in statuses:
        body = json.loads(item.body)
        conditions = [c for p in body.get("parents", ()) for c in p["conditions"]]
        conditions += body.get("conditions", [])
        if bad := [c["type"] for c in conditions if c["status"] != "True"]:
            problems.append(f"{item.kind} {item.namespace}/{item.name}: {bad} not True")
            break
    harness.stop_unless_empty("statuses not as expected", problems)


# --- worker (each size runs in its own process) -------------------------------------------------


def worker_compile(
    gateways: int,
    build_repeat: int,
    compile_repeat: int,
    frozen_repeat: int,
    status_repeat: int,
    trace_build: int,
) -> dict[str, Any]:
    """One size: timed runs, ``status`` after the compile, then one traced compile (and
    build_state, if ``trace_build``)."""
    rss_start = harness.rss_bytes()
    load = workload(gateways, objects.make_tls_data(TLS_SERIAL))

    def status_figures(state: Any) -> dict[str, Any]:
        times, clocks, statuses = harness.timed(lambda: status_of(state), status_repeat)
        _check_statuses(load, statuses)
        return harness.timed_figures("status", times, clocks)

    figures = harness.build_and_compile(
        load.pop("bodies"),
        build_state,
        lambda state: compile_state(state, SharedPool()),
        lambda result: _check_compiled(load, result),
        harness.CompileRepeats(build_repeat, compile_repeat, frozen_repeat, bool(trace_build)),
        between=status_figures,
    )
    return {**load, **figures, "rss_start_bytes": rss_start}


# --- report -------------------------------------------------------------------------------------


def report(compiles: list[dict[str, Any]], quick: bool) -> None:
    print()
    print("Compile (Gateway API). Times in ms: median (best); memory in MB (10^6 bytes).")
    columns = [
        ("rules", 7), ("gw", 4), ("routes", 6), ("ns", 3), ("objects", 7), ("build_state", 19),
        ("compile", 19), ("gc", 7), ("frozen", 17), ("status", 17), ("build pk", 8),
        ("compile pk", 10), ("RSS", 7), ("maxRSS", 7),
    ]  # fmt: skip
    rows = [
        [
            c["rules"], c["gateways"], c["routes"], c["namespaces"], c["objects"],
            harness.med_best(c["build_s"]), harness.med_best(c["compile_s"]),
            f"{statistics.median(c['compile_gc_s']) * 1e3:,.1f}",
            harness.med_best(c["frozen_s"]), harness.med_best(c["status_s"]),
            harness.mb(c["build_peak_bytes"]), harness.mb(c["compile_peak_bytes"]),
            harness.mb(c["rss_after_bytes"]), harness.mb(c["max_rss_bytes"]),
        ]
        for c in compiles
    ]  # fmt: skip
    harness.print_table(columns, rows)
    runs = ", ".join(
        f"{c['rules']}: {len(c['build_s'])}/{len(c['compile_s'])}/{len(c['frozen_s'])}"
        f"/{len(c['status_s'])}"
        for c in compiles
    )
    print(
        f"  runs (build_state/compile/frozen/status): {runs}.\n"
        "  gc: median ms of the compile spent in the cyclic collector. frozen: compile after\n"
        "  gc.freeze() of inputs and state. status: compile.status(state). pk: peak traced by\n"
        "  tracemalloc during the call. RSS: resident after build_state + compile (imports\n"
        f"  alone: {harness.mb(compiles[0]['rss_start_bytes'])}); maxRSS: high-water mark at that "
        "point."
    )
    print()
    print("Growth: compile time per rule (median)")
    for c in compiles:
        per_rule = statistics.median(c["compile_s"]) / c["rules"] * 1e6
        entries = statistics.median(c["compile_s"]) / c["entries"] * 1e6
        print(
            f"  {c['rules']:>7} rules ({c['entries']:>7} listener-table entries): "
            f"{per_rule:.2f} µs/rule, {entries:.2f} µs/entry"
        )
    for smaller, bigger in itertools.pairwise(compiles):
        ratio = statistics.median(bigger["compile_s"]) / statistics.median(smaller["compile_s"])
        size = bigger["rules"] / smaller["rules"]
        bound = size * math.log(bigger["rules"]) / math.log(smaller["rules"])
        print(
            f"  t({bigger['rules']:,}) / t({smaller['rules']:,}) = {ratio:.2f} "
            f"(linear {size:g}, n log n {bound:.2f})"
        )
    print()
    print("Targets")
    big = next((c for c in compiles if c["rules"] == TARGET_RULES), None)
    mid = next((c for c in compiles if c["rules"] == GROWTH_FROM), None)
    if quick or big is None or mid is None:
        harness.print_skipped_targets()
        return
    compile_s = statistics.median(big["compile_s"])
    peak = big["compile_peak_bytes"] / harness.MB
    max_rss = big["max_rss_bytes"] / harness.MB  # before any tracing: tracemalloc costs memory too
    ratio = compile_s / statistics.median(mid["compile_s"])
    bound = TARGET_RULES / GROWTH_FROM * math.log(TARGET_RULES) / math.log(GROWTH_FROM)
    lines = [
        (compile_s < COMPILE_TARGET_S, f"compile of {TARGET_RULES:,} rules < "
         f"{COMPILE_TARGET_S:g} s: median {compile_s:.3f} s (best {min(big['compile_s']):.3f} s; "
         f"CPU time median {statistics.median(big['compile_cpu_s']):.3f} s)"),
        (peak < MEMORY_TARGET_MB, f"compile peak memory (tracemalloc) at {TARGET_RULES:,} rules "
         f"< {MEMORY_TARGET_MB / 1000:g} GB: {peak:,.1f} MB"),
        (max_rss < MEMORY_TARGET_MB, f"whole-process high-water RSS at {TARGET_RULES:,} rules, "
         f"untraced (raw inputs, state, compile) < {MEMORY_TARGET_MB / 1000:g} GB: "
         f"{max_rss:,.1f} MB"),
        (ratio <= bound, f"growth no worse than n log n: t({TARGET_RULES:,}) / "
         f"t({GROWTH_FROM:,}) = {ratio:.2f} <= {bound:.2f}"),
    ]  # fmt: skip
    harness.print_targets(lines)
    outside = [
        statistics.median(t - g for t, g in zip(c["compile_s"], c["compile_gc_s"], strict=True))
        for c in (mid, big)
    ]
    print(
        f"info  growth outside the cyclic collector (compile minus gc time, medians): "
        f"{outside[1]:.3f} s / {outside[0]:.3f} s = {outside[1] / outside[0]:.2f}"
    )
    print(
        f"info  at {TARGET_RULES:,} rules, RSS: {harness.mb(big['rss_start_bytes'])} MB after "
        "imports, "
        f"{harness.mb(big['rss_inputs_bytes'])} MB with the raw input dicts, "
        f"{harness.mb(big['rss_after_bytes'])} MB after build_state + compile "
        f"(high-water mark {harness.mb(big['max_rss_bytes'])} MB then, "
        f"{harness.mb(big['max_rss_end_bytes'])} MB at the end, tracemalloc runs included)"
    )
    print(
        f"info  at {TARGET_RULES:,} rules, held after the call (tracemalloc): state "
        f"{harness.mb(big['state_held_bytes'])} MB (– = not traced), compile result "
        f"{harness.mb(big['result_held_bytes'])} MB; "
        f"status(state) median {statistics.median(big['status_s']):.3f} s"
    )


def _announce(entry: Sequence[int]) -> str:
    gateways = entry[0]
    return (
        f"compile: {gateways * ROUTES_PER_GATEWAY * RULES_PER_ROUTE:,} rules ({gateways} Gateways)"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = harness.parse_args(__doc__, argv)
    if args.worker:
        harness.answer_worker(args.worker, {"compile": worker_compile})
        return 0
    # (Gateways, build_state runs, compile runs, frozen compile runs, status runs,
    #  trace build_state)
    if args.quick:
        plan = [(1, 2, 2, 1, 2, 1), (2, 2, 2, 1, 2, 1)]
    else:
        # At 100,000 rules a compile takes seconds and a traced one several times that: two
        # timed compiles, one build_state and status, no frozen run and no traced build_state,
        # so that the full run stays within a few minutes.
        plan = [(10, 5, 9, 5, 5, 1), (100, 3, 5, 3, 3, 1), (1_000, 1, 2, 0, 1, 0)]
    with harness.session(__file__, argv):
        compiles = harness.run_workers(__file__, "compile", plan, _announce)
        report(compiles, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
