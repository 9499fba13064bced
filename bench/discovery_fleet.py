"""Benchmark: one discovery server and a fleet of streams: cold start and many open streams.

Run from the repository root::

    .venv/bin/python bench/discovery_fleet.py                 # full run (a few minutes)
    .venv/bin/python bench/discovery_fleet.py --quick         # tiny sizes: a smoke run
    .venv/bin/python bench/discovery_fleet.py --processes 8   # receivers in 8 processes (default 4)

Each measurement runs in a fresh worker process that holds one discovery server
(``open_discovery_server`` on 127.0.0.1, mutual TLS, a policy granting every scope to the one
proxy identity) and publishes; the streams are held by P receiver processes (``--processes``,
default 4), each one asyncio loop with one gRPC channel per stream, as each proxy has its own
connection. A receiver does what the discovery client does on the wire and no more: Subscribe
(``accept_deltas``), read each message, note when it arrived (``time.monotonic``, system-wide
on Linux, so it compares with the publisher's clock) and Ack it. Its own cost is kept from the
figures as far as two shared cores allow: it takes the message as bytes and reads only its
version (the first field, as the server writes it), and sends its Ack as bytes, since a parse
of 100 messages of 2 MB would be CPU taken from the server; and it does not decode the
snapshot: on this machine's two cores 100 decodes queue
behind each other, where proxies each decode on their own CPU. The decode is measured alone
instead (``decode_snapshot`` of the parsed message, the collector paused as the client pauses
it, CPU time, median of 5 in the worker), and a proxy's time to apply its first snapshot is
the server's delivery to it plus that decode. ``bench/discovery.py`` measures the same with
real clients sharing four processes (info there).

1. ``cold``: 100 streams subscribe (all connected, no snapshot yet), then the first snapshot of
   10,000 routes (``discovery.shared_snapshot``) is published for the shared pool: every stream
   gets it in full. Per stream: publish → the full Snapshot received; the server encodes it
   once (``ResourceCache``) and writes the same bytes to every stream (``delivery``). Target:
   delivery + decode, p99 < 2 s.
2. ``streams``: 1,000 streams spread over S scopes (``GatewayScope`` bench/gw-<k>), each a
   snapshot of 1,000 routes. Once every stream has Acked its scope's first version, one-route
   changes of scope 0 are published one at a time (the next once all its streams Acked): publish
   → each of its subscribers received the Delta. Target: p99 < 200 ms. The streams of the other
   scopes must receive nothing meanwhile (counted). Run with S = 100 (10 streams a scope, a
   change for one Gateway among many) and S = 1 (the 1,000 workers of the shared pool's pods
   on one scope).

Figures: p50 / p99 / max over (publish, stream) pairs, nearest-rank; and in ``streams`` the CPU a
change cost the server's process (``time.process_time``) and the receiver processes (their
``/proc`` counters), each divided by the changes. The machine has 2 shared
cores: the server, the receivers and other work share them, so figures are pessimistic; the
load average before and after is printed. Exits 0 whatever the figures, non-zero only when it
breaks.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import discovery
import grpc
import harness
import trio

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.scope import GatewayScope, Scope, SharedPool
from coxswain.shell.discovery.codec import encode_scope, encode_snapshot
from coxswain.shell.discovery.server import open_discovery_server
from coxswain.shell.discovery.snapshot_decode import decode_snapshot
from coxswain.shell.discovery.tls import ClientCredentials, channel_credentials
from coxswain.shell.discovery.wire import CLIENT_GRPC_OPTIONS, WIRE_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrsistent.typing import PMap

    from coxswain.compile.snapshot import Snapshot
    from coxswain.shell.discovery.fleet import NodeKey, NodeObservation
    from coxswain.shell.discovery.server import DiscoveryServer

COLD_ROUTES, COLD_STREAMS = 10_000, 100
STREAMS, STREAM_ROUTES, CHANGES = 1_000, 1_000, 10
SCOPE_PLANS = (100, 1)
QUICK = {"cold": (100, 3), "streams": (20, 100)}
DECODE_REPEAT = 5
TIMEOUT_S = 600.0
TARGET_COLD_S, TARGET_CHANGE_S = 2.0, 0.200
_METHOD = f"/{pb.DESCRIPTOR.services_by_name['Discovery'].full_name}/Stream"


# --- receivers (each in its own process) ----------------------------------------------------------


def worker_receive() -> dict[str, Any]:
    """A receiver process: the streams of stdin's first JSON line, until stdin closes; then
    every message's (node id, version, arrival)."""
    setup = json.loads(sys.stdin.readline())
    return {"records": asyncio.run(_receive_all(setup))}


