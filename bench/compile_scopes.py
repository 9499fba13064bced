"""Benchmark: scopes. The SharedPool compile and one compile per dedicated Gateway's scope.

Run from the repository root::

    .venv/bin/python bench/compile_scopes.py           # full run
    .venv/bin/python bench/compile_scopes.py --quick   # tiny smoke run, for tests

The world (``workload``): Gateways of class ``coxswain`` spread over Namespaces of 20 Gateways
each (5 at 100 Gateways, 50 at 1,000), each with an HTTP listener (80) and an HTTPS listener (443,
``*.g<N>.example.com``, one ``kubernetes.io/tls`` Secret each) and 10 HTTPRoutes of 10 rules.
Half the Gateways are dedicated (``spec.infrastructure.parametersRef`` to the
CoxswainGatewayParameters ``p`` of their Namespace); half of those have a ready Deployment
``<gateway>-coxswain`` (and its Service) and so leave the shared pool, the other half a
Deployment rolling out (no ready replica) and stay in it. Three Ingresses per ten Gateways sit
beside them, on the Services of the Gateways' routes.

What it measures, at 100 and at 1,000 Gateways, each size in a fresh subprocess (results go in
docs/benchmarks.md):

1. ``build_state`` from raw API dicts (decoding);
2. ``compile(state, SharedPool())``: every Ingress and every Gateway the shared pool serves;
3. ``compile(state, GatewayScope(ns, name))`` for every dedicated Gateway, each call timed on
   its own: the total of a pass over all of them and the per-scope distribution (median, p99,
   max); also after ``gc.freeze()`` of the inputs and the state, and the ``tracemalloc`` peak
   of one scope's compile;
4. ``status(state)`` and ``provision(state, CompileConfig())``, which analyse every Gateway.
5. Growth: both worlds in one more process, every scope compile of the big world alternated
   call by call with one of the small world, so that the machine's drift (2 shared cores are
   noisy) hits both alike; the ratio of the medians decides.

Targets: one Gateway scope compiles in under 10 ms at 1,000 Gateways ("an index from Gateway
to what attaches to it, not a filter over everything"), and the per-scope time stays flat from
100 to 1,000 Gateways.

Every compile is checked before its time counts: the SharedPool snapshot must hold no listener
of a ready dedicated Gateway and every listener of the others; each Gateway scope's snapshot only
its own Gateway (on its spec ports), its 10 routes' rules, its Services' endpoints and an empty
Ingress table. Timings are wall-clock (``time.perf_counter``) with the garbage collector enabled,
as in the controller; medians decide, best or max are shown beside them. The script prints
PASS/FAIL per target and exits 0 whatever the figures; it exits non-zero only when it breaks,
for instance when the generated workload does not compile to what it should.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections import Counter
from typing import Any

import api_objects as objects
import harness
from api_objects import path_match

from coxswain.compile.api import compile as compile_state
from coxswain.compile.api import status as status_of
from coxswain.compile.config import (
    DEFAULT_GATEWAY_CONTROLLER,
    DEFAULT_INGRESS_CONTROLLER,
    CompileConfig,
)
from coxswain.compile.model.state import build_state
from coxswain.compile.provision import provision
from coxswain.compile.scope import GatewayScope, SharedPool

PARAMETERS_API = "gateway.coxswain-labs.dev/v1alpha1"
PARAMETERS_GROUP = "gateway.coxswain-labs.dev"
PARAMETERS_NAME = "p"
CLASS = "coxswain"
ROUTES_PER_GATEWAY = 10
RULES_PER_ROUTE = 10  # the length of _rule_template()
GATEWAYS_PER_NAMESPACE = 20
INGRESSES_PER_TEN_GATEWAYS = 3
TLS_SERIAL = 3000  # of the one certificate every Secret holds

# Targets (docs/benchmarks.md reports them).
TARGET_GATEWAYS = 1_000
SCOPE_TARGET_S = 0.010  # one GatewayScope compile at 1,000 Gateways, median
GROWTH_FROM = 100  # per-scope time at 100 vs 1,000 Gateways...
SAME_RATIO = 1.25  # ...is "flat" when within 25%

# Gateway kinds cycle with the Gateway index: 0, 2 shared; 1 dedicated, its Deployment rolling
# out (no ready replica: the shared pool still serves it); 3 dedicated with a ready Deployment.
_KIND_CYCLE = ("shared", "pending", "shared", "ready")
# Even-numbered routes also have a canary Service that these rules split 90/10 onto.
_SPLIT_RULES = frozenset({2, 9})


# --- workload -----------------------------------------------------------------------------------


def _rule_template() -> list[dict[str, Any]]:
    """The 10 rules of every route, one match each, without backendRefs (fresh dicts).

    An application's routes: 2 Exact paths, 8 PathPrefix (``/`` last), 3 with a header match.
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
        {"matches": [path_match("PathPrefix", "/api/v1")]},
        {"matches": [path_match("PathPrefix", "/static")]},
        {"matches": [path_match("Exact", "/login")]},
        {
            "matches": [
                {
                    **path_match("PathPrefix", "/api/v2"),
                    "headers": [{"name": "X-Canary", "value": "always"}],
                }
            ]
        },
        {"matches": [path_match("PathPrefix", "/search")]},
        {
            "matches": [
                {
                    **path_match("PathPrefix", "/admin"),
                    "headers": [{"name": "X-Admin", "value": "1"}],
                }
            ]
        },
        {"matches": [path_match("PathPrefix", "/docs")]},
        {"matches": [path_match("PathPrefix", "/")]},
    ]


