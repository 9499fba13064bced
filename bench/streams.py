"""Layer-4 forwarding, Coxswain against nginx's stream module, one worker each, alternated rounds.

    .venv/bin/python bench/streams.py                 # 5 rounds of 8 s per workload, ~8 min
    .venv/bin/python bench/streams.py --rounds 1 --seconds 3    # a quick look
    .venv/bin/python bench/streams.py --quick                   # a smoke run of seconds

Three workloads, each through both proxies in turn (the order alternates every round), the
median of the rounds reported with the ratio Coxswain / nginx and its target
(docs/benchmarks.md, "Layer 4"):

- ``bulk``: TLS Passthrough throughput. One client connection sends a real ClientHello
  (Python's ``ssl``, SNI ``bulk.bench``) and then 1 MiB writes for the whole run; the proxy
  reads the ClientHello, routes by SNI (Coxswain: a TLSRoute; nginx: ``ssl_preread`` and a
  ``map``) and splices to a sink that discards. MB/s received by the sink. Target ≥ 50 %.
- ``connect``: new TCP connections per second through a TCP listener (TCPRoute; nginx
  ``proxy_pass``) to a backend nginx answering ``return "ok\\n"`` and closing: two client
  processes, each keeping ``OPEN`` connections under way from one epoll loop (a
  non-blocking connect, read to the end, close, the next connect), so that a client costs
  a few µs of CPU per connection and does not set either proxy's pace. Target ≥ 30 %.
- ``udp``: UDP datagrams per second through a UDP listener (UDPRoute; nginx ``proxy_pass``
  with ``proxy_responses 1``) to a backend nginx answering each datagram: four client
  processes, each sending a datagram and waiting for its answer in a loop (one session per
  client socket). Target ≥ 30 %.

Beside each rate, the clients' busy share (their CPU time over the round's wall time, per
client process: near 100 % the clients, not the proxy, set the rate) and the CPU time the
proxy under test spent for it (all its processes: nginx's
master and worker, Coxswain's supervisor and worker, from ``/proc``), per connection,
datagram or MB: on a machine shared with other work the rates move with the neighbours'
load, the CPU per operation much less.

The clients and the sink are processes of their own (this script, run as ``_client`` or
``_sink``), so that neither proxy shares a core's time with them beyond what the machine
makes it. Coxswain runs ``coxswain proxy --gateway bench/edge --snapshot FILE`` with a snapshot
written here: one TLS, one TCP and one UDP listener. Needs nginx with its stream module
(Debian: ``libnginx-mod-stream``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import processes

REPO: Final = Path(__file__).resolve().parents[1]
STREAM_MODULE: Final = "/usr/lib/nginx/modules/ngx_stream_module.so"
CLIENTS: Final = 4
CONNECT_CLIENTS: Final = 2
OPEN: Final = 32  # connections under way per connect client
CHUNK: Final = 1 << 20
SNI: Final = "bulk.bench"
WORKLOADS: Final = ("bulk", "connect", "udp")
TARGETS: Final = {"bulk": 0.50, "connect": 0.30, "udp": 0.30}
UNITS: Final = {"bulk": "MB/s", "connect": "conn/s", "udp": "datagrams/s"}
PER: Final = {"bulk": "MB", "connect": "connection", "udp": "datagram"}


# --- the processes a run starts ----------------------------------------------------------------


def _nginx_main(prefix: Path) -> str:
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (
        f"load_module {STREAM_MODULE};\n{user}daemon off;\nworker_processes 1;\n"
        f"pid {prefix}/nginx.pid;\nerror_log {prefix}/error.log warn;\n"
        "events { worker_connections 4096; }\n"
    )


def _start_nginx(
    fleet: processes.Fleet, prefix: Path, stream: str, port: int
) -> subprocess.Popen[bytes]:
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "nginx.conf").write_text(_nginx_main(prefix) + "stream {\n" + stream + "}\n")
    command = ["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
    started = fleet.start(prefix.name, [*command, "-e", str(fleet.log(prefix.name))], REPO)
    processes.wait_until(
        lambda: _accepts(port), f"nginx {prefix.name}", timeout=30, every=0.05, fleet=fleet
    )
    return started


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
    except OSError:
        return False
    return True


def _snapshot(ports: dict[str, int], backends: dict[str, int]) -> dict[str, object]:
    """A dedicated proxy's snapshot (the JSON of ``coxswain compile``): a TLS Passthrough, a
    TCP and a UDP listener, each with one route to one endpoint on 127.0.0.1."""
    from pyrsistent import pmap, pvector

    from coxswain.compile.scope import GatewayScope
    from coxswain.compile.snapshot import (
        Backend,
        Endpoint,
        GatewayRule,
        IngressTable,
        ListenerHealth,
        ListenerTable,
        RouteAction,
        RouteMatch,
        RouteRef,
        Snapshot,
    )
    from coxswain.compile.snapshot_json import seal, snapshot_to_data

    gateways = {}
    health = []
    endpoints = {}
    listeners = (("TLS", "TLSRoute", SNI), ("TCP", "TCPRoute", "*"), ("UDP", "UDPRoute", "*"))
    for protocol, kind, host in listeners:
        port, backend_port = ports[protocol], backends[protocol]
        service = protocol.lower()
        backend = Backend(namespace="bench", service=service, port=backend_port)
        endpoints[backend.endpoints_key] = pvector([Endpoint("127.0.0.1", backend_port)])
        action = RouteAction(
            route=RouteRef(kind, "bench", service, "spec.rules[0]"), backends=pvector([backend])
        )
        rule = GatewayRule(match=RouteMatch(path_type="PathPrefix", path="/"), action=action)
        table = ListenerTable(
            gateway="bench/edge",
            listener=service,
            port=port,
            protocol=protocol,
            hostname="*",
            hosts=pmap({host: pvector([rule])}),
        )
        gateways[port] = pmap({"*": table})
        health.append(
            ListenerHealth(
                gateway="bench/edge",
                listener=service,
                port=port,
                target_port=port,
                protocol=protocol,
                hostname=None,
                attached_routes=1,
                ready=True,
                reason="Ready",
            )
        )
    snapshot = Snapshot(
        version="",
        scope=GatewayScope("bench", "edge"),
        ingress=IngressTable(http_port=80, https_port=443),
        gateways=pmap(gateways),
        listener_health=pvector(health),
        endpoints=pmap(endpoints),
    )
    return snapshot_to_data(seal(snapshot))


def _start_coxswain(
    fleet: processes.Fleet, root: Path, ports: dict[str, int], backends: dict[str, int]
) -> subprocess.Popen[bytes]:
    file = root / "snapshot.json"
    file.write_text(json.dumps(_snapshot(ports, backends)))
    admin = processes.free_port()
    command = [sys.executable, "-m", "coxswain", "proxy", "--gateway", "bench/edge"]
    command += ["--snapshot", str(file), "--bind", "127.0.0.1", "--admin-port", str(admin)]
    command += ["--drain-timeout", "1", "--workers", "1"]
    started = fleet.start("coxswain", command, REPO)

    def ready() -> bool:
        with suppress(OSError):
            status, _ = processes.http_get("127.0.0.1", admin, "/readyz", "localhost")
            return status == 200
        return False

    processes.wait_until(ready, "coxswain proxy ready", timeout=60, every=0.1, fleet=fleet)
    return started


def _group_cpu(group: int) -> float:
    """CPU seconds (user and system) of the live processes of process group ``group``."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:  # pgrp; utime and stime follow at 11 and 12
                ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