async def _receive_all(setup: dict[str, Any]) -> list[tuple[str, str, float]]:
    credentials = channel_credentials(
        ClientCredentials(
            cert_pem=setup["cert"].encode(),
            key_pem=setup["key"].encode(),
            ca_pem=setup["ca"].encode(),
        )
    )
    records: list[tuple[str, str, float]] = []
    tasks = [
        asyncio.create_task(_receive(setup["address"], credentials, node, gateway, records))
        for node, gateway in setup["streams"]
    ]
    await asyncio.to_thread(sys.stdin.read)  # until the publisher closes it
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return records


async def _receive(
    address: str,
    credentials: grpc.ChannelCredentials,
    node: str,
    gateway: str | None,
    records: list[tuple[str, str, float]],
) -> None:
    scope: Scope = SharedPool() if gateway is None else GatewayScope("bench", gateway)
    async with grpc.aio.secure_channel(address, credentials, options=CLIENT_GRPC_OPTIONS) as chan:
        call = chan.stream_stream(_METHOD)()  # bytes both ways: no serializer, no parse
        subscribe = pb.Subscribe(
            node_id=node, wire_version=WIRE_VERSION, scope=encode_scope(scope), accept_deltas=True
        )
        await call.write(pb.ClientMessage(subscribe=subscribe).SerializeToString())
        while (message := await call.read()) is not grpc.aio.EOF:
            arrived = time.monotonic()
            version = _version(message)
            records.append((node, version, arrived))
            await call.write(pb.ClientMessage(ack=pb.Ack(version=version)).SerializeToString())


def _version(message: bytes) -> str:
    """The version of a serialised ``ServerMessage``: its Snapshot's or Delta's field 1, which
    the server writes first (``resources.EncodedVersion``), read without parsing the rest; a
    receiver that parsed 100 messages of 2 MB would spend on it the CPU the server shares.
    Any other layout is parsed in full."""
    start = _varint(message, 1)[1]  # the oneof's tag is one byte, its length a varint
    if message[start] == 0x0A:  # field 1, length-delimited
        length, at = _varint(message, start + 1)
        return message[at : at + length].decode()
    parsed = pb.ServerMessage.FromString(message)
    kind = parsed.WhichOneof("message")
    assert kind is not None
    version: str = getattr(parsed, kind).version
    return version


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


# --- the publisher (a worker process per measurement) -------------------------------------------


async def _with_receivers(
    streams: list[tuple[str, str | None]],
    processes: int,
    measure: Callable[[DiscoveryServer, Callable[[], float]], Any],
) -> tuple[dict[str, Any], list[tuple[str, str, float]]]:
    """Run a server, ``streams`` (node id, gateway name or None for the shared pool) in
    receiver processes, and ``measure(server, receivers_cpu)`` once every stream is in the
    fleet (``receivers_cpu()``: the CPU seconds the receiver processes have used so far); then
    the receivers' records."""
    server_creds, client_creds = discovery.credentials()
    nodes = {node for node, _ in streams}
    children: list[trio.Process] = []
    outputs: list[bytearray] = []
    async with open_discovery_server(
        credentials=server_creds, policy=lambda _identity, _scope: True
    ) as server:
        try:
            async with trio.open_nursery() as nursery:
                started = time.monotonic()
                for first, count in discovery.shares(len(streams), processes):
                    setup = json.dumps(
                        {
                            "address": f"127.0.0.1:{server.port}",
                            "cert": client_creds.cert_pem.decode(),
                            "key": client_creds.key_pem.decode(),
                            "ca": client_creds.ca_pem.decode(),
                            "streams": streams[first : first + count],
                        }
                    )
                    argv = [sys.executable, __file__, "--worker", "receive"]
                    await discovery.start_child(nursery, argv, setup, children, outputs)
                with trio.fail_after(TIMEOUT_S):
                    await server.wait_fleet(lambda f: nodes <= {n for _, n in f})
                    connect_s = time.monotonic() - started
                    measured: dict[str, Any] = await measure(
                        server, lambda: sum(map(_cpu_s, children))
                    )
                measured["connect_s"] = connect_s
                await discovery.finish_children(children)
        finally:
            discovery.kill_children(children)
    records = [tuple(r) for output in outputs for r in json.loads(output)["records"]]
    return measured, records  # type: ignore[return-value]