def workload(gateways: int, tls_data: dict[str, str]) -> dict[str, Any]:
    """Raw API bodies for ``gateways`` Gateways and their world, and what they should compile to.

    Gateway ``gw-<g>`` lives in Namespace ``team-<g // 20>``; its routes ``g<g>-route-<r>``
    (hostname ``app<r>.g<g>.example.com``, parentRef the Gateway alone, so attached to both
    listeners) reach Service ``g<g>-svc-<r>`` (port 80 named ``http``, target 8080; an
    EndpointSlice of 3 ready endpoints, 1 not ready), even-numbered routes also a canary
    Service. Ingress ``ing-<i>`` (host ``ing<i>.example.com``, two paths; every fifth with TLS
    through the Secret of the Gateway it borrows Services from) reuses the Services of the
    Gateway with the same index.
    """
    n_namespaces = max(1, -(-gateways // GATEWAYS_PER_NAMESPACE))
    namespaces = [f"team-{n:02d}" for n in range(n_namespaces)]
    bodies: list[dict[str, Any]] = [
        objects.gateway_class(CLASS, DEFAULT_GATEWAY_CONTROLLER),
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": CLASS},
            "spec": {"controller": DEFAULT_INGRESS_CONTROLLER},
        },
    ]
    for ns in namespaces:
        bodies.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
            }
        )
        bodies.append(
            {
                "apiVersion": PARAMETERS_API,
                "kind": "CoxswainGatewayParameters",
                "metadata": {"name": PARAMETERS_NAME, "namespace": ns, "generation": 1},
                "spec": {
                    "replicas": 2,
                    "serviceType": "ClusterIP",
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                        "limits": {"memory": "1Gi"},
                    },
                },
            }
        )
    counts: Counter[str] = Counter()
    described: list[dict[str, Any]] = []  # one entry per Gateway
    for g in range(gateways):
        namespace = namespaces[g // GATEWAYS_PER_NAMESPACE]
        kind = _KIND_CYCLE[g % len(_KIND_CYCLE)]
        domain = f"g{g}.example.com"
        gateway, secret = f"gw-{g}", f"gw-{g}-tls"
        spec: dict[str, Any] = {
            "gatewayClassName": CLASS,
            "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP"},
                objects.https_listener(f"*.{domain}", secret),
            ],
        }
        if kind != "shared":
            spec["infrastructure"] = {
                "parametersRef": {
                    "group": PARAMETERS_GROUP,
                    "kind": "CoxswainGatewayParameters",
                    "name": PARAMETERS_NAME,
                }
            }
            bodies.extend(_dedicated_bodies(namespace, gateway, g, ready=kind == "ready"))
            counts["Deployment"] += 1
        bodies.extend(objects.gateway_and_secret(namespace, g, spec, tls_data))
        counts["Gateway"] += 1
        counts["Secret"] += 1
        routes: list[str] = []
        endpoints: list[str] = []
        for r in range(ROUTES_PER_GATEWAY):
            rules = _rule_template()
            spec = {"parentRefs": [{"name": gateway}], "hostnames": [f"app{r}.{domain}"],
                    "rules": rules}  # fmt: skip
            found, services = objects.gateway_route(
                namespace, g, r, spec, _SERVICES, routes_per_gateway=ROUTES_PER_GATEWAY
            )
            bodies.extend(found)
            routes.append(found[0]["metadata"]["name"])
            endpoints.extend(f"{namespace}/{svc}/80" for svc in services)
            counts.update(
                HTTPRoute=1, rules=len(rules), Service=len(services), EndpointSlice=len(services)
            )
        described.append(
            {
                "namespace": namespace,
                "name": gateway,
                "kind": kind,
                "hostname": f"*.{domain}",
                "routes": routes,
                "endpoints": endpoints,
            }
        )
    ingress_endpoints: set[str] = set()
    ingresses = gateways * INGRESSES_PER_TEN_GATEWAYS // 10
    for i in range(ingresses):
        owner = described[i]
        namespace = owner["namespace"]
        ing: dict[str, Any] = {
            "ingressClassName": CLASS,
            "rules": [
                {
                    "host": f"ing{i}.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {
                                    "service": {"name": f"g{i}-svc-0", "port": {"number": 80}}
                                },
                            },
                            {
                                "path": "/api",
                                "pathType": "Prefix",
                                "backend": {
                                    "service": {"name": f"g{i}-svc-1", "port": {"name": "http"}}
                                },
                            },
                        ]
                    },
                }
            ],
        }
        if i % 5 == 0:
            ing["tls"] = [{"hosts": [f"ing{i}.example.com"], "secretName": f"gw-{i}-tls"}]
            counts["tls_ingress_hosts"] += 1
        ingress_endpoints.update(f"{namespace}/g{i}-svc-{s}/80" for s in (0, 1))
        bodies.append(
            objects.api_object(
                "networking.k8s.io/v1",
                "Ingress",
                namespace,
                f"ing-{i}",
                ing,
                uid=f"uid-ing-{i}",
                created=i,
            )
        )
        counts["Ingress"] += 1
    kinds = Counter(d["kind"] for d in described)
    return {
        "bodies": bodies,
        "described": described,
        "ingress_endpoints": sorted(ingress_endpoints),
        "gateways": gateways,
        "shared": kinds["shared"],
        "pending": kinds["pending"],
        "ready": kinds["ready"],
        "routes": counts["HTTPRoute"],
        "rules": counts["rules"],
        "ingresses": counts["Ingress"],
        "tls_ingress_hosts": counts["tls_ingress_hosts"],
        "namespaces": len(namespaces),
        "services": counts["Service"],
        "slices": counts["EndpointSlice"],
        "secrets": counts["Secret"],
        "deployments": counts["Deployment"],
        "objects": len(bodies),
    }


