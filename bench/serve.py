"""Benchmark: ``coxswain serve`` following its folder: a new route file, a one-file edit.

Run from the repository root::

    .venv/bin/python bench/serve.py            # full run (several minutes)
    .venv/bin/python bench/serve.py --quick    # tiny sizes: a smoke run

``coxswain serve --manifests DIR`` runs as a subprocess (its Ingress HTTP port on 127.0.0.1,
its log in a temporary folder) over a folder of Ingress manifests, one Ingress a
file, every path to one echo backend (a threaded HTTP server in this process, 200 to every
GET; its Service and EndpointSlice in a file of their own), with the default IngressClass.

1. ``new route``: 1,000 Ingresses of one path in 1,001 files; once all are served, 20 times:
   a new file with one more Ingress (host ``new-<n>.bench.test``) is written (to a temporary
   name, then renamed, as editors and ``kubectl cp`` do) and the clock runs until ``GET /`` with
   that host answers 200 through the proxy (asked every 5 ms on a fresh connection).
   Target: p99 < 200 ms.
2. ``one-file edit``: 10,000 Ingresses of 10 paths (100,000 paths) in 10,001 files; once all
   are served, 5 times: one file is rewritten with its first path renamed to ``/edited-<n>``,
   and the clock runs until that path answers 200. Target: each < 1 s.

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
from typing import Any

import api_objects as objects
import harness
import processes
import yaml
from controller import echo_backend, proc_status

SIZES = {"new route": (1_000, 1, 20), "one-file edit": (10_000, 10, 5)}
QUICK_SIZES = {"new route": (20, 1, 3), "one-file edit": (20, 10, 2)}
TARGETS_S = {"new route": 0.200, "one-file edit": 1.0}
NAMESPACE = "bench"
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
        status, _ = processes.http_get("127.0.0.1", port, path, hostname, timeout=5)
    except OSError:
        return False
    return status == 200


def measure(kind: str, ingresses: int, paths: int, changes: int) -> dict[str, Any]:
    """One ``serve`` over a fresh folder; see the module doc."""
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as scratch, echo_backend() as echo:
        root = Path(scratch)
        folder = root / "manifests"
        folder.mkdir()
        endpoints = [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]
        write(folder, "backend.yaml", [
            objects.default_ingress_class(),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            *objects.service_and_slice(NAMESPACE, "echo", cluster_ip="10.96.0.10",
                                       target_port=echo, endpoints=endpoints),
        ])  # fmt: skip
        for i in range(ingresses):
            write(folder, f"r-{i:05d}.yaml", ingress(f"r-{i}", paths_of(paths)))
        port = processes.free_port()
        command = [sys.executable, "-m", "coxswain", "serve", "--manifests", str(folder),
                   "--bind", "127.0.0.1", "--ingress-http-port", str(port),
                   "--ingress-https-port", str(processes.free_port()),
                   "--admin-port", "0"]  # fmt: skip
        with processes.Fleet(root) as fleet:
            started = time.monotonic()
            serve = fleet.start("serve", command, cwd=Path.cwd())
            last = f"r-{ingresses - 1}"
            processes.wait_until(lambda: answers(port, host(last), "/p0"), "the cold start",
                                 timeout=COLD_TIMEOUT_S, every=0.1, fleet=fleet)  # fmt: skip
            cold_s = time.monotonic() - started
            times = []
            for n in range(changes):
                if kind == "new route":
                    name, path = f"new-{n}", "/p0"
                    body = ingress(name, paths_of(paths))
                    file = f"new-{n:05d}.yaml"
                else:
                    number = (n * 7919) % ingresses
                    name, path = f"r-{number}", f"/edited-{n}"
                    body = ingress(name, paths_of(paths, edited=n))
                    file = f"r-{number:05d}.yaml"
                changed = time.monotonic()
                write(folder, file, body)
                processes.wait_until(lambda: answers(port, host(name), path),  # noqa: B023
                                     f"{kind} {n}", timeout=CHANGE_TIMEOUT_S, every=0.005,
                                     fleet=fleet)  # fmt: skip
                times.append(time.monotonic() - changed)
            peak = proc_status(serve.pid).get("VmHWM")
    return {"kind": kind, "ingresses": ingresses, "paths": paths, "cold_s": cold_s,
            "change_s": times, "peak_bytes": peak}  # fmt: skip


def report(runs: list[dict[str, Any]], quick: bool) -> None:
    print("\nserve following its folder: change written → served (200). ms: p50 / p99 / max")
    columns = [("change", 14), ("Ingresses", 9), ("paths", 7), ("changes", 7),
               ("written → 200", 24), ("cold start s", 12), ("VmHWM MB", 8)]  # fmt: skip
    harness.print_table(columns, [
        [r["kind"], f"{r['ingresses']:,}", f"{r['ingresses'] * r['paths']:,}",
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
                      f"{run['kind']} at {run['ingresses'] * run['paths']:,} paths, p99 < "
                      f"{target * 1e3:g} ms: {p99 * 1e3:,.0f} ms"))  # fmt: skip
    harness.print_targets(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = harness.parse_args(__doc__, argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    with harness.session(__file__, argv):
        runs = []
        for kind, (ingresses, paths, changes) in sizes.items():
            print(f"  {kind}, {ingresses:,} Ingresses of {paths} path(s) ...", flush=True)
            runs.append(measure(kind, ingresses, paths, changes))
        report(runs, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
