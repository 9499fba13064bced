"""What the modes of ``bench/proxy.py`` set up and drive: the tools they need, the backend and
front nginx, the Coxswain proxy under test (from this checkout, a compiled copy of it, or a git
revision), its routing table, and the two clients (``wrk``, and a closed loop in this process).

The inputs (manifests, nginx configurations, wrk's report) are ``proxy_workload.py``; the
processes are started in a ``processes.Fleet``, which stops them on the way out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import harness
import processes
import proxy_workload as workload

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

REPO = Path(__file__).resolve().parents[1]

READY_TIMEOUT_S = 120.0  # a 10,000-route snapshot takes a few seconds to load

# The Debian package of each tool a mode may need.
_PACKAGES = {
    "nginx": "nginx-light",
    "wrk": "wrk",
    "h2load": "nghttp2-client",
    "valgrind": "valgrind",
    "callgrind_control": "valgrind",
}


# --- tools --------------------------------------------------------------------------------------


def ensure_tools(*tools: str) -> None:
    """Install the Debian packages of the ``tools`` missing from PATH when this runs as root;
    when not root, say what is needed and exit 2, rather than fail halfway through."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not missing:
        return
    packages = sorted({_PACKAGES[tool] for tool in missing})
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        sys.stderr.write(
            f"bench/proxy.py needs {' and '.join(missing)} on PATH; install them, for instance "
            f"`sudo apt-get install {' '.join(packages)}` on Debian or Ubuntu, and run it again.\n"
        )
        raise SystemExit(2)
    print(f"installing {', '.join(missing)} (apt-get install {' '.join(packages)})", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["apt-get", "install", "-y", "-q", *packages],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


# --- the versions of the proxy under test -------------------------------------------------------


@dataclass(frozen=True)
class Version:
    """One version of the proxy: a git revision (``.``: the working tree) and its build."""

    label: str
    revision: str
    compiled: bool


def versions(revisions: Sequence[str], build: str) -> list[Version]:
    """A ``Version`` for each revision and each build ``build`` asks for (compiled,
    interpreted, or both); labels carry the build only when both are asked for."""
    builds = {"compiled": [True], "interpreted": [False], "both": [False, True]}[build]
    return [
        Version(
            f"{revision} {'compiled' if compiled else 'interpreted'}"
            if len(builds) > 1
            else revision,
            revision,
            compiled,
        )
        for revision in revisions
        for compiled in builds
    ]


def compiled_copy(root: Path) -> Path:
    """A copy of the working tree with the codec compiled (harness.compile_codec), in
    ``root/compiled``: a native module must not land beside the sources."""
    code = harness.copy_project(REPO, root / "compiled")
    harness.compile_codec(code)
    return code


@contextmanager
def version_folders(runs: Sequence[Version], trees: Path) -> Iterator[list[Path]]:
    """The folder each version runs from (``python -m coxswain`` there imports that folder's
    code): the working tree for ``.`` (a copy of it when compiled), else a ``git worktree``
    of the revision in ``trees``, its codec compiled if asked; the worktrees are removed on
    the way out."""
    folders: list[Path] = []
    worktrees: list[Path] = []
    try:
        for run in runs:
            if run.revision == ".":
                folders.append(compiled_copy(trees) if run.compiled else REPO)
                continue
            folder = trees / f"rev-{len(worktrees)}"
            worktrees.append(folder)
            subprocess.run(
                ["git", "worktree", "add", "--detach", "--quiet", str(folder), run.revision],
                cwd=REPO,
                check=True,
            )
            if run.compiled:
                harness.compile_codec(folder)
            folders.append(folder)
        yield folders
    finally:
        for folder in worktrees:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(folder)], cwd=REPO, check=False
            )