def _dedicated_bodies(namespace: str, gateway: str, g: int, *, ready: bool) -> list[Any]:
    """The dedicated proxy's Deployment (and, once it is up, its Service), as the controller
    would have created them; only ``status.readyReplicas`` decides placement."""
    name = f"{gateway}-{CLASS}"
    labels = {
        "app.kubernetes.io/managed-by": "coxswain",
        "coxswain-labs.dev/role": "dedicated-proxy",
    }
    found: list[Any] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
            "spec": {"replicas": 2},
            "status": {"replicas": 2, "readyReplicas": 1} if ready else {"replicas": 2},
        }
    ]
    if ready:
        found.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                "spec": {
                    "type": "ClusterIP",
                    "clusterIP": f"172.31.{(g >> 8) % 256}.{g % 256}",
                    "ports": [
                        {"name": "listener-80", "port": 80, "protocol": "TCP"},
                        {"name": "listener-443", "port": 443, "protocol": "TCP"},
                    ],
                },
            }
        )
    return found


def _service_bodies(namespace: str, service: str, seed: int) -> list[dict[str, Any]]:
    cluster_ip = f"172.{16 + (seed >> 16) % 15}.{(seed >> 8) % 256}.{seed % 256}"
    return objects.service_bodies(namespace, service, seed, cluster_ip)


_SERVICES = objects.RouteServices(split=_SPLIT_RULES, bodies=_service_bodies)


# --- checks: fail loudly unless every compile holds what the workload says ----------------------


def _tables(snapshot: Any) -> list[Any]:
    return [t for by_host in snapshot.gateways.values() for t in by_host.values()]


