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

import argparse
import base64
import datetime as dt
import gc
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from coxswain.compile.api import compile as compile_state
from coxswain.compile.model.state import build_state
from coxswain.compile.scope import SharedPool
from coxswain.route.request import RequestHead
from coxswain.route.select import select
from coxswain.route.table import build_table

CONTROLLER = "coxswain-labs.dev/ingress-controller"  # CompileConfig's default
PATHS_PER_HOST = 10
SELECT_PATHS_PER_HOST = 5  # so that the 10-path table still has an exact and a wildcard host
ENDPOINTS_READY = 3
ENDPOINTS_NOT_READY = 1

# Targets (from the task that introduced this benchmark).
COMPILE_TARGET_S = 1.0  # compile of 10,000 paths
MEMORY_TARGET_MB = 100.0  # tracemalloc peak during the compile of 10,000 paths
SELECT_TARGET_US = 20.0  # per request, at 10 and at 10,000 paths
SELECT_SAME_RATIO = 1.25  # "the same": 10,000-path figure within 25% of the 10-path figure

MB = 1_000_000

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


def _make_tls_data() -> dict[str, str]:
    """One self-signed EC P-256 certificate for *.example.com, as a Secret's ``data``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "*.example.com")])
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1000)
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=3650))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("*.example.com"), x509.DNSName("example.com")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return {
        "tls.crt": base64.b64encode(chain).decode(),
        "tls.key": base64.b64encode(key_pem).decode(),
    }


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
    bodies: list[dict[str, Any]] = [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {
                "name": "coxswain",
                "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
            },
            "spec": {"controller": CONTROLLER},
        }
    ]
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
                bodies.extend(_service_bodies(namespace, service, host_index * 100 + slot))
                counts["Service"] += 1
                counts["EndpointSlice"] += 1
            rules.append({"host": host, "http": {"paths": http_paths}})
        spec: dict[str, Any] = {"rules": rules}
        if number % 4 != 3:  # every fourth Ingress relies on the default class
            spec["ingressClassName"] = "coxswain"
        if tls_hosts:
            secret = f"{name}-tls"
            spec["tls"] = [{"hosts": tls_hosts, "secretName": secret}]
            bodies.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": secret, "namespace": namespace},
                    "type": "kubernetes.io/tls",
                    "data": dict(tls_data),
                }
            )
            counts["Secret"] += 1
        created = dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=number)
        bodies.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": f"uid-{number}",
                    "generation": 1,
                    "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
                "spec": spec,
            }
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


def _service_bodies(namespace: str, service: str, seed: int) -> list[dict[str, Any]]:
    base = f"10.{(seed >> 14) % 256}.{(seed >> 6) % 256}"
    endpoints = [
        {
            "addresses": [f"{base}.{(seed % 64) * 4 + i}"],
            "conditions": {"ready": i < ENDPOINTS_READY},
        }
        for i in range(ENDPOINTS_READY + ENDPOINTS_NOT_READY)
    ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": f"172.20.{(seed >> 8) % 256}.{seed % 256}",
                "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service}-abcde",
                "namespace": namespace,
                "labels": {"kubernetes.io/service-name": service},
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": endpoints,
        },
    ]


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
    if any(len(e) != ENDPOINTS_READY for e in snapshot.endpoints.values()):
        problems.append(f"an endpoint list is not {ENDPOINTS_READY} long")
    if any(not r.backend.valid for v in hosts.values() for r in v.paths):
        problems.append("an invalid backend")
    reasons = Counter(d.reason for d in result.diagnostics)
    if reasons:
        problems.append(f"unexpected diagnostics {dict(reasons)}")
    if problems:
        raise SystemExit("workload did not compile as expected: " + "; ".join(problems))


# --- measurement helpers ------------------------------------------------------------------------


def _proc_status(field: str) -> int | None:
    """A ``VmRSS``-style field of /proc/self/status, in bytes (None off Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _rss_bytes() -> int:
    """Current resident set size."""
    return _proc_status("VmRSS") or _max_rss_bytes()


def _max_rss_bytes() -> int:
    """Peak resident set size of this process so far."""
    found = _proc_status("VmHWM")
    if found is not None:
        return found
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class _GcClock:
    """Time spent in the cyclic garbage collector, through ``gc.callbacks``."""

    def __init__(self) -> None:
        self.total = 0.0
        self.full = 0  # collections of the oldest generation
        self.cpu = 0.0  # CPU time of the whole run (set by _timed)
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start
            self.full += info["generation"] == 2


def _timed(function: Any, repeat: int) -> tuple[list[float], list[_GcClock], Any]:
    """Run ``function`` ``repeat`` times: wall times, the gc clock of each run, last value."""
    times: list[float] = []
    in_gc: list[_GcClock] = []
    value = None
    for _ in range(repeat):
        value = None
        gc.collect()
        clock = _GcClock()
        gc.callbacks.append(clock)
        cpu, start = time.process_time(), time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
        clock.cpu = time.process_time() - cpu
        gc.callbacks.remove(clock)
        in_gc.append(clock)
    return times, in_gc, value


def _traced(function: Any) -> tuple[int, int, Any]:
    """Bytes traced by tracemalloc while ``function`` runs: the peak, what is still held at the
    end (mostly the returned value), and the value."""
    gc.collect()
    tracemalloc.start()
    try:
        value = function()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, held, value


# --- workers (each run in its own process) ------------------------------------------------------


def worker_compile(paths: int, build_repeat: int, compile_repeat: int) -> dict[str, Any]:
    rss_start = _rss_bytes()
    load = workload(paths, PATHS_PER_HOST, _make_tls_data())
    bodies = load.pop("bodies")  # kept alive, as an informer cache keeps its objects
    rss_inputs = _rss_bytes()
    build_times, build_gc, state = _timed(lambda: build_state(bodies), build_repeat)
    compile_times, compile_gc, result = _timed(
        lambda: compile_state(state, SharedPool()), compile_repeat
    )
    _check_compiled(load, result)
    rss_after = _rss_bytes()
    max_rss = _max_rss_bytes()
    del result
    del state
    build_peak, state_held, state = _traced(lambda: build_state(bodies))
    compile_peak, result_held, _ = _traced(lambda: compile_state(state, SharedPool()))
    # The same compile once the long-lived objects (inputs, state) are moved out of the
    # collector's reach with gc.freeze(), as a controller could do after each sync.
    gc.collect()
    gc.freeze()
    frozen_times, frozen_gc, _ = _timed(lambda: compile_state(state, SharedPool()), compile_repeat)
    gc.unfreeze()
    return {
        **load,
        "build_s": build_times,
        "build_gc_s": [c.total for c in build_gc],
        "compile_s": compile_times,
        "compile_gc_s": [c.total for c in compile_gc],
        "compile_cpu_s": [c.cpu for c in compile_gc],
        "compile_full_gcs": [c.full for c in compile_gc],
        "frozen_s": frozen_times,
        "frozen_gc_s": [c.total for c in frozen_gc],
        "frozen_full_gcs": [c.full for c in frozen_gc],
        "build_peak_bytes": build_peak,
        "state_held_bytes": state_held,
        "compile_peak_bytes": compile_peak,
        "result_held_bytes": result_held,
        "rss_start_bytes": rss_start,
        "rss_inputs_bytes": rss_inputs,
        "rss_after_bytes": rss_after,
        "max_rss_bytes": max_rss,
    }


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
    load = workload(paths, SELECT_PATHS_PER_HOST, _make_tls_data())
    result = compile_state(build_state(load.pop("bodies")), SharedPool())
    _check_compiled(load, result)
    times, _, table = _timed(lambda: build_table(result.snapshot), 3)
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


def _run_worker(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", *args], check=True, capture_output=True, text=True
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


# --- report -------------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _mb(count: int) -> str:
    return f"{count / MB:.1f}"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _med_best(values: list[float], scale: float, digits: int) -> str:
    return f"{statistics.median(values) * scale:.{digits}f} ({min(values) * scale:.{digits}f})"


def report(compiles: list[dict[str, Any]], select_run: dict[str, Any], quick: bool) -> None:
    print()
    print("Compile (Ingress). Times in ms: median (best); memory in MB (10^6 bytes).")
    print(
        f"{'paths':>6} {'hosts':>5} {'ingr':>4} {'ns':>3} {'objects':>7} "
        f"{'build_state':>15} {'compile':>15} {'gc':>5} {'frozen':>13} "
        f"{'build pk':>8} {'compile pk':>10} {'RSS':>6} {'maxRSS':>6}"
    )
    for c in compiles:
        print(
            f"{c['paths']:>6} {c['hosts']:>5} {c['ingresses']:>4} {c['namespaces']:>3} "
            f"{c['objects']:>7} {_med_best(c['build_s'], 1e3, 1):>15} "
            f"{_med_best(c['compile_s'], 1e3, 1):>15} "
            f"{statistics.median(c['compile_gc_s']) * 1e3:>5.1f} "
            f"{_med_best(c['frozen_s'], 1e3, 1):>13} "
            f"{_mb(c['build_peak_bytes']):>8} {_mb(c['compile_peak_bytes']):>10} "
            f"{_mb(c['rss_after_bytes']):>6} {_mb(c['max_rss_bytes']):>6}"
        )
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
    print(
        f"{'config':>8} {'paths':>6} {'hosts':>5} {'requests':>8} {'median (best)':>13} "
        f"{'table ms':>8} " + " ".join(f"{k:>11}" for k in kinds)
    )
    total = select_run["requests"]
    for name, info in select_run["configs"].items():
        per = select_run["per_request_s"][name]
        kind_times = select_run["per_kind_s"].get(name)
        cells = (
            " ".join(f"{kind_times[k] * 1e6:>11.2f}" for k in kinds)
            if kind_times
            else " ".join(f"{'-':>11}" for _ in kinds)
        )
        print(
            f"{name:>8} {info['paths']:>6} {info['hosts']:>5} {total:>8} "
            f"{_med_best(per, 1e6, 2):>13} {info['build_table_s'] * 1e3:>8.1f} {cells}"
        )
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
        print("SKIP  all targets: --quick does not run the target sizes")
        return
    compile_s = statistics.median(big["compile_s"])
    peak = big["compile_peak_bytes"] / MB
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
    for ok, text in lines:
        print(f"{_verdict(ok)}  {text}")
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


def _git_version() -> str:
    """``git describe --always --dirty`` of the checkout being measured, if git is there."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        kind, *numbers = args.worker
        values = [int(n) for n in numbers]
        data = worker_compile(*values) if kind == "compile" else worker_select(*values)
        json.dump(data, sys.stdout)
        return 0
    if args.quick:
        compile_plan = [(10, 2, 2), (100, 2, 2)]
        select_plan = (10, 100, 200, 2, 1)
    else:
        compile_plan = [(100, 15, 30), (1_000, 7, 15), (10_000, 3, 7)]
        select_plan = (10, 10_000, 10_000, 20, 1)
    print(
        f"bench/compile_ingress.py{' --quick' if args.quick else ''}: "
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit {_git_version()}"
    )
    load_before = _load_average()
    started = time.perf_counter()
    compiles = []
    for paths, build_repeat, compile_repeat in compile_plan:
        print(f"  compile: {paths} paths ...", flush=True)
        compiles.append(
            _run_worker(["compile", str(paths), str(build_repeat), str(compile_repeat)])
        )
    print(f"  select: {select_plan[0]} and {select_plan[1]} paths ...", flush=True)
    select_run = _run_worker(["select", *map(str, select_plan)])
    report(compiles, select_run, args.quick)
    print(
        f"\n(total {time.perf_counter() - started:.0f} s; load average before {load_before}, "
        f"after {_load_average()})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
