"""Benchmark: ``coxswain serve`` following its folder: a new route file, a one-file edit.

Run from the repository root::

    .venv/bin/python bench/serve.py            # full run (several minutes)
    .venv/bin/python bench/serve.py --quick    # tiny sizes: a smoke run
    .venv/bin/python bench/serve.py --only "new Ingress" --only "new HTTPRoute"  # some changes

``coxswain serve --manifests DIR`` runs as a subprocess (bound to 127.0.0.9, as the shared
pool's internal ports are fixed; its log in a temporary folder) over a folder of routes, one
route a file, every rule to one echo backend (a threaded HTTP server in this process, 200 to
every GET). Another file holds its Service and EndpointSlice, the default IngressClass, and a
GatewayClass of Coxswain's with the Gateway ``web`` (one HTTP listener, port 80: the shared
pool serves it on internal port 30000).

1. ``new Ingress`` and ``new HTTPRoute``: 1,000 routes (Ingresses, or HTTPRoutes on ``web``)
   of one path each; once all are served, 20 times: a new file with one more route (host
   ``new-<n>.bench.test``) is written (to a temporary name, then renamed, as editors and
   ``kubectl cp`` do) and the clock runs until ``GET /`` with that host answers 200 through the
   proxy (asked every 5 ms on a fresh connection). Target: p99 < 200 ms.
2. ``HTTPRoute edit``: 10,000 HTTPRoutes of 10 rules (100,000 rules); once all are served, 5
   times: one file is rewritten with its first rule's path renamed to ``/edited-<n>``, and the
   clock runs until that path answers 200. Target: each < 1 s.

Figures: p50 / p99 / max, nearest-rank; the cold start (serve started → the last Ingress
written is served) and serve's peak RSS (VmHWM) are printed as info. The machine has 2 shared
cores: serve, the echo backend and this script share them. Exits 0 whatever the figures,
non-zero only when it breaks.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import api_objects as objects
import harness
import processes
import yaml
from controller import echo_backend, proc_status

if TYPE_CHECKING:
    import argparse

# change: (routes, paths a route, changes)
SIZES = {"new Ingress": (1_000, 1, 20), "new HTTPRoute": (1_000, 1, 20),
         "HTTPRoute edit": (10_000, 10, 5)}  # fmt: skip
QUICK_SIZES = {"new Ingress": (20, 1, 3), "new HTTPRoute": (20, 1, 3),
               "HTTPRoute edit": (20, 10, 2)}  # fmt: skip
TARGETS_S = {"new Ingress": 0.200, "new HTTPRoute": 0.200, "HTTPRoute edit": 1.0}
NAMESPACE = "bench"
ADDRESS = "127.0.0.9"
GATEWAY_PORT = 30000  # the shared pool's first internal port: the Gateway's one listener
GATEWAY_CONTROLLER = "coxswain-labs.dev/gateway-controller"  # CompileConfig's default
COLD_TIMEOUT_S = 900.0
CHANGE_TIMEOUT_S = 60.0


def host(name: str) -> str:
    return f"{name}.bench.test"


def ingress(name: str, paths: list[str]) -> dict[str, Any]:
    """An Ingress for ``<name>.bench.test``: each of ``paths`` (Prefix) to the echo Service."""
    backend = {"service": {"name": "echo", "port": {"number": 80}}}
    http_paths = [{"path": p, "pathType": "Prefix", "backend": backend} for p in paths]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"rules": [{"host": host(name), "http": {"paths": http_paths}}]},
    }


def httproute(name: str, paths: list[str]) -> dict[str, Any]:
    """An HTTPRoute on ``web`` for ``<name>.bench.test``: a rule per path (PathPrefix)."""
    rules = [{"matches": [objects.path_match("PathPrefix", p)],
              "backendRefs": [{"name": "echo", "port": 80}]} for p in paths]  # fmt: skip
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"parentRefs": [{"name": "web"}], "hostnames": [host(name)], "rules": rules},
    }


def cluster(echo: int) -> list[dict[str, Any]]:
    """Everything but the routes: classes, the Gateway, the echo Service and its slice."""
    endpoints = [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]
    listener = {"name": "http", "port": 80, "protocol": "HTTP"}
    return [
        objects.default_ingress_class(),
        objects.gateway_class("coxswain", GATEWAY_CONTROLLER),
        objects.api_object("gateway.networking.k8s.io/v1", "Gateway", NAMESPACE, "web",
                           {"gatewayClassName": "coxswain", "listeners": [listener]},
                           uid="bench-web", created=0),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        *objects.service_and_slice(NAMESPACE, "echo", cluster_ip="10.96.0.10",
                                   target_port=echo, endpoints=endpoints),
    ]  # fmt: skip


def paths_of(count: int, edited: int | None = None) -> list[str]:
    first = [f"/edited-{edited}"] if edited is not None else ["/p0"]
    return first + [f"/p{i}" for i in range(1, count)]


def write(folder: Path, name: str, body: object) -> None:
    """Write ``name`` whole, by a rename: a look never sees half a file."""
    scratch = folder / f".{name}.tmp"
    scratch.write_text(yaml.safe_dump_all(body if isinstance(body, list) else [body]))
    os.replace(scratch, folder / name)


def answers(port: int, hostname: str, path: str) -> bool:
    try:
        status, _ = processes.http_get(ADDRESS, port, path, hostname, timeout=5)
    except OSError:
        return False
    return status == 200


def measure(kind: str, routes: int, paths: int, changes: int) -> dict[str, Any]:
    """One ``serve`` over a fresh folder; see the module doc."""
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as scratch, echo_backend() as echo:
        root = Path(scratch)
        folder = root / "manifests"
        folder.mkdir()
        write(folder, "cluster.yaml", cluster(echo))
        route = ingress if kind == "new Ingress" else httproute
        for i in range(routes):
            write(folder, f"r-{i:05d}.yaml", route(f"r-{i}", paths_of(paths)))
        ingress_port = processes.free_port()
        port = ingress_port if kind == "new Ingress" else GATEWAY_PORT
        command = [sys.executable, "-m", "coxswain", "serve", "--manifests", str(folder),
                   "--bind", ADDRESS, "--ingress-http-port", str(ingress_port),
                   "--ingress-https-port", str(processes.free_port()),
                   "--admin-port", "0"]  # fmt: skip
        with processes.Fleet(root) as fleet:
            started = time.monotonic()
            serve = fleet.start("serve", command, cwd=Path.cwd())
            last = f"r-{routes - 1}"
            processes.wait_until(lambda: answers(port, host(last), "/p0"), "the cold start",
                                 timeout=COLD_TIMEOUT_S, every=0.1, fleet=fleet)  # fmt: skip
            cold_s = time.monotonic() - started
            times = []
            for n in range(changes):
                if kind.startswith("new"):
                    name, path = f"new-{n}", "/p0"
                    body = route(name, paths_of(paths))
                    file = f"new-{n:05d}.yaml"
                else:
                    number = (n * 7919) % routes
                    name, path = f"r-{number}", f"/edited-{n}"
                    body = route(name, paths_of(paths, edited=n))
                    file = f"r-{number:05d}.yaml"
                changed = time.monotonic()
                write(folder, file, body)
                processes.wait_until(lambda: answers(port, host(name), path),  # noqa: B023
                                     f"{kind} {n}", timeout=CHANGE_TIMEOUT_S, every=0.005,
                                     fleet=fleet)  # fmt: skip
                times.append(time.monotonic() - changed)
            peak = proc_status(serve.pid).get("VmHWM")
    return {"kind": kind, "routes": routes, "paths": paths, "cold_s": cold_s,
            "change_s": times, "peak_bytes": peak}  # fmt: skip


def report(runs: list[dict[str, Any]], quick: bool) -> None:
    print("\nserve following its folder: change written → served (200). ms: p50 / p99 / max")
    columns = [("change", 14), ("routes", 7), ("paths", 7), ("changes", 7),
               ("written → 200", 24), ("cold start s", 12), ("VmHWM MB", 8)]  # fmt: skip
    harness.print_table(columns, [
        [r["kind"], f"{r['routes']:,}", f"{r['routes'] * r['paths']:,}",
         len(r["change_s"]), harness.spread(r["change_s"], 1), f"{r['cold_s']:.1f}",
         harness.mb(r["peak_bytes"])] for r in runs])  # fmt: skip
    print("\nTargets")
    if quick:
        harness.print_skipped_targets()
        return
    lines = []
    for run in runs:
        target = TARGETS_S[run["kind"]]
        p99 = harness.percentile(run["change_s"], 0.99)
        lines.append((p99 < target,
                      f"{run['kind']} at {run['routes'] * run['paths']:,} paths, p99 < "
                      f"{target * 1e3:g} ms: {p99 * 1e3:,.0f} ms"))  # fmt: skip
    harness.print_targets(lines)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", action="append", choices=sorted(SIZES),
                        help="run only this change (repeatable)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = harness.parse_args(__doc__, argv, _options)
    sizes = QUICK_SIZES if args.quick else SIZES
    if args.only:
        sizes = {kind: size for kind, size in sizes.items() if kind in args.only}
    with harness.session(__file__, argv):
        runs = []
        for kind, (routes, paths, changes) in sizes.items():
            print(f"  {kind}, {routes:,} routes of {paths} path(s) ...", flush=True)
            runs.append(measure(kind, routes, paths, changes))
        report(runs, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