def _entries(tables: list[Any]) -> int:
    return sum(len(rules) for t in tables for rules in t.hosts.values())


def _check_shared(load: dict[str, Any], result: Any) -> None:
    """The shared pool: every Ingress, every shared or pending Gateway, no ready dedicated one."""
    snapshot = result.snapshot
    pooled = {f"{d['namespace']}/{d['name']}" for d in load["described"] if d["kind"] != "ready"}
    ready = {f"{d['namespace']}/{d['name']}" for d in load["described"] if d["kind"] == "ready"}
    tables = _tables(snapshot)
    health = snapshot.listener_health
    problems = []
    if not isinstance(snapshot.scope, SharedPool):
        problems.append(f"scope {snapshot.scope}")
    leaked = sorted({t.gateway for t in tables} & ready | {h.gateway for h in health} & ready)
    if leaked:
        problems.append(f"{len(leaked)} ready dedicated Gateways in the pool, e.g. {leaked[:3]}")
    if {t.gateway for t in tables} != pooled:
        problems.append(f"listener tables of {len({t.gateway for t in tables})} Gateways, "
                        f"expected {len(pooled)}")  # fmt: skip
    if len(tables) != 2 * len(pooled) or len(health) != 2 * len(pooled):
        problems.append(f"{len(tables)} listener tables, {len(health)} health entries, "
                        f"expected {2 * len(pooled)}")  # fmt: skip
    if any(h.target_port < 30000 for h in health):
        problems.append("a pooled listener not on an internal port")
    want_entries = len(pooled) * ROUTES_PER_GATEWAY * RULES_PER_ROUTE * 2
    if (entries := _entries(tables)) != want_entries:
        problems.append(f"{entries} listener-table entries, expected {want_entries}")
    if not_ready := [f"{h.gateway}/{h.listener}: {h.reason}" for h in health if not h.ready]:
        problems.append(f"{len(not_ready)} listeners not ready, e.g. {not_ready[:3]}")
    if any(h.attached_routes != ROUTES_PER_GATEWAY for h in health):
        problems.append(f"attached routes {Counter(h.attached_routes for h in health)}")
    if len(snapshot.ingress.hosts) != load["ingresses"]:
        problems.append(f"{len(snapshot.ingress.hosts)} Ingress hosts, want {load['ingresses']}")
    certificates = sum(len(by_host) for by_host in snapshot.tls.values())
    if certificates != len(pooled) + load["tls_ingress_hosts"]:
        problems.append(f"{certificates} certificates, expected "
                        f"{len(pooled) + load['tls_ingress_hosts']}")  # fmt: skip
    want = {e for d in load["described"] if d["kind"] != "ready" for e in d["endpoints"]}
    want.update(load["ingress_endpoints"])
    if set(snapshot.endpoints) != want:
        problems.append(f"{len(snapshot.endpoints)} endpoint keys, expected {len(want)}")
    if any(len(e) != objects.ENDPOINTS_READY for e in snapshot.endpoints.values()):
        problems.append(f"an endpoint list is not {objects.ENDPOINTS_READY} long")
    if reasons := Counter(d.reason for d in result.diagnostics):
        problems.append(f"unexpected diagnostics {dict(reasons)}")
    harness.stop_unless_empty("SharedPool snapshot not as expected", problems)


