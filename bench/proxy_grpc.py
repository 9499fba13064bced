"""``bench/proxy.py grpc``: gRPC unary calls through Coxswain against nginx's ``grpc_pass``, and
the memory an idle HTTP/2 client connection holds in each.

- **Calls.** ``h2load`` sends each call as a gRPC client does: ``POST`` with a framed 100-byte
  message, ``content-type: application/grpc`` and ``te: trailers``, over HTTP/2 with prior
  knowledge (``--clients`` connections × ``--streams`` streams). Coxswain runs one worker and
  serves the 10-route Ingress table whose Services say ``appProtocol: kubernetes.io/h2c``, so
  it speaks HTTP/2 to the backend, as it does to a GRPCRoute's; nginx runs one worker with
  ``grpc_pass`` over a keep-alive upstream pool. Both proxy to the same backend, an nginx that
  answers every call as a gRPC server does, ``grpc-status: 0`` in the trailers
  (``proxy_workload.grpc_backend_config``). The two proxies alternate over ``--rounds`` (the
  order swapped every round); calls per second and each proxy's CPU per call (user + system of
  its processes, from /proc), medians, after a second of warm-up. A call Coxswain fails stops
  the benchmark; nginx's failures are shown and not counted: ``grpc_pass`` to the nginx
  backend loses a call now and then ("upstream sent frame for unknown stream" in its error
  log: the backend answers before it read the request's end, and resets the stream), a few in
  ten thousand.
- **Instructions** (``grpc-instructions``): the same calls, ``h2load -n`` in a closed loop,
  through each revision under callgrind (:func:`calls_through`, ``proxy.count``).
- **Idle memory.** ``--idle`` connections each send the connection preface and an empty
  SETTINGS, read the proxy's SETTINGS, then stay open without a stream; the resident memory of
  the proxy's processes before they opened and a second after, over their number.
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import struct
import subprocess
import time
from typing import TYPE_CHECKING

import processes
import proxy_setup as setup
import proxy_workload as workload

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = ["calls_through", "measure"]

MESSAGE = b"m" * 100
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # + SETTINGS
SETTLE_S = 1.0


def measure(root: Path, fleet: processes.Fleet, checkout: Path, args: argparse.Namespace) -> None:
    """Start the backend and both proxies, run the alternated rounds, then the idle
    connections, and print the figures."""
    backend, snapshot = _backend(root, fleet)
    front_prefix = root / "grpc-front"
    front = processes.free_port()
    proxies = [
        setup.start_coxswain(fleet, snapshot, workload.SMALL_ROUTES, 1, checkout),
        setup.start_nginx(
            fleet,
            front_prefix,
            workload.grpc_front_config(str(front_prefix), front, backend),
            front,
        ),
    ]
    extra = _call_arguments(root)
    for proxy in proxies:  # warm; its failures not counted
        warm = ["h2load", "-t1", f"-c{args.clients}", f"-m{args.streams}", "-D1", *extra]
        warm += ["-H", f":authority: {proxy.host}", f"http://127.0.0.1:{proxy.port}/small"]
        subprocess.run(warm, capture_output=True, timeout=60, check=False)
    cells: dict[str, list[setup.H2Cell]] = {}
    for number in range(args.rounds):
        for proxy in proxies if number % 2 == 0 else proxies[::-1]:
            cell = setup.run_h2load(
                proxy,
                workload.SMALL_PATH,
                args.clients,
                args.streams,
                args.seconds,
                extra,
                failures_ok=proxy.name == "nginx",  # the module's note
            )
            cells.setdefault(proxy.name, []).append(cell)
            print(
                f"  {proxy.name:>8} {args.clients} connections x {args.streams} streams, "
                f"round {number + 1}: {cell.h2load.requests_per_s:,.0f} calls/s, "
                f"{cell.cpu_us_per_request:.0f} us CPU/call, {cell.h2load.failed} failed",
                flush=True,
            )
    idle = {proxy.name: idle_bytes(proxy, args.idle) for proxy in proxies}
    ours, theirs = (
        statistics.median(c.h2load.requests_per_s for c in cells[name])
        for name in ("coxswain", "nginx")
    )
    cpu, cpu_nginx = (
        statistics.median(c.cpu_us_per_request for c in cells[name])
        for name in ("coxswain", "nginx")
    )
    print()
    print(f"{'':>10} {'calls/s':>10} {'CPU us/call':>12} {'idle h2 connection':>19}")
    for name, rate, per_call in (("coxswain", ours, cpu), ("nginx", theirs, cpu_nginx)):
        print(f"{name:>10} {rate:>10,.0f} {per_call:>12.0f} {idle[name] / 1024:>16.1f} KiB")
    verdict = "PASS" if ours >= theirs / 4 else "FAIL"
    print(f"coxswain / nginx: {ours / theirs:.0%} (target >= 25%: {verdict})")


def calls_through(
    root: Path, fleet: processes.Fleet
) -> tuple[Path, Callable[[int, str, int, int], int]]:
    """The gRPC backend started; the snapshot that routes to it over h2c, and how to send
    calls through a proxy serving it: ``drive(port, host, calls, connections)`` as
    :func:`proxy_setup.drive_h2` sends requests."""
    _, snapshot = _backend(root, fleet)
    extra = _call_arguments(root)

    def drive(port: int, host: str, calls: int, connections: int) -> int:
        return setup.drive_h2(port, host, calls, connections, extra)

    return snapshot, drive


def _backend(root: Path, fleet: processes.Fleet) -> tuple[int, Path]:
    """The nginx that answers gRPC calls, its port, and the snapshot routing to it (h2c)."""
    prefix = root / "grpc-backend"
    prefix.mkdir()
    port = processes.free_port()
    setup.start_nginx(fleet, prefix, workload.grpc_backend_config(str(prefix), port), port)
    return port, setup.compile_snapshot(root, workload.SMALL_ROUTES, port, h2c=True)


def _call_arguments(root: Path) -> list[str]:
    """``h2load``'s arguments that make each request a gRPC call of :data:`MESSAGE`."""
    body = root / "call.bin"
    body.write_bytes(struct.pack(">BI", 0, len(MESSAGE)) + MESSAGE)
    return ["-d", str(body), "-H", "content-type: application/grpc", "-H", "te: trailers"]


def idle_bytes(proxy: setup.Proxy, count: int) -> float:
    """The resident memory ``count`` idle HTTP/2 connections add to ``proxy``, per connection."""
    before = setup.tree_rss_bytes(proxy.process.pid)
    with _idle_connections(proxy.port, count):
        time.sleep(SETTLE_S)
        after = setup.tree_rss_bytes(proxy.process.pid)
    return (after - before) / count


@contextlib.contextmanager
def _idle_connections(port: int, count: int) -> Iterator[None]:
    """``count`` connections that said the preface and got the server's SETTINGS back."""
    with contextlib.ExitStack() as stack:
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), 10))
            sock.sendall(PREFACE)
            if not sock.recv(65536):
                raise SystemExit(f"127.0.0.1:{port} closed an HTTP/2 connection at once")
        yield
