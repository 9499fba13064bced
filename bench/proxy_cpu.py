"""Benchmark: the proxy's CPU per request under a closed-loop client, versions served at once.

Run from the repository root::

    .venv/bin/python bench/proxy_cpu.py --build both .          # interpreted against compiled
    .venv/bin/python bench/proxy_cpu.py --rounds 10 HEAD~1 HEAD
    .venv/bin/python bench/proxy_cpu.py --routes 10 10000 .     # the route table's size

Why beside ``bench/proxy_ab.py`` and ``bench/proxy_instructions.py``: instructions are steady
but do not weigh what they cost (the compiled codec removes 12% of them and less of the
time), and ``proxy_ab.py`` restarts each version every round under ``wrk``, whose rate moves
with the host more than most changes move the proxy. Here every version serves at once, warm,
and the same closed-loop client (``proxy_instructions.drive``: ``--connections`` keep-alive
connections, one request on each per turn, every response read and checked) sends
``--requests`` to each in turn, the order reversed every round; the proxy's user + system
CPU is read from /proc around each run (``proxy.tree_cpu_s``). Versions are revisions (``.``
the working tree) in the builds ``--build`` asks for, checked out as ``bench/proxy_ab.py``
does; with several ``--routes`` sizes each version serves each size (a snapshot compiled as
``bench/proxy.py`` compiles it, requests to the host in the middle of the table). The client
runs in this process on the same two cores, so req/s is the pair's, not
the proxy's alone; CPU per request is the figure. Needs nginx (the backend). No targets.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import harness
import proxy
import proxy_ab
import proxy_instructions

WARMUP = 2000


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revisions", nargs="*", default=["."], help="git revisions; . = here")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--routes", type=int, nargs="+", default=[10], help="table sizes")
    harness.add_build_argument(parser)
    args = parser.parse_args(argv)
    proxy.ensure_tools()
    fleet = proxy.Fleet()
    runs = proxy_ab.versions(args.revisions, args.build)
    rows = []
    with (
        harness.session(__file__, sys.argv[1:]),
        tempfile.TemporaryDirectory() as tmp,
        proxy_ab.version_folders(runs, Path(tmp)) as folders,
    ):
        root = Path(tmp)
        try:
            backend = proxy.start_backend(fleet, root)
            snapshots = {n: proxy.compile_snapshot(root, n, backend) for n in args.routes}
            served: dict[str, proxy.Proxy] = {}
            for (label, _, _), folder in zip(runs, folders, strict=True):
                for routes, snapshot in snapshots.items():
                    name = f"{label} {routes:,} routes" if len(snapshots) > 1 else label
                    served[name] = proxy.start_coxswain(fleet, root, snapshot, routes, 1, folder)
            for one in served.values():
                proxy_instructions.drive(one.port, one.host, WARMUP, args.connections)
            cells: dict[str, list[tuple[float, float]]] = {name: [] for name in served}
            for number in range(1, args.rounds + 1):
                order = list(served) if number % 2 else list(served)[::-1]
                for name in order:
                    one = served[name]
                    cpu, started = proxy.tree_cpu_s(one.process.pid), time.perf_counter()
                    sent = proxy_instructions.drive(
                        one.port, one.host, args.requests, args.connections
                    )
                    cpu = proxy.tree_cpu_s(one.process.pid) - cpu
                    cell = (cpu / sent * 1e6, sent / (time.perf_counter() - started))
                    cells[name].append(cell)
                    rows.append((number, name, f"{cell[0]:.1f}", f"{cell[1]:,.0f}"))
        finally:
            fleet.stop_all()
    columns = [("round", 5), ("version", 34), ("CPU/req µs", 10), ("req/s", 9)]
    print(
        f"\n{args.requests:,} requests of 100 B a run over {args.connections} connections, "
        f"{'/'.join(f'{n:,}' for n in args.routes)} routes, 1 worker, closed loop"
    )
    harness.print_table(columns, rows)
    print("\nmedians")
    harness.print_table(
        columns[1:],
        [
            (
                label,
                f"{statistics.median(c[0] for c in found):.1f}",
                f"{statistics.median(c[1] for c in found):,.0f}",
            )
            for label, found in cells.items()
        ],
    )


if __name__ == "__main__":
    main(sys.argv[1:])