def _check_scope(gateway: dict[str, Any], result: Any) -> None:
    """One Gateway scope: its own Gateway on its spec ports, its 10 routes, no Ingress."""
    snapshot = result.snapshot
    ref = f"{gateway['namespace']}/{gateway['name']}"
    tables = _tables(snapshot)
    health = snapshot.listener_health
    problems = []
    if snapshot.scope != GatewayScope(gateway["namespace"], gateway["name"]):
        problems.append(f"scope {snapshot.scope}")
    if others := ({t.gateway for t in tables} | {h.gateway for h in health}) - {ref}:
        problems.append(f"listeners of other Gateways {sorted(others)[:3]}")
    if sorted(snapshot.gateways) != [80, 443] or len(tables) != 2:
        problems.append(f"bind ports {sorted(snapshot.gateways)} ({len(tables)} tables)")
    if sorted((h.port, h.target_port, h.attached_routes, h.ready) for h in health) != [
        (80, 80, ROUTES_PER_GATEWAY, True),
        (443, 443, ROUTES_PER_GATEWAY, True),
    ]:
        problems.append(f"listener health {health}")
    want_entries = ROUTES_PER_GATEWAY * RULES_PER_ROUTE * 2
    if (entries := _entries(tables)) != want_entries:
        problems.append(f"{entries} listener-table entries, expected {want_entries}")
    routes = {
        rule.action.route.name for t in tables for rules in t.hosts.values() for rule in rules
    }
    if routes != set(gateway["routes"]):
        problems.append(f"rules of routes {sorted(routes)[:5]}, expected {gateway['routes'][:5]}")
    if snapshot.ingress.hosts:
        problems.append(f"{len(snapshot.ingress.hosts)} Ingress hosts, expected none")
    if {p: sorted(h) for p, h in snapshot.tls.items()} != {443: [gateway["hostname"]]}:
        problems.append(f"TLS store { ({p: sorted(h) for p, h in snapshot.tls.items()}) }")
    if sorted(snapshot.endpoints) != sorted(gateway["endpoints"]):
        problems.append(f"{len(snapshot.endpoints)} endpoint keys, "
                        f"expected {len(gateway['endpoints'])}")  # fmt: skip
    if reasons := Counter(d.reason for d in result.diagnostics):
        problems.append(f"unexpected diagnostics {dict(reasons)}")
    harness.stop_unless_empty(f"GatewayScope {ref} snapshot not as expected", problems)


def _check_statuses(load: dict[str, Any], statuses: Any) -> None:
    """Every Gateway Accepted and Programmed, every listener healthy, every route accepted,
    and one status per Ingress."""
    kinds = Counter(s.kind for s in statuses)
    want = Counter(
        GatewayClass=1,
        Gateway=load["gateways"],
        HTTPRoute=load["routes"],
        Ingress=load["ingresses"],
    )
    problems = [] if kinds == want else [f"statuses {dict(kinds)}, expected {dict(want)}"]
    for item in statuses:
        if item.kind == "Ingress":
            continue  # status.loadBalancer: empty without --status-address
        body = json.loads(item.body)
        conditions = [c for p in body.get("parents", ()) for c in p["conditions"]]
        conditions += body.get("conditions", [])
        listeners = [c for li in body.get("listeners", ()) for c in li["conditions"]]
        bad = [c["type"] for c in conditions if c["status"] != "True"]
        bad += [
            c["type"] for c in listeners if (c["status"] == "True") == (c["type"] == "Conflicted")
        ]
        if bad:
            problems.append(f"{item.kind} {item.namespace}/{item.name}: {bad} not as expected")
            break
    harness.stop_unless_empty("statuses not as expected", problems)


def _check_provisioned(load: dict[str, Any], desired: Any) -> None:
    """Shared: VIP Service + identity ServiceAccount. Dedicated: Deployment, Service,
    ServiceAccount, plus the VIP Service while the shared pool still serves it."""
    kinds = Counter(o.kind for o in desired.objects)
    dedicated = load["pending"] + load["ready"]
    want = Counter(
        Service=load["shared"] + load["pending"] + dedicated,
        ServiceAccount=load["shared"] + dedicated,
        Deployment=dedicated,
    )
    problems = [] if kinds == want else [f"objects {dict(kinds)}, expected {dict(want)}"]
    if desired.deletions:
        problems.append(f"{len(desired.deletions)} deletions, expected none")
    if reasons := Counter(d.reason for d in desired.diagnostics):
        problems.append(f"unexpected diagnostics {dict(reasons)}")
    harness.stop_unless_empty("provision not as expected", problems)


# --- measurement: one pass over every scope -----------------------------------------------------


def _scope_pass(state: Any, scopes: list[GatewayScope]) -> tuple[list[float], float, int, float]:
    """Compile every scope once, back to back as a controller would after a change, each call
    timed on its own: per-scope times, the wall time of the pass, full collections and the
    time spent in the collector during it."""
    gc.collect()
    clock = harness.GcClock()
    gc.callbacks.append(clock)
    times: list[float] = []
    start = time.perf_counter()
    for scope in scopes:
        began = time.perf_counter()
        compile_state(state, scope)
        times.append(time.perf_counter() - began)
    wall = time.perf_counter() - start
    gc.callbacks.remove(clock)
    return times, wall, clock.full, clock.total


# --- workers (each run in its own process) ------------------------------------------------------


