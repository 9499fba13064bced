"""Benchmark: requests per second and latency through the Coxswain proxy, against nginx.

Run from the repository root::

    .venv/bin/python bench/proxy.py                 # full run (`make bench`), about 5 minutes
    .venv/bin/python bench/proxy.py --quick         # reduced matrix, 1 s cells: a smoke run
    .venv/bin/python bench/proxy.py --build interpreted   # the codec as `make test` runs it

It needs ``nginx`` and ``wrk``. When either is missing and the script runs as root, it installs
Debian's ``nginx-light`` and ``wrk`` with apt-get; otherwise it says what to install and exits 2.

What runs, all on 127.0.0.1 (results go in docs/benchmarks.md):

- a **backend**: nginx with one worker, serving a 100-byte body at /small and a 1 MB body at
  /large from files, no access log;
- **Coxswain**: ``python -m coxswain proxy --shared`` with 1 or 2 workers, serving a snapshot
  compiled by ``python -m coxswain compile`` from generated Ingresses whose Services' one
  endpoint is the backend (``proxy_workload.manifests``); run from a copy of this checkout
  whose HTTP/1.1 codec is compiled with mypyc, as the image ships it (setup.py), or with
  ``--build interpreted`` from the checkout itself;
- **nginx as the proxy to beat**: a second nginx with as many workers, proxying to the same
  backend over a keep-alive upstream pool (``proxy_workload.front_config``);
- **wrk** (one thread) against one proxy at a time: ``wrk -t1 -cN -dT --latency``.

The matrix: {Coxswain, nginx} × {1, 2} workers × {100 B, 1 MB} × {32, 64} connections. Each
setting is measured in ``ROUNDS`` rounds, the two proxies one after the other in each round
(the order swapped every round), and the table gives the medians: on this shared 2-core
machine one run of the same build swings from 103 to 212 µs of CPU per request between runs
minutes apart (docs/benchmarks.md, "Measuring on this machine"), so a single run decides
nothing, and alternating lets drift hit both proxies alike. Then Coxswain with 1 worker
serving a 10,000-route table against a 10-route table (100 B, 32 connections), alternated over
``ROUTE_ROUNDS`` rounds. Each cell also reports the CPU time the proxy's processes used per
request, read from /proc: on a machine where wrk, the backend and the proxy share the cores,
it is the figure that does not depend on who got the CPU.

Before any figure is kept, one request through each proxy must return 200 and the expected body
length, and every wrk run's socket errors and non-2xx responses are counted and shown. The
script prints PASS/FAIL per target and exits 0 whatever the figures; it exits non-zero when it
breaks (a proxy that does not start or answers wrongly). Every process it starts is stopped on
the way out, including after Ctrl-C or an error.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import harness
import proxy_workload as workload

if TYPE_CHECKING:
    from collections.abc import Sequence

REPO = Path(__file__).resolve().parents[1]

WORKERS = (1, 2)
CONNECTIONS = (32, 64)
SIZES = (
    ("100 B", workload.SMALL_PATH, workload.SMALL_BYTES),
    ("1 MB", workload.LARGE_PATH, workload.LARGE_BYTES),
)
CELL_S = 5  # one wrk run
ROUNDS = 3  # runs of each matrix setting per proxy, alternated; the table gives medians
WARMUP_S = 2  # once per proxy started: connection pools filled, code paths warm
ROUTE_ROUNDS = 5  # 10-route and 10,000-route runs, alternated
SMALL_ROUTES, BIG_ROUTES = 10, 10_000

# --quick: one worker count, one connection count, 1 s cells, a 100-route "big" table.
QUICK_CELL_S = 1
QUICK_BIG_ROUTES = 100

# Targets (docs/benchmarks.md reports them).
RATIO_TARGET = 0.30  # Coxswain's req/s per worker over nginx's, 100 B at 32 connections
P99_TARGET_MS = 20.0  # at 64 connections
ROUTES_TARGET = 0.05  # 10,000 routes within 5% of 10 routes (req/s)

READY_TIMEOUT_S = 120.0  # a 10,000-route snapshot takes a few seconds to load
STOP_TIMEOUT_S = 5.0


# --- tools --------------------------------------------------------------------------------------


def ensure_tools() -> None:
    """Install nginx and wrk from Debian's archive when one is missing and we are root; when
    not root, say what is needed and exit 2, rather than fail halfway through."""
    missing = [tool for tool in ("nginx", "wrk") if shutil.which(tool) is None]
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        sys.stderr.write(
            f"bench/proxy.py needs {' and '.join(missing)} on PATH; install them, for instance "
            "`sudo apt-get install nginx-light wrk` on Debian or Ubuntu, and run it again.\n"
        )
        raise SystemExit(2)
    print(f"installing {', '.join(missing)} (apt-get install nginx-light wrk)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "nginx-light", "wrk"],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def free_port() -> int:
    """A TCP port nothing listens on right now (the kernel's pick for an ephemeral bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --- processes ----------------------------------------------------------------------------------


class Fleet:
    """The processes a run started, stopped together on the way out, newest first.

    Each runs in a session of its own, so that Ctrl-C in the terminal reaches only this script,
    which then stops them in order; SIGTERM first (nginx stops, Coxswain drains and its
    supervisor stops its workers), and SIGKILL to the whole process group for whatever is
    still alive after ``STOP_TIMEOUT_S``.
    """

    def __init__(self) -> None:
        self._running: list[subprocess.Popen[bytes]] = []

    def start(self, command: Sequence[str], log: Path, cwd: Path = REPO) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                cwd=cwd,
            )
        self._running.append(process)
        return process

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        """Stop one process and everything in its process group."""
        if process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_TIMEOUT_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # workers left behind, if any
        process.wait()
        if process in self._running:
            self._running.remove(process)

    def stop_all(self) -> None:
        for process in reversed(list(self._running)):
            self.stop(process)


def wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until ``port`` accepts connections; fail with the log's tail if the process died."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.05)
    raise SystemExit(f"{process.args!r} did not listen on {port}:\n{_tail(log)}")


def _tail(log: Path, size: int = 3000) -> str:
    try:
        return log.read_bytes()[-size:].decode(errors="replace")
    except OSError:
        return "(no log)"


def tree_cpu_s(root: int) -> float:
    """User plus system CPU seconds of ``root`` and its descendants, alive, from /proc.

    nginx's and Coxswain's workers are children of their master or supervisor, and the
    children's time only reaches the parent's counters once they have been waited for, so
    every process of the tree is read.
    """
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = int(fields[11]) + int(fields[12])  # utime, stime
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    return sum(times.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


# --- the servers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proxy:
    """One proxy under test: what to call it, where it listens, which Host to send."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    host: str


def start_nginx(fleet: Fleet, prefix: Path, config: str, port: int) -> subprocess.Popen[bytes]:
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "nginx.conf").write_text(config)
    log = prefix / "stdout.log"
    process = fleet.start(
        [
            "nginx",
            "-p",
            str(prefix),
            "-c",
            str(prefix / "nginx.conf"),
            "-e",
            str(prefix / "error.log"),
        ],
        log,
    )
    wait_listening(port, process, prefix / "error.log")
    return process


def start_backend(fleet: Fleet, root: Path) -> int:
    """The backend nginx and the two bodies it serves; returns its port."""
    prefix = root / "backend"
    prefix.mkdir()
    (prefix / "small.bin").write_bytes(b"s" * workload.SMALL_BYTES)
    (prefix / "large.bin").write_bytes(b"L" * workload.LARGE_BYTES)
    port = free_port()
    start_nginx(fleet, prefix, workload.backend_config(str(prefix), port), port)
    return port


def start_front(fleet: Fleet, root: Path, backend_port: int, workers: int) -> Proxy:
    prefix = root / f"front-{workers}"
    port = free_port()
    process = start_nginx(
        fleet, prefix, workload.front_config(str(prefix), port, backend_port, workers), port
    )
    return Proxy(
        "nginx", process, port, workload.target_host(SMALL_ROUTES // workload.PATHS_PER_HOST)
    )


def compile_snapshot(root: Path, routes: int, backend_port: int) -> Path:
    """Write the manifests for ``routes`` routes and compile them with the command line, as an
    operator would (``coxswain compile -f DIR > snapshot.json``)."""
    folder = root / f"manifests-{routes}"
    folder.mkdir()
    items = workload.manifests(routes, backend_port)
    (folder / "objects.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    )
    snapshot = root / f"snapshot-{routes}.json"
    with snapshot.open("wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "coxswain", "compile", "-f", str(folder)],
            stdout=out,
            stderr=subprocess.PIPE,
            check=False,
            cwd=REPO,
        )
    if done.returncode or done.stderr.strip():
        raise SystemExit(
            f"coxswain compile of {routes} routes: exit {done.returncode}\n{done.stderr.decode()}"
        )
    return snapshot


def built(root: Path) -> Path:
    """A copy of this checkout with the codec compiled (harness.compile_codec)."""
    code = harness.copy_project(REPO, root / "compiled")
    harness.compile_codec(code)
    return code


def start_coxswain(
    fleet: Fleet, root: Path, snapshot: Path, routes: int, workers: int, checkout: Path = REPO
) -> Proxy:
    """``coxswain proxy`` on fresh ports, once ``/readyz`` answers 200 and every worker has
    said it is serving (with ``--workers 2`` a probe reaches one worker only). ``python -m``
    in ``checkout`` runs that checkout's code (``bench/proxy_ab.py`` compares two)."""
    port, admin = free_port(), free_port()
    log = root / f"coxswain-{routes}-{workers}-{checkout.name}.log"
    process = fleet.start(
        [
            sys.executable,
            "-m",
            "coxswain",
            "proxy",
            "--shared",
            "--snapshot",
            str(snapshot),
            "--bind",
            "127.0.0.1",
            "--ingress-http-port",
            str(port),
            "--ingress-https-port",
            str(free_port()),
            "--admin-port",
            str(admin),
            "--workers",
            str(workers),
            "--drain-timeout",
            "1",
        ],
        log,
        checkout,
    )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        if ready(admin) and _serving(log) >= workers:
            break
        time.sleep(0.1)
    else:
        raise SystemExit(
            f"coxswain proxy ({routes} routes, {workers} workers) not ready:\n{_tail(log)}"
        )
    name = "coxswain" if routes == SMALL_ROUTES else f"coxswain {routes:,} routes"
    return Proxy(name, process, port, workload.target_host(routes // workload.PATHS_PER_HOST))


def _serving(log: Path) -> int:
    """How many proxy processes have logged that they serve (each logs it once, as a JSON
    line: the log goes to a file)."""
    return sum('"message":"serving ' in line for line in _tail(log, 1 << 20).splitlines())


def ready(admin_port: int) -> bool:
    """Whether the proxy's admin port answers ``/readyz`` with 200."""
    try:
        status, _ = get(admin_port, "/readyz", "localhost")
    except OSError:
        return False
    return status == 200


def get(port: int, path: str, host: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": host})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def check_route(proxy: Proxy, path: str, size: int) -> None:
    """One request before any timing: the route must reach the backend and bring the body."""
    status, body = get(proxy.port, path, proxy.host)
    if status != 200 or len(body) != size:
        raise SystemExit(
            f"{proxy.name}: GET {path} Host {proxy.host} gave {status} with {len(body)} bytes, "
            f"expected 200 with {size}"
        )


# --- measuring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One wrk run and the CPU the proxy spent on it."""

    wrk: workload.WrkResult
    cpu_us_per_request: float


def run_wrk(proxy: Proxy, path: str, connections: int, seconds: int) -> Cell:
    url = f"http://127.0.0.1:{proxy.port}{path}"
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "10s"]
    command += ["-H", f"Host: {proxy.host}", url]
    cpu = tree_cpu_s(proxy.process.pid)
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 60, check=False
    )
    cpu = tree_cpu_s(proxy.process.pid) - cpu
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    result = workload.parse_wrk(done.stdout)
    return Cell(result, cpu * 1e6 / max(result.requests, 1))


def warm(proxy: Proxy, seconds: int) -> None:
    for _label, path, size in SIZES:
        check_route(proxy, path, size)
    run_wrk(proxy, workload.SMALL_PATH, max(CONNECTIONS), seconds)


@dataclass(frozen=True)
class Plan:
    workers: tuple[int, ...]
    connections: tuple[int, ...]
    cell_s: int
    warmup_s: int
    big_routes: int
    rounds: int
    route_rounds: int


def plan(quick: bool) -> Plan:
    if quick:
        return Plan((1,), (32,), QUICK_CELL_S, 1, QUICK_BIG_ROUTES, 1, 1)
    return Plan(WORKERS, CONNECTIONS, CELL_S, WARMUP_S, BIG_ROUTES, ROUNDS, ROUTE_ROUNDS)


Key = tuple[str, int, str, int]  # proxy, workers, size label, connections


def measure(
    root: Path, fleet: Fleet, run: Plan, code: Path
) -> tuple[dict[Key, list[Cell]], dict[int, list[Cell]]]:
    """Every cell of the matrix (its rounds), and the route-table rounds (routes → cells),
    with Coxswain run from ``code``."""
    backend = start_backend(fleet, root)
    snapshots = {
        routes: compile_snapshot(root, routes, backend) for routes in (SMALL_ROUTES, run.big_routes)
    }
    cells: dict[Key, list[Cell]] = {}
    rounds: dict[int, list[Cell]] = {SMALL_ROUTES: [], run.big_routes: []}
    for workers in run.workers:
        proxies = [
            start_coxswain(fleet, root, snapshots[SMALL_ROUTES], SMALL_ROUTES, workers, code),
            start_front(fleet, root, backend, workers),
        ]
        for proxy in proxies:
            warm(proxy, run.warmup_s)
        for label, path, _ in SIZES:
            for connections in run.connections:
                for number in range(run.rounds):
                    for proxy in proxies if number % 2 == 0 else proxies[::-1]:
                        cell = run_wrk(proxy, path, connections, run.cell_s)
                        cells.setdefault((proxy.name, workers, label, connections), []).append(cell)
                        print(
                            f"  {proxy.name:>8} {workers} worker(s) {label:>5} c{connections}, "
                            f"round {number + 1}: {_brief(cell)}",
                            flush=True,
                        )
        if workers == 1:
            big = start_coxswain(fleet, root, snapshots[run.big_routes], run.big_routes, 1, code)
            warm(big, run.warmup_s)
            pair = {SMALL_ROUTES: proxies[0], run.big_routes: big}
            for number in range(run.route_rounds):
                order = (
                    (SMALL_ROUTES, run.big_routes)
                    if number % 2 == 0
                    else (run.big_routes, SMALL_ROUTES)
                )
                for routes in order:
                    cell = run_wrk(pair[routes], workload.SMALL_PATH, 32, run.cell_s)
                    rounds[routes].append(cell)
                    print(
                        f"  coxswain {routes:,} routes, round {number + 1}: {_brief(cell)}",
                        flush=True,
                    )
            fleet.stop(big.process)
        for proxy in proxies:
            fleet.stop(proxy.process)
    return cells, rounds


def _median_best(values: list[float]) -> str:
    """``median (best)`` for a figure where more is better (``harness.med_best`` takes the
    minimum, for times)."""
    return f"{statistics.median(values):,.0f} ({max(values):,.0f})"


def _brief(cell: Cell) -> str:
    w = cell.wrk
    return f"{w.requests_per_s:,.0f} req/s, p50 {w.p50_ms:.2f} ms, p99 {w.p99_ms:.2f} ms"


# --- reporting ----------------------------------------------------------------------------------


def _median(runs: list[Cell]) -> Cell:
    """One cell of the matrix from its rounds: the median of each figure, and every socket
    error and non-2xx response of every round."""
    return Cell(
        workload.WrkResult(
            requests=sum(c.wrk.requests for c in runs),
            requests_per_s=statistics.median(c.wrk.requests_per_s for c in runs),
            p50_ms=statistics.median(c.wrk.p50_ms for c in runs),
            p99_ms=statistics.median(c.wrk.p99_ms for c in runs),
            errors=sum(c.wrk.errors for c in runs),
            non_2xx=sum(c.wrk.non_2xx for c in runs),
        ),
        statistics.median(c.cpu_us_per_request for c in runs),
    )


def report(
    runs: dict[Key, list[Cell]], rounds: dict[int, list[Cell]], run: Plan, quick: bool
) -> None:
    cells = {key: _median(cells_) for key, cells_ in runs.items()}
    print(
        "\nreq/s, latency percentiles (ms) and proxy CPU per request (µs), wrk -t1, "
        f"{run.cell_s} s per run, medians of {run.rounds} alternated round(s); "
        "ratio: Coxswain req/s over nginx req/s"
    )
    columns = [
        ("workers", 7),
        ("response", 8),
        ("conns", 5),
        ("coxswain req/s", 14),
        ("nginx req/s", 11),
        ("ratio", 5),
        ("cox p50", 7),
        ("cox p99", 7),
        ("nginx p50", 9),
        ("nginx p99", 9),
        ("cox CPU/req", 11),
        ("nginx CPU/req", 13),
    ]
    rows = []
    for workers in run.workers:
        for label, _, _ in SIZES:
            for connections in run.connections:
                cox = cells["coxswain", workers, label, connections]
                ngx = cells["nginx", workers, label, connections]
                rows.append(
                    [
                        str(workers),
                        label,
                        str(connections),
                        f"{cox.wrk.requests_per_s:,.0f}",
                        f"{ngx.wrk.requests_per_s:,.0f}",
                        f"{cox.wrk.requests_per_s / ngx.wrk.requests_per_s:.2f}",
                        f"{cox.wrk.p50_ms:.2f}",
                        f"{cox.wrk.p99_ms:.2f}",
                        f"{ngx.wrk.p50_ms:.2f}",
                        f"{ngx.wrk.p99_ms:.2f}",
                        f"{cox.cpu_us_per_request:,.0f}",
                        f"{ngx.cpu_us_per_request:,.0f}",
                    ]
                )
    harness.print_table(columns, rows)

    print(
        f"\nCoxswain, 1 worker, 100 B, 32 connections: {run.route_rounds} round(s) per table, "
        "alternated; req/s median (best), p50 and p99 medians"
    )
    harness.print_table(
        [("routes", 6), ("req/s", 20), ("p50 ms", 6), ("p99 ms", 6), ("CPU/req µs", 10)],
        [
            [
                f"{routes:,}",
                _median_best([c.wrk.requests_per_s for c in cells_]),
                f"{statistics.median(c.wrk.p50_ms for c in cells_):.2f}",
                f"{statistics.median(c.wrk.p99_ms for c in cells_):.2f}",
                f"{statistics.median(c.cpu_us_per_request for c in cells_):,.0f}",
            ]
            for routes, cells_ in rounds.items()
        ],
    )
    failures = [
        f"{key[0]} {key[1]} worker(s) {key[2]} c{key[3]}: "
        f"{c.wrk.errors} socket errors, {c.wrk.non_2xx} non-2xx"
        for key, c in cells.items()
        if c.wrk.errors or c.wrk.non_2xx
    ]
    failures += [
        f"coxswain {routes:,} routes: {c.wrk.errors} socket errors, {c.wrk.non_2xx} non-2xx"
        for routes, cells_ in rounds.items()
        for c in cells_
        if c.wrk.errors or c.wrk.non_2xx
    ]
    print(
        "\nerrors: "
        + ("; ".join(failures) if failures else "none (no socket error, every response 2xx)")
    )

    print("\nTargets")
    if quick:
        harness.print_skipped_targets()
        return
    lines: list[tuple[bool, str]] = []
    for workers in run.workers:
        cox_rps = cells["coxswain", workers, "100 B", 32].wrk.requests_per_s
        ngx_rps = cells["nginx", workers, "100 B", 32].wrk.requests_per_s
        lines.append(
            (
                cox_rps / ngx_rps >= RATIO_TARGET,
                f"{workers} worker(s), 100 B, 32 connections: Coxswain {cox_rps / workers:,.0f} "
                f"req/s per worker, nginx {ngx_rps / workers:,.0f}: ratio {cox_rps / ngx_rps:.2f} "
                f"(target ≥ {RATIO_TARGET:.2f})",
            )
        )
    for workers in run.workers:
        for label, _, _ in SIZES:
            p99 = cells["coxswain", workers, label, 64].wrk.p99_ms
            nginx_p99 = cells["nginx", workers, label, 64].wrk.p99_ms
            lines.append(
                (
                    p99 < P99_TARGET_MS,
                    f"{workers} worker(s), {label}, 64 connections: Coxswain p99 {p99:.2f} ms "
                    f"(target < {P99_TARGET_MS:.0f} ms; nginx {nginx_p99:.2f} ms)",
                )
            )
    small = statistics.median(c.wrk.requests_per_s for c in rounds[SMALL_ROUTES])
    big = statistics.median(c.wrk.requests_per_s for c in rounds[run.big_routes])
    cpu = statistics.median(
        c.cpu_us_per_request for c in rounds[run.big_routes]
    ) / statistics.median(c.cpu_us_per_request for c in rounds[SMALL_ROUTES])
    lines.append(
        (
            abs(big / small - 1) <= ROUTES_TARGET,
            f"{run.big_routes:,} routes {big:,.0f} req/s against {small:,.0f} at {SMALL_ROUTES}: "
            f"{(big / small - 1) * 100:+.1f}% (target within ±{ROUTES_TARGET * 100:.0f}%; "
            f"CPU per request {(cpu - 1) * 100:+.1f}%)",
        )
    )
    harness.print_targets(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="reduced matrix, 1 s cells")
    harness.add_build_argument(parser, both=False)
    args = parser.parse_args(argv)
    ensure_tools()
    run = plan(args.quick)
    # SIGTERM (a CI timeout, `kill`) unwinds like Ctrl-C, so that the finally below runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    fleet = Fleet()
    with (
        harness.session(__file__, args.quick),
        tempfile.TemporaryDirectory(prefix="coxswain-bench-") as tmp,
    ):
        code = built(Path(tmp)) if args.build == "compiled" else REPO
        print(f"Coxswain's HTTP/1.1 codec: {args.build}")
        try:
            cells, rounds = measure(Path(tmp), fleet, run, code)
        finally:
            fleet.stop_all()
        report(cells, rounds, run, args.quick)


if __name__ == "__main__":
    main(sys.argv[1:])