# --- the clients and the sink ------------------------------------------------------------------


def client_hello() -> bytes:
    """A real ClientHello naming ``SNI``, as a TLS client sends it first."""
    context = ssl.create_default_context()
    context.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=SNI)
    with suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def _sink(port: int, report: Path) -> None:
    """Accept connections one at a time and discard their bytes; after each, append the bytes
    and seconds it lasted to ``report``."""
    with socket.create_server(("127.0.0.1", port)) as server:
        buffer = bytearray(CHUNK)
        while True:
            conn, _ = server.accept()
            received, started = 0, time.monotonic()
            with conn:
                while count := conn.recv_into(buffer):
                    received += count
            with report.open("a") as out:
                out.write(f"{received} {time.monotonic() - started}\n")


def _client(kind: str, port: int, seconds: float) -> None:
    """One client process of ``kind``; prints what it did (bytes, connections, datagrams)
    and the CPU seconds it spent."""
    deadline = time.monotonic() + seconds
    done = 0
    if kind == "bulk":
        data = bytes(CHUNK)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(client_hello())
            while time.monotonic() < deadline:
                sock.sendall(data)
                done += len(data)
    elif kind == "connect":
        done = _connect_loop(port, deadline)
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("127.0.0.1", port))
            sock.settimeout(1.0)
            while time.monotonic() < deadline:
                sock.send(b"x" * 32)
                with suppress(TimeoutError):
                    sock.recv(64)
                    done += 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(done, usage.ru_utime + usage.ru_stime)