def _world(gateways: int, tls_data: dict[str, str]) -> tuple[Any, list[Any], list[Any]]:
    """A built state, its dedicated Gateways' scopes, and the raw bodies (kept alive); every
    scope checked once, untimed."""
    load = workload(gateways, tls_data)
    bodies = load.pop("bodies")
    state = build_state(bodies)
    dedicated = [d for d in load["described"] if d["kind"] != "shared"]
    scopes = [GatewayScope(d["namespace"], d["name"]) for d in dedicated]
    for gateway, scope in zip(dedicated, scopes, strict=True):
        _check_scope(gateway, compile_state(state, scope))
    return state, scopes, bodies


def worker_growth(small: int, big: int, rounds: int) -> dict[str, Any]:
    """Both worlds in one process, their scope compiles alternated call by call (which goes
    first alternates too), so that drift in the machine's speed hits both alike.

    Each round pairs every scope of the big world with a scope of the small one (cycling)."""
    tls_data = objects.make_tls_data(TLS_SERIAL)
    small_state, small_scopes, small_bodies = _world(small, tls_data)
    big_state, big_scopes, big_bodies = _world(big, tls_data)
    times: dict[str, list[float]] = {"small": [], "big": []}
    frozen: dict[str, list[float]] = {"small": [], "big": []}
    for round_number in range(rounds + 1):
        last = round_number == rounds  # one more round after gc.freeze()
        into = frozen if last else times
        gc.collect()
        if last:
            gc.freeze()
        for j, big_scope in enumerate(big_scopes):
            calls = [
                ("small", small_state, small_scopes[j % len(small_scopes)]),
                ("big", big_state, big_scope),
            ]
            for name, state, scope in calls if j % 2 else calls[::-1]:
                began = time.perf_counter()
                compile_state(state, scope)
                into[name].append(time.perf_counter() - began)
        if last:
            gc.unfreeze()
    del small_bodies, big_bodies
    return {
        "small": small,
        "big": big,
        "small_scopes": len(small_scopes),
        "big_scopes": len(big_scopes),
        "scope_s": times,
        "frozen_scope_s": frozen,
    }


