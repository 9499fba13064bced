"""Benchmark: user-space instructions per proxied request, counted by callgrind.

Run from the repository root::

    .venv/bin/python bench/proxy_instructions.py                 # this checkout (make bench)
    .venv/bin/python bench/proxy_instructions.py HEAD~1 HEAD     # two revisions
    .venv/bin/python bench/proxy_instructions.py --routes 10000 HEAD
    .venv/bin/python bench/proxy_instructions.py --build both .   # interpreted and compiled

Why: on this shared 2-core machine the CPU time of one request varies by ±25% from run to run
(docs/benchmarks.md, "Measuring on this machine"), more than most single changes move it.
Instructions do not vary: the same build gives the same count to within about 1% (the
scheduling of a real run still differs by timing). So a change to the request path is judged
here first, then confirmed under load (``bench/proxy_ab.py``, ``bench/proxy.py``). What this
does not see: the kernel's share (system calls, wakeups) and the effect of yields on how
work batches under load; a change to when tasks yield must be judged by ``bench/proxy_ab.py``.

How: ``coxswain proxy --workers 1`` runs under ``valgrind --tool=callgrind`` (with
``PYTHONHASHSEED=0``) in front of one nginx backend, with a snapshot compiled by this checkout
(``--routes`` routes, as ``bench/proxy.py`` generates them). A client in this process keeps
``--connections`` keep-alive connections busy in a closed loop (each round sends one request
on each, then reads every response), 200 requests to warm up, then ``--requests`` requests
between ``callgrind_control --zero`` and ``--dump``. Revisions other than ``.`` (the working
tree) are checked out with ``git worktree`` as ``bench/proxy_ab.py`` does; the codec is
compiled with mypyc in each (the working tree: in a copy), as the image ships it, or
interpreted, or both (``--build``, as for ``bench/proxy_ab.py``). Needs valgrind
(installed with apt-get when missing and run as root) and nginx. No targets.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import proxy
import proxy_ab
import proxy_workload as workload

READY_TIMEOUT_S = 600.0  # startup under callgrind is about 40 times slower
WARMUP = 200
_TOTALS = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)
_LENGTH = re.compile(rb"(?i)\r\ncontent-length: *(\d+)")


def ensure_valgrind() -> None:
    if shutil.which("valgrind") and shutil.which("callgrind_control"):
        return
    if os.geteuid() != 0:
        raise SystemExit("bench/proxy_instructions.py needs valgrind (apt-get install valgrind)")
    subprocess.run(["apt-get", "install", "-y", "-qq", "valgrind"], check=True)


def drive(port: int, host: str, requests: int, connections: int) -> int:
    """Send ``requests`` (rounded up to whole rounds) GETs of the small body; every response
    must be a 200 of the right length. Returns how many were sent."""
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


def count(checkout: Path, snapshot: Path, root: Path, args: argparse.Namespace) -> float:
    """Instructions per request of the proxy in ``checkout``."""
    port, admin = proxy.free_port(), proxy.free_port()
    out = root / f"callgrind-{checkout.name}.out"
    log = root / f"callgrind-{checkout.name}.log"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    command += ["-m", "coxswain", "proxy", "--shared", "--snapshot", str(snapshot)]
    command += ["--bind", "127.0.0.1", "--ingress-http-port", str(port)]
    command += ["--ingress-https-port", str(proxy.free_port()), "--admin-port", str(admin)]
    command += ["--workers", "1", "--drain-timeout", "1"]
    with log.open("wb") as errors:
        process = subprocess.Popen(
            command,
            cwd=checkout,
            env=dict(os.environ, PYTHONHASHSEED="0"),
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not proxy.ready(admin):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the proxy under callgrind did not start:\n{log.read_text()}")
            time.sleep(0.5)
        host = workload.target_host(args.routes // workload.PATHS_PER_HOST)
        drive(port, host, WARMUP, args.connections)
        control = ["callgrind_control"]
        subprocess.run([*control, "--zero", str(process.pid)], check=True, capture_output=True)
        sent = drive(port, host, args.requests, args.connections)
        subprocess.run(
            [*control, "--dump=measured", str(process.pid)], check=True, capture_output=True
        )
    finally:
        process.terminate()
        process.wait(timeout=120)
    dumps = sorted(root.glob(f"{out.name}.*"), key=os.path.getmtime)
    totals = _TOTALS.search(dumps[0].read_text()) if dumps else None
    if totals is None:
        raise SystemExit(f"no callgrind dump with totals in {root}")
    for dump in dumps:
        dump.unlink()
    return int(totals.group(1)) / sent


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revisions", nargs="*", default=["."], help="git revisions; . = here")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--routes", type=int, default=10)
    harness.add_build_argument(parser)
    args = parser.parse_args(argv)
    proxy.ensure_tools()
    ensure_valgrind()
    fleet = proxy.Fleet()
    rows = []
    runs = proxy_ab.versions(args.revisions, args.build)
    with (
        harness.session(__file__, sys.argv[1:]),
        tempfile.TemporaryDirectory() as tmp,
        proxy_ab.version_folders(runs, Path(tmp)) as folders,
    ):
        root = Path(tmp)
        try:
            backend = proxy.start_backend(fleet, root)
            snapshot = proxy.compile_snapshot(root, args.routes, backend)
            for (label, _, _), folder in zip(runs, folders, strict=True):
                per_request = count(folder, snapshot, root, args)
                rows.append((label, f"{per_request:,.0f}"))
                print(f"  {label}: {per_request:,.0f} instructions per request", flush=True)
        finally:
            fleet.stop_all()
    print(
        f"\n{args.requests:,} requests of 100 B over {args.connections} connections, "
        f"{args.routes:,} routes, 1 worker, codec {args.build}, user-space instructions (callgrind)"
    )
    harness.print_table([("revision", 22), ("instructions/request", 20)], rows)


if __name__ == "__main__":
    main(sys.argv[1:])