def _connect_loop(port: int, deadline: float) -> int:
    """Connections made, read to their end and closed until ``deadline``, ``OPEN`` at once."""
    poller = select.epoll()
    under_way: dict[int, socket.socket] = {}

    def begin() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        with suppress(BlockingIOError):
            sock.connect(("127.0.0.1", port))
        under_way[sock.fileno()] = sock
        poller.register(sock, select.EPOLLIN)

    for _ in range(OPEN):
        begin()
    done = 0
    while time.monotonic() < deadline:
        for fd, _ in poller.poll(0.5):
            sock = under_way[fd]
            try:
                if sock.recv(64):
                    continue
                done += 1  # the end: the connection went through
            except BlockingIOError:
                continue
            except OSError:
                pass  # refused or reset: not counted
            poller.unregister(fd)
            del under_way[fd]
            sock.close()
            begin()
    for sock in under_way.values():
        sock.close()
    poller.close()
    return done


def _run_clients(kind: str, port: int, seconds: float, sink_report: Path) -> tuple[float, float]:
    """The workload's rate through ``port``, and the clients' busy share (CPU time over
    wall time, per process)."""
    count = {"bulk": 1, "connect": CONNECT_CLIENTS}.get(kind, CLIENTS)
    before = sink_report.read_text().count("\n") if sink_report.exists() else 0
    started = time.monotonic()
    runs = [
        subprocess.Popen(
            [sys.executable, __file__, "_client", kind, str(port), str(seconds)],
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        for _ in range(count)
    ]
    reports = [(run.communicate()[0] or b"0 0").split() for run in runs]
    elapsed = time.monotonic() - started
    totals = [int(done) for done, _ in reports]
    busy = sum(float(cpu) for _, cpu in reports) / count / elapsed
    if kind != "bulk":
        return sum(totals) / seconds, busy
    processes.wait_until(
        lambda: sink_report.exists() and sink_report.read_text().count("\n") > before,
        "the sink's report",
        timeout=30,
        every=0.05,
    )
    received, lasted = sink_report.read_text().splitlines()[-1].split()
    return int(received) / float(lasted) / 1e6, busy


# --- the run ------------------------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_client":
        _client(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_sink":
        _sink(int(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--quick", action="store_true", help="one round of 1 s: a smoke run")
    parser.add_argument(
        "--workload", action="append", choices=WORKLOADS, help="only these (default: all)"
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds = 1, 1.0
    if not Path(STREAM_MODULE).exists():
        raise SystemExit(f"nginx's stream module is missing ({STREAM_MODULE})")
    with tempfile.TemporaryDirectory(prefix="coxswain-bench-streams-") as folder:
        root = Path(folder)
        with processes.Fleet(root) as fleet:
            results = _measure(fleet, root, args.rounds, args.seconds, args.workload or WORKLOADS)
    _report(results, args)


Results = dict[tuple[str, str], list[tuple[float, float]]]
"""Each round's (rate, CPU µs per operation) by (proxy, workload)."""


def _measure(
    fleet: processes.Fleet, root: Path, rounds: int, seconds: float, workloads: Sequence[str]
) -> Results:
    sink_port, tcp_back, udp_back = (processes.free_port() for _ in range(3))
    report = root / "sink.txt"
    fleet.start("sink", [sys.executable, __file__, "_sink", str(sink_port), str(report)], REPO)
    processes.wait_until(lambda: _accepts(sink_port), "the sink", timeout=30, every=0.05)
    _start_nginx(
        fleet,
        root / "backend",
        f'  server {{ listen 127.0.0.1:{tcp_back}; return "ok\\n"; }}\n'
        f'  server {{ listen 127.0.0.1:{udp_back} udp; return "ok\\n"; }}\n',
        tcp_back,
    )
    backends = {"TLS": sink_port, "TCP": tcp_back, "UDP": udp_back}
    cox = {protocol: processes.free_port() for protocol in backends}
    ngx = {protocol: processes.free_port() for protocol in backends}
    groups = {"coxswain": _start_coxswain(fleet, root, cox, backends).pid}
    groups["nginx"] = _start_nginx(
        fleet,
        root / "front",
        f"  map $ssl_preread_server_name $tls_backend {{ default 127.0.0.1:{sink_port}; }}\n"
        f"  server {{ listen 127.0.0.1:{ngx['TLS']}; ssl_preread on; "
        "proxy_pass $tls_backend; }\n"
        f"  server {{ listen 127.0.0.1:{ngx['TCP']}; proxy_pass 127.0.0.1:{tcp_back}; }}\n"
        f"  server {{ listen 127.0.0.1:{ngx['UDP']} udp; proxy_pass 127.0.0.1:{udp_back}; "
        "proxy_responses 1; }\n",
        ngx["TCP"],
    ).pid
    ports = {"coxswain": cox, "nginx": ngx}
    protocol_of = {"bulk": "TLS", "connect": "TCP", "udp": "UDP"}
    results: Results = {}
    for number in range(rounds):
        order = ["coxswain", "nginx"] if number % 2 == 0 else ["nginx", "coxswain"]
        for kind in workloads:
            for proxy in order:
                port = ports[proxy][protocol_of[kind]]
                before = _group_cpu(groups[proxy])
                rate, busy = _run_clients(kind, port, seconds, report)
                spent = _group_cpu(groups[proxy]) - before
                cpu = spent / (rate * seconds) * 1e6 if rate else 0.0
                results.setdefault((proxy, kind), []).append((rate, cpu))
                print(
                    f"round {number + 1} {kind:<8} {proxy:<9} {rate:>12,.1f} {UNITS[kind]:<12} "
                    f"CPU {cpu:>9,.1f} us per {PER[kind]}  clients busy {busy:.0%}"
                )
                fleet.check()
    return results


def _report(results: Results, args: argparse.Namespace) -> None:
    print(
        f"\n{args.rounds} rounds of {args.seconds:g} s, medians "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}):"
    )
    print(
        f"{'workload':<9} {'coxswain':>12} {'nginx':>12} {'unit':<12} {'ratio':>6} "
        f"{'target':<14} {'CPU us/op':>10} {'nginx':>8} {'ratio':>6}"
    )
    for kind in args.workload or WORKLOADS:
        ours = statistics.median(rate for rate, _ in results["coxswain", kind])
        theirs = statistics.median(rate for rate, _ in results["nginx", kind])
        ratio = ours / theirs if theirs else 0.0
        verdict = "met" if ratio >= TARGETS[kind] else "MISSED"
        our_cpu = statistics.median(cpu for _, cpu in results["coxswain", kind])
        their_cpu = statistics.median(cpu for _, cpu in results["nginx", kind])
        cpu_ratio = their_cpu / our_cpu if our_cpu else 0.0
        print(
            f"{kind:<9} {ours:>12,.1f} {theirs:>12,.1f} {UNITS[kind]:<12} {ratio:>6.0%} "
            f">= {TARGETS[kind]:.0%} {verdict:<7} {our_cpu:>10,.1f} {their_cpu:>8,.1f} "
            f"{cpu_ratio:>6.0%}"
        )


if __name__ == "__main__":
    main()