# --- the servers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proxy:
    """One proxy under test: what to call it, where it listens, which Host to send."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    host: str


def start_nginx(fleet: processes.Fleet, prefix: Path, config: str, port: int) -> Proxy:
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "nginx.conf").write_text(config)
    # Errors before the configuration's own error_log is open go to the log the fleet shows.
    command = ["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
    process = fleet.start(prefix.name, [*command, "-e", str(fleet.log(prefix.name))], REPO)
    processes.wait_until(
        lambda: _accepts(port),
        f"nginx ({prefix.name}) on port {port}",
        timeout=READY_TIMEOUT_S,
        every=0.05,
        fleet=fleet,
    )
    host = workload.target_host(workload.SMALL_ROUTES // workload.PATHS_PER_HOST)
    return Proxy("nginx", process, port, host)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
    except OSError:
        return False
    return True


def start_backend(fleet: processes.Fleet, root: Path) -> int:
    """The backend nginx and the two bodies it serves; returns its port."""
    prefix = root / "backend"
    prefix.mkdir()
    (prefix / "small.bin").write_bytes(b"s" * workload.SMALL_BYTES)
    (prefix / "large.bin").write_bytes(b"L" * workload.LARGE_BYTES)
    port = processes.free_port()
    start_nginx(fleet, prefix, workload.backend_config(str(prefix), port), port)
    return port


def start_front(
    fleet: processes.Fleet, root: Path, backend_port: int, workers: int, *, http2: bool = False
) -> Proxy:
    """nginx as the proxy to beat, with ``workers`` workers, in front of the backend; with
    ``http2`` its listener speaks HTTP/2 with prior knowledge."""
    prefix = root / f"front-{workers}{'-h2' if http2 else ''}"
    port = processes.free_port()
    config = workload.front_config(str(prefix), port, backend_port, workers, http2=http2)
    return start_nginx(fleet, prefix, config, port)


def compile_snapshot(root: Path, routes: int, backend_port: int, *, h2c: bool = False) -> Path:
    """Write the manifests for ``routes`` routes and compile them with the command line, as an
    operator would (``coxswain compile -f DIR > snapshot.json``); ``h2c``: the backend speaks
    HTTP/2 with prior knowledge."""
    folder = root / f"manifests-{routes}{'-h2c' if h2c else ''}"
    folder.mkdir()
    items = workload.manifests(routes, backend_port, h2c=h2c)
    (folder / "objects.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    )
    snapshot = root / f"snapshot-{routes}{'-h2c' if h2c else ''}.json"
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


@dataclass(frozen=True)
class Wrapper:
    """A command the proxy runs under (callgrind), what it adds to the environment, and how
    long the proxy then may take to start."""

    command: Sequence[str]
    env: Mapping[str, str]
    ready_timeout_s: float


def start_coxswain(
    fleet: processes.Fleet,
    snapshot: Path,
    routes: int,
    workers: int,
    checkout: Path = REPO,
    wrapper: Wrapper | None = None,
    name: str | None = None,
) -> Proxy:
    """``coxswain proxy`` on fresh ports from ``checkout`` (``python -m`` there runs that
    checkout's code), once ``/readyz`` answers 200 and every worker has said it is serving
    (with ``--workers 2`` a probe reaches one worker only)."""
    port, admin = processes.free_port(), processes.free_port()
    name = name or (
        "coxswain" if routes == workload.SMALL_ROUTES else f"coxswain {routes:,} routes"
    )
    command = [*(wrapper.command if wrapper else ()), sys.executable, "-m", "coxswain", "proxy"]
    command += ["--shared", "--snapshot", str(snapshot), "--bind", "127.0.0.1"]
    command += ["--ingress-http-port", str(port)]
    command += ["--ingress-https-port", str(processes.free_port())]
    command += ["--admin-port", str(admin), "--workers", str(workers), "--drain-timeout", "1"]
    log = f"coxswain-{routes}-{workers}-{checkout.name}-{admin}"  # one per start
    process = fleet.start(log, command, checkout, wrapper.env if wrapper else None)
    processes.wait_until(
        lambda: ready(admin) and _serving(fleet.log(log)) >= workers,
        f"coxswain proxy ({routes} routes, {workers} workers) ready",
        timeout=wrapper.ready_timeout_s if wrapper else READY_TIMEOUT_S,
        every=0.1,
        fleet=fleet,
    )
    host = workload.target_host(routes // workload.PATHS_PER_HOST)
    return Proxy(name, process, port, host)


def _serving(log: Path) -> int:
    """How many proxy processes have logged that they serve (each logs it once, as a JSON
    line: the log goes to a file)."""
    text = log.read_bytes()[-(1 << 20) :].decode(errors="replace")
    return sum('"message":"serving ' in line for line in text.splitlines())


def ready(admin_port: int) -> bool:
    """Whether the proxy's admin port answers ``/readyz`` with 200."""
    try:
        status, _ = processes.http_get("127.0.0.1", admin_port, "/readyz", "localhost")
    except OSError:
        return False
    return status == 200


def check_route(proxy: Proxy, path: str, size: int) -> None:
    """One request before any timing: the route must reach the backend and bring the body."""
    status, body = processes.http_get("127.0.0.1", proxy.port, path, proxy.host)
    if status != 200 or len(body) != size:
        raise SystemExit(
            f"{proxy.name}: GET {path} Host {proxy.host} gave {status} with {len(body)} bytes, "
            f"expected 200 with {size}"
        )


# --- measuring: CPU, wrk, the closed loop -------------------------------------------------------


def tree_cpu_s(root: int) -> float:
    """User plus system CPU seconds of ``root`` and its descendants, alive, from /proc.

    nginx's and Coxswain's workers are children of their master or supervisor, and the
    children's time only reaches the parent's counters once they have been waited for, so
    every process of the tree is read.
    """
    times = {pid: int(fields[11]) + int(fields[12]) for pid, fields in _tree(root)}  # u+s time
    return sum(times.values()) / os.sysconf("SC_CLK_TCK")


def tree_rss_bytes(root: int) -> int:
    """The resident memory of ``root`` and its descendants, alive, from /proc."""
    pages = 0
    for pid, _ in _tree(root):
        try:
            pages += int((Path("/proc") / str(pid) / "statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
    return pages * os.sysconf("SC_PAGE_SIZE")


def _tree(root: int) -> list[tuple[int, list[str]]]:
    """``root`` and its descendants, alive, each with the fields of its /proc ``stat`` after
    ``pid (comm)`` (state first: the parent is ``[1]``, utime and stime ``[11]``, ``[12]``)."""
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        parents[int(entry.name)] = int(fields[1])
        stats[int(entry.name)] = fields
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    return [(pid, stats[pid]) for pid in tree if pid in stats]


@dataclass(frozen=True)
class Cell:
    """One wrk run and the CPU the proxy spent on it."""

    wrk: workload.WrkResult
    cpu_us_per_request: float


def run_wrk(proxy: Proxy, path: str, connections: int, seconds: int) -> Cell:
    """``wrk -t1 -cN -dT --latency`` against ``proxy``, its CPU read around the run."""
    url = f"http://127.0.0.1:{proxy.port}{path}"
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "10s"]
    command += ["-H", f"Host: {proxy.host}", url]
    stdout, cpu = _measured(proxy, command, seconds)
    result = workload.parse_wrk(stdout)
    return Cell(result, cpu * 1e6 / max(result.requests, 1))


def _measured(proxy: Proxy, command: list[str], seconds: int) -> tuple[str, float]:
    """Run a load generator for about ``seconds``; its report and the CPU seconds ``proxy``'s
    processes spent meanwhile. A failed run stops the benchmark."""
    cpu = tree_cpu_s(proxy.process.pid)
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 60, check=False
    )
    cpu = tree_cpu_s(proxy.process.pid) - cpu
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout, cpu


@dataclass(frozen=True)
class H2Cell:
    """One h2load run and the CPU the proxy spent on it."""

    h2load: workload.H2loadResult
    cpu_us_per_request: float


def run_h2load(
    proxy: Proxy,
    path: str,
    clients: int,
    streams: int,
    seconds: int,
    extra: Sequence[str] = (),
    *,
    failures_ok: bool = False,
) -> H2Cell:
    """``h2load -t1 -cC -mM -D T`` (HTTP/2 with prior knowledge) against ``proxy``, its CPU
    read around the run, ``extra`` arguments added (a body, fields); a run with a failed
    request stops the benchmark, unless ``failures_ok`` (then the caller shows them)."""
    url = f"http://127.0.0.1:{proxy.port}{path}"
    command = ["h2load", "-t1", f"-c{clients}", f"-m{streams}", f"-D{seconds}", *extra]
    command += ["-H", f":authority: {proxy.host}", url]
    stdout, cpu = _measured(proxy, command, seconds)
    result = workload.parse_h2load(stdout)
    if (result.failed and not failures_ok) or not result.requests:
        raise SystemExit(f"{' '.join(command)}: {result.failed} failed:\n{stdout}")
    return H2Cell(result, cpu * 1e6 / result.requests)


def drive_h2(
    port: int, host: str, requests: int, connections: int, extra: Sequence[str] = ()
) -> int:
    """The closed loop over HTTP/2 with prior knowledge: ``h2load -n`` sends ``requests`` GETs
    of the small body over ``connections`` connections, :data:`H2_DRIVE_STREAMS` streams at a
    time on each (``extra`` arguments added: a request body, fields); every one must succeed
    with a 2xx. Returns how many were sent."""
    command = ["h2load", "-t1", f"-c{connections}", f"-m{H2_DRIVE_STREAMS}", f"-n{requests}"]
    command += extra
    command += ["-H", f":authority: {host}", f"http://127.0.0.1:{port}{workload.SMALL_PATH}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
    result = workload.parse_h2load(done.stdout) if not done.returncode else None
    if result is None or result.failed or result.requests != requests:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return result.requests


H2_DRIVE_STREAMS = 10
"""Streams at a time per connection in :func:`drive_h2`, as in ``bench/proxy.py h2``."""

_LENGTH = re.compile(rb"(?i)\r\ncontent-length: *(\d+)")


def drive(port: int, host: str, requests: int, connections: int) -> int:
    """The closed loop: ``connections`` keep-alive connections, one GET of the small body on
    each per turn, then every response read; ``requests`` rounded up to whole turns. Every
    response must be a 200 of the right length. Returns how many were sent."""
    request = f"GET {workload.SMALL_PATH} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    socks = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(connections)]
    rests = [b""] * connections
    sent = 0
    try:
        while sent < requests:
            for sock in socks:
                sock.sendall(request)
            for index, sock in enumerate(socks):
                rests[index] = _read_response(sock, rests[index])
            sent += connections
    finally:
        for sock in socks:
            sock.close()
    return sent


def _read_response(sock: socket.socket, buffered: bytes) -> bytes:
    """Read one response whole; returns what came after it."""
    while True:
        end = buffered.find(b"\r\n\r\n")
        if end >= 0:
            length = _LENGTH.search(buffered, 0, end + 2)
            total = end + 4 + (int(length.group(1)) if length else 0)
            if len(buffered) >= total:
                if not buffered.startswith(b"HTTP/1.1 200 ") or total - end - 4 != (
                    workload.SMALL_BYTES
                ):
                    raise SystemExit(f"unexpected response: {buffered[:200]!r}")
                return buffered[total:]
        data = sock.recv(65536)
        if not data:
            raise SystemExit("the proxy closed a connection")
        buffered += data