def _cpu_s(child: trio.Process) -> float:
    """User and system CPU seconds of a running child process, from ``/proc`` (Linux)."""
    with open(f"/proc/{child.pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _acked(nodes: set[str], version: str) -> Callable[[PMap[NodeKey, NodeObservation]], bool]:
    def check(fleet: PMap[NodeKey, NodeObservation]) -> bool:
        done = {n for (_, n), entry in fleet.items() if entry.acked_version == version}
        return nodes <= done

    return check


def worker_cold(routes: int, streams: int, processes: int) -> dict[str, Any]:
    """Measurement 1 (see the module doc)."""
    processes = min(processes, streams)
    snapshot = discovery.shared_snapshot(routes)
    decode_s = _decode_alone(snapshot)
    nodes = [(f"cold-{i}", None) for i in range(streams)]
    published: dict[str, float] = {}

    async def measure(server: DiscoveryServer, _cpu: Callable[[], float]) -> dict[str, Any]:
        published[snapshot.version] = started = time.monotonic()
        server.publish(SharedPool(), snapshot)
        publish_s = time.monotonic() - started
        await server.wait_fleet(_acked({n for n, _ in nodes}, snapshot.version))
        return {"publish_s": publish_s, "all_acked_s": time.monotonic() - started}

    measured, records = trio.run(_with_receivers, nodes, processes, measure)
    delivery = [at - published[v] for _, v, at in records if v in published]
    if len(delivery) != streams:
        raise SystemExit(f"{len(delivery)} full snapshots received by {streams} streams")
    return {"routes": routes, "streams": streams, "processes": processes, "decode_s": decode_s,
            "delivery_s": delivery, **measured}  # fmt: skip


def _decode_alone(snapshot: Snapshot) -> list[float]:
    """``decode_snapshot`` of the parsed full Snapshot, the collector paused as the client
    pauses it; checked equal to what was encoded. CPU time: a proxy decodes on a core of its
    own, where this machine's other work would inflate a wall-clock figure."""
    data = encode_snapshot(snapshot).SerializeToString()
    times = []
    for _ in range(DECODE_REPEAT):
        message = pb.Snapshot.FromString(data)
        with discovery.collector_paused():
            started = time.process_time()
            decoded = decode_snapshot(message)
            times.append(time.process_time() - started)
        if decoded != snapshot:
            raise SystemExit("the decoded snapshot differs from the encoded one")
        del decoded
        gc.collect()
    return times


def worker_streams(streams: int, scopes: int, routes: int, processes: int) -> dict[str, Any]:
    """Measurement 2 (see the module doc)."""
    processes = min(processes, streams)
    base = discovery.shared_snapshot(routes)
    gateways = [f"gw-{k}" for k in range(scopes)]
    plan = [(f"s{i}", gateways[i % scopes]) for i in range(streams)]
    changed = {node for node, gateway in plan if gateway == gateways[0]}
    published: dict[str, float] = {}

    def scoped(k: int, snapshot: Snapshot) -> Snapshot:
        scope = GatewayScope("bench", gateways[k])
        return replace(snapshot, scope=scope, version=f"{gateways[k]}/{snapshot.version}")

    async def measure(server: DiscoveryServer, cpu_of: Callable[[], float]) -> dict[str, Any]:
        for k in range(scopes):
            first = scoped(k, base)
            server.publish(first.scope, first)
        for k in range(scopes):
            mine = {n for n, g in plan if g == gateways[k]}
            await server.wait_fleet(_acked(mine, scoped(k, base).version))
        gc.freeze()  # as the controller does after its first round (shell/controller.py)
        cpu, receivers = time.process_time(), cpu_of()
        for number in range(1, CHANGES + 1):
            change = scoped(0, discovery.variant(base, number))
            published[change.version] = time.monotonic()
            server.publish(change.scope, change)
            await server.wait_fleet(_acked(changed, change.version))
        return {
            "server_cpu_s": (time.process_time() - cpu) / CHANGES,
            "receivers_cpu_s": (cpu_of() - receivers) / CHANGES,
        }

    measured, records = trio.run(_with_receivers, plan, processes, measure)
    pairs = [at - published[v] for _, v, at in records if v in published]
    if len(pairs) != CHANGES * len(changed):
        raise SystemExit(f"{len(pairs)} changes received, {CHANGES * len(changed)} expected")
    firsts = len(plan)  # every stream's first version; anything more went to a scope not changed
    stray = len(records) - firsts - len(pairs)
    return {"streams": streams, "scopes": scopes, "routes": routes, "processes": processes,
            "subscribers": len(changed), "change_s": pairs, "stray": stray,
            **measured}  # fmt: skip


# --- report -------------------------------------------------------------------------------------


def report(cold: dict[str, Any], runs: list[dict[str, Any]], quick: bool) -> None:
    decode = statistics.median(cold["decode_s"])
    print(
        f"\nCold start: {cold['streams']} streams in {cold['processes']} receiver processes, the "
        f"first snapshot of {cold['routes']:,} routes published once all were connected "
        f"(connect {cold['connect_s']:.1f} s). ms: p50 / p99 / max"
    )
    print(f"  publish() {cold['publish_s'] * 1e3:,.1f}; publish → full Snapshot received "
          f"{harness.spread(cold['delivery_s'], 1)}; every Ack in the fleet "
          f"{cold['all_acked_s'] * 1e3:,.0f}")  # fmt: skip
    print(f"  decode_snapshot alone, collector paused, CPU ms: median (best) "
          f"{harness.med_best(cold['decode_s'])} over {len(cold['decode_s'])} runs")  # fmt: skip
    print("\nOne scope changed among many open streams: publish → its subscribers received the "
          "Delta. ms: p50 / p99 / max")  # fmt: skip
    columns = [("streams", 7), ("scopes", 6), ("routes/scope", 12), ("procs", 5),
               ("subscribers", 11), ("pairs", 5), ("received", 24), ("stray", 5),
               ("server CPU", 10), ("receivers CPU", 13), ("connect s", 9)]  # fmt: skip
    harness.print_table(columns, [
        [r["streams"], r["scopes"], f"{r['routes']:,}", r["processes"], r["subscribers"],
         len(r["change_s"]), harness.spread(r["change_s"], 1), r["stray"],
         f"{r['server_cpu_s'] * 1e3:.1f}", f"{r['receivers_cpu_s'] * 1e3:.1f}",
         f"{r['connect_s']:.1f}"] for r in runs])  # fmt: skip
    print("  stray: messages to streams of scopes that did not change (expected 0)\n"
          "  server CPU: ms of CPU a change cost the server's process (all its threads: publish,"
          " the loop, gRPC's)\n  receivers CPU: ms of CPU a change cost the receiver processes,"
          " all of them\n\nTargets")  # fmt: skip
    if quick:
        harness.print_skipped_targets()
        return
    applied = harness.percentile(cold["delivery_s"], 0.99) + max(cold["decode_s"])
    lines = [(applied < TARGET_COLD_S,
              f"{cold['streams']} proxies subscribing at once to {cold['routes']:,} routes, each "
              f"applied (delivery p99 + slowest decode) < {TARGET_COLD_S:g} s: "
              f"{applied * 1e3:,.0f} ms (decode median {decode * 1e3:,.1f} ms)")]  # fmt: skip
    for run in runs:
        p99 = harness.percentile(run["change_s"], 0.99)
        lines.append((p99 < TARGET_CHANGE_S and run["stray"] == 0,
                      f"{run['streams']:,} open streams over {run['scopes']} scope(s), a change "
                      f"for one scope reaching its {run['subscribers']} subscribers, p99 < "
                      f"{TARGET_CHANGE_S * 1e3:g} ms: {p99 * 1e3:,.0f} ms, "
                      f"{run['stray']} stray"))  # fmt: skip
    harness.print_targets(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = harness.parse_args(__doc__, argv, discovery.processes_option("receiver processes"))
    if args.worker:
        if args.worker == ["receive"]:
            json.dump(worker_receive(), sys.stdout)
        else:
            harness.answer_worker(args.worker, {"cold": worker_cold, "streams": worker_streams})
        return 0
    processes = max(1, args.processes)
    cold_plan = QUICK["cold"] if args.quick else (COLD_ROUTES, COLD_STREAMS)
    streams, routes = QUICK["streams"] if args.quick else (STREAMS, STREAM_ROUTES)
    scope_plans = (min(2, streams), 1) if args.quick else SCOPE_PLANS
    with harness.session(__file__, argv):
        print(f"  cold start, {cold_plan[1]} streams, {cold_plan[0]:,} routes ...", flush=True)
        cold = harness.run_worker(__file__, ["cold", *map(str, cold_plan), str(processes)])
        runs = harness.run_workers(
            __file__,
            "streams",
            [(streams, scopes, routes, processes) for scopes in scope_plans],
            lambda entry: f"{entry[0]:,} streams over {entry[1]} scope(s)",
        )
        report(cold, runs, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