def worker(
    gateways: int,
    build_repeat: int,
    shared_repeat: int,
    scope_passes: int,
    status_repeat: int,
    provision_repeat: int,
) -> dict[str, Any]:
    rss_start = harness.rss_bytes()
    load = workload(gateways, objects.make_tls_data(TLS_SERIAL))
    bodies = load.pop("bodies")  # kept alive, as an informer cache keeps its objects
    described = load.pop("described")
    rss_inputs = harness.rss_bytes()
    build_times, _, state = harness.timed(lambda: build_state(bodies), build_repeat)
    shared_times, _, result = harness.timed(
        lambda: compile_state(state, SharedPool()), shared_repeat
    )
    _check_shared({**load, "described": described}, result)
    del result
    dedicated = [d for d in described if d["kind"] != "shared"]
    scopes = [GatewayScope(d["namespace"], d["name"]) for d in dedicated]
    # Every scope is checked once, untimed, before any timing counts.
    for gateway, scope in zip(dedicated, scopes, strict=True):
        _check_scope(gateway, compile_state(state, scope))
    passes = [_scope_pass(state, scopes) for _ in range(scope_passes)]
    with harness.gc_frozen():
        frozen = _scope_pass(state, scopes)
    scope_peak, _, _ = harness.traced(lambda: compile_state(state, scopes[len(scopes) // 2]))
    status_times, _, statuses = harness.timed(lambda: status_of(state), status_repeat)
    _check_statuses(load, statuses)
    del statuses
    config = CompileConfig()
    provision_times, _, desired = harness.timed(lambda: provision(state, config), provision_repeat)
    _check_provisioned(load, desired)
    del desired
    load.pop("ingress_endpoints")
    return {
        **load,
        "scopes": len(scopes),
        "build_s": build_times,
        "shared_s": shared_times,
        "scope_s": [t for p in passes for t in p[0]],
        "pass_s": [p[1] for p in passes],
        "pass_full_gcs": [p[2] for p in passes],
        "pass_gc_s": [p[3] for p in passes],
        "frozen_scope_s": frozen[0],
        "frozen_pass_s": frozen[1],
        "scope_peak_bytes": scope_peak,
        "status_s": status_times,
        "provision_s": provision_times,
        "rss_start_bytes": rss_start,
        "rss_inputs_bytes": rss_inputs,
        "rss_after_bytes": harness.rss_bytes(),
        "max_rss_bytes": harness.max_rss_bytes(),
    }


# --- report -------------------------------------------------------------------------------------


def _spread(values: list[float]) -> str:
    """``median / p99 / max`` in ms."""
    return harness.spread(values, digits=2)


def report(runs: list[dict[str, Any]], growth: dict[str, Any], quick: bool) -> None:
    print()
    print("World")
    columns = [
        ("gw", 5), ("shared", 6), ("pending", 7), ("ready", 5), ("ns", 3), ("routes", 6),
        ("rules", 7), ("ingr", 4), ("svc", 6), ("objects", 7),
    ]  # fmt: skip
    rows = [
        [
            c["gateways"], c["shared"], c["pending"], c["ready"], c["namespaces"], c["routes"],
            c["rules"], c["ingresses"], c["services"], c["objects"],
        ]
        for c in runs
    ]  # fmt: skip
    harness.print_table(columns, rows)
    print(
        "  pending: dedicated, Deployment not ready (still in the shared pool); ready: dedicated,\n"
        "  Deployment ready (out of the pool). svc: Services with an EndpointSlice each."
    )
    print()
    print("Whole-world calls. ms: median (best)")
    columns = [
        ("gw", 5), ("build_state", 19), ("compile(SharedPool)", 19), ("status", 19),
        ("provision", 19), ("RSS MB", 7), ("maxRSS", 7),
    ]  # fmt: skip
    rows = [
        [
            c["gateways"], harness.med_best(c["build_s"]), harness.med_best(c["shared_s"]),
            harness.med_best(c["status_s"]), harness.med_best(c["provision_s"]),
            f"{c['rss_after_bytes'] / harness.MB:,.0f}", f"{c['max_rss_bytes'] / harness.MB:,.0f}",
        ]
        for c in runs
    ]  # fmt: skip
    harness.print_table(columns, rows)
    runs_text = ", ".join(
        f"{c['gateways']}: {len(c['build_s'])}/{len(c['shared_s'])}/{len(c['status_s'])}"
        f"/{len(c['provision_s'])}"
        for c in runs
    )
    print(
        f"  runs (build_state/compile/status/provision): {runs_text}. RSS: resident at the end,\n"
        "  raw inputs and state held (MB, 10^6 bytes); maxRSS: high-water mark."
    )
    print()
    print("Gateway scopes: compile(state, GatewayScope(ns, name)), every dedicated Gateway.")
    columns = [
        ("gw", 5), ("scopes", 6), ("calls", 6), ("per scope ms: med / p99 / max", 30),
        ("pass ms", 15), ("full gc", 7), ("gc ms", 6), ("frozen: med / p99 / max", 24),
        ("peak KB", 7),
    ]  # fmt: skip
    rows = [
        [
            c["gateways"], c["scopes"], len(c["scope_s"]), _spread(c["scope_s"]),
            harness.med_best(c["pass_s"], 1e3, 0), max(c["pass_full_gcs"]),
            f"{statistics.median(c['pass_gc_s']) * 1e3:.1f}", _spread(c["frozen_scope_s"]),
            f"{c['scope_peak_bytes'] / 1000:,.0f}",
        ]
        for c in runs
    ]  # fmt: skip
    harness.print_table(columns, rows)
    print(
        "  calls: scopes x passes, each call timed on its own, GC enabled. pass: one compile of\n"
        "  every dedicated Gateway's scope, back to back (median (best) over passes). full gc:\n"
        "  most full collections in a pass; gc ms: collector time in a pass (median). frozen:\n"
        "  one more pass after gc.freeze() of inputs and state. peak: tracemalloc peak of one\n"
        "  scope's compile."
    )
    print()
    print("Growth: per-scope compile, both worlds in one process, calls alternated one by one.")
    columns = [
        ("gw", 5), ("scopes", 6), ("calls", 6), ("per scope ms: med / p99 / max", 30),
        ("frozen: med / p99 / max", 24),
    ]  # fmt: skip
    rows = [
        [
            growth[name], growth[name + "_scopes"], len(growth["scope_s"][name]),
            _spread(growth["scope_s"][name]), _spread(growth["frozen_scope_s"][name]),
        ]
        for name in ("small", "big")
    ]  # fmt: skip
    harness.print_table(columns, rows)
    ratios = _growth_ratios(growth)
    print(
        f"  ratio big / small: {ratios['medians']:.2f} (of the medians), {ratios['pairs']:.2f}\n"
        f"  (median of per-pair ratios), {ratios['frozen']:.2f} (after gc.freeze()). Each scope\n"
        "  of the big world is paired with one of the small world (cycling); which one is called\n"
        "  first alternates. frozen: one more round after gc.freeze() of inputs and states."
    )
    print()
    print("Targets")
    big = next((c for c in runs if c["gateways"] == TARGET_GATEWAYS), None)
    small = next((c for c in runs if c["gateways"] == GROWTH_FROM), None)
    sizes = (growth["small"], growth["big"])
    if quick or big is None or small is None or sizes != (GROWTH_FROM, TARGET_GATEWAYS):
        harness.print_skipped_targets()
        return
    median = statistics.median(big["scope_s"])
    p99 = harness.percentile(big["scope_s"], 0.99)
    apart = median / statistics.median(small["scope_s"])
    lines = [
        (median < SCOPE_TARGET_S, f"one Gateway scope at {TARGET_GATEWAYS:,} Gateways < "
         f"{SCOPE_TARGET_S * 1e3:g} ms: median {median * 1e3:.2f} ms over "
         f"{len(big['scope_s']):,} calls ({big['scopes']} scopes)"),
        (p99 < SCOPE_TARGET_S, f"one Gateway scope at {TARGET_GATEWAYS:,} Gateways, p99 < "
         f"{SCOPE_TARGET_S * 1e3:g} ms: p99 {p99 * 1e3:.2f} ms (max {max(big['scope_s']) * 1e3:.2f}"
         " ms)"),
        (ratios["medians"] <= SAME_RATIO, f"per-scope time flat from {GROWTH_FROM:,} to "
         f"{TARGET_GATEWAYS:,} Gateways (ratio of medians, alternated calls, <= {SAME_RATIO:g}): "
         f"{ratios['medians']:.2f}"),
    ]  # fmt: skip
    harness.print_targets(lines)
    print(
        f"info  the same ratio from the two separate processes above: {apart:.2f} (machine drift "
        "between them included)"
    )
    print(
        f"info  at {TARGET_GATEWAYS:,} Gateways: all {big['scopes']} scopes in "
        f"{statistics.median(big['pass_s']):.2f} s; SharedPool ({big['shared'] + big['pending']} "
        f"Gateways, {big['ingresses']} Ingresses) {statistics.median(big['shared_s']):.2f} s; "
        f"status {statistics.median(big['status_s']):.2f} s; "
        f"provision {statistics.median(big['provision_s']):.2f} s"
    )


def _growth_ratios(growth: dict[str, Any]) -> dict[str, float]:
    times, frozen = growth["scope_s"], growth["frozen_scope_s"]
    return {
        "medians": statistics.median(times["big"]) / statistics.median(times["small"]),
        "pairs": statistics.median(
            b / s for b, s in zip(times["big"], times["small"], strict=True)
        ),
        "frozen": statistics.median(frozen["big"]) / statistics.median(frozen["small"]),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = harness.parse_args(__doc__, argv)
    if args.worker:
        harness.answer_worker(args.worker, {"size": worker, "growth": worker_growth})
        return 0
    # (Gateways, build_state runs, SharedPool compiles, scope passes, status runs, provision runs)
    # Growth: (small world, big world, rounds of alternated calls).
    if args.quick:
        plan = [(4, 1, 1, 2, 1, 1), (8, 1, 1, 2, 1, 1)]
        growth_plan = (4, 8, 2)
    else:
        plan = [(GROWTH_FROM, 3, 3, 5, 3, 3), (TARGET_GATEWAYS, 1, 2, 3, 1, 1)]
        growth_plan = (GROWTH_FROM, TARGET_GATEWAYS, 2)
    with harness.session(__file__, argv):
        runs = harness.run_workers(__file__, "size", plan, lambda entry: f"{entry[0]:,} Gateways")
        print(f"  growth: {growth_plan[0]:,} and {growth_plan[1]:,} Gateways ...", flush=True)
        growth = harness.run_worker(__file__, ["growth", *map(str, growth_plan)])
        report(runs, growth, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
