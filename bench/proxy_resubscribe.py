"""Benchmark: a proxy's event loop while a full snapshot arrives, is decoded and applied.

Run from the repository root::

    .venv/bin/python bench/proxy_resubscribe.py            # 10,000 routes, 10 rounds (about 10 s)
    .venv/bin/python bench/proxy_resubscribe.py --quick    # a smoke run

A proxy gets a full snapshot when it subscribes: at its start, and again after every reconnect
(a controller failing over, a discovery server restarted), while it serves traffic. The
discovery server runs in a process of its own (``multiprocessing``) with the shared pool's
snapshot of ``--routes`` Ingress paths (``discovery.shared_snapshot``) published; this process
is the proxy's side: its switch interval set as a proxy process sets it
(``shell.offload.share_the_lock``), a discovery client (``stream_snapshots``, mutual TLS)
subscribing ``--rounds`` times in turn, each snapshot applied as the proxy applies it
(``Served`` built beside the previous one, then ``gc.freeze()``) before the stream is
closed. A probe task asks to
be woken every millisecond throughout (as ``shell.loop_lag`` does, finer): per round, how late
its worst wake-up was, and the lateness summed over its wake-ups more than 5 ms late. A request
arriving meanwhile waits about as long.

Figures: per round, subscribe → snapshot applied, the worst lateness and the summed lateness
(median and worst over rounds). Exits 0 whatever the figures.
"""

from __future__ import annotations

import gc
import multiprocessing
import sys
import time
from functools import partial
from typing import TYPE_CHECKING, Any

import discovery
import harness
import trio

from coxswain.compile.scope import SharedPool
from coxswain.shell.dataplane.served import Served
from coxswain.shell.discovery.client import stream_snapshots
from coxswain.shell.discovery.server import granted_by, open_discovery_server
from coxswain.shell.offload import share_the_lock

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from multiprocessing.connection import Connection

    from coxswain.compile.snapshot import Snapshot
    from coxswain.shell.discovery.tls import ClientCredentials, ServerCredentials

TICK = 0.001
LATE = 0.005  # a wake-up later than this counts in the summed lateness


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--routes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)


def _serve(conn: Connection, snapshot: Snapshot, credentials: ServerCredentials) -> None:
    """The discovery server's process: publish ``snapshot``, tell the port, serve on."""

    async def run() -> None:
        policy = granted_by(lambda: {discovery.IDENTITY: SharedPool()})
        async with open_discovery_server(credentials=credentials, policy=policy) as server:
            server.publish(SharedPool(), snapshot)
            conn.send(server.port)
            await trio.sleep_forever()

    trio.run(run)


async def _rounds(port: int, credentials: ClientCredentials, rounds: int) -> list[dict[str, Any]]:
    results = []
    served: Served | None = None
    for _ in range(rounds):
        figures, served = await _subscribe_once(port, credentials, served)
        results.append(figures)
        await trio.sleep(0.3)
    return results


async def _subscribe_once(
    port: int, credentials: ClientCredentials, served: Served | None
) -> tuple[dict[str, Any], Served | None]:
    """One subscription until its full snapshot is applied; the probe's lateness meanwhile."""
    applied = trio.Event()
    lateness: list[float] = []

    async def on_snapshot(snapshot: Snapshot) -> None:
        nonlocal served
        served = Served(snapshot, ingress_http_port=8080, ingress_https_port=8443, previous=served)
        gc.freeze()  # as the proxy's apply settles its heap (shell.dataplane.server)
        applied.set()

    async def probe() -> None:
        while True:
            asked = time.perf_counter()
            await trio.sleep(TICK)
            lateness.append(time.perf_counter() - asked - TICK)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(probe)
        started = time.perf_counter()
        nursery.start_soon(
            partial(
                stream_snapshots,
                f"127.0.0.1:{port}",
                node_id="resubscribe",
                scope=None,
                credentials=credentials,
                on_snapshot=on_snapshot,
            )
        )
        await applied.wait()
        took = time.perf_counter() - started
        await trio.sleep(0.2)  # the Ack written, the stream settled
        nursery.cancel_scope.cancel()
    late = sum(x for x in lateness if x > LATE)
    return {"applied_s": took, "worst_s": max(lateness), "late_s": late}, served


def main(argv: Sequence[str]) -> None:
    args = harness.parse_args(__doc__, argv, _options)
    routes, rounds = (100, 2) if args.quick else (args.routes, args.rounds)
    with harness.session(__file__, argv):
        snapshot = discovery.shared_snapshot(routes)
        server_credentials, client_credentials = discovery.credentials()
        ours, theirs = multiprocessing.Pipe()
        server = multiprocessing.get_context("fork").Process(
            target=_serve, args=(theirs, snapshot, server_credentials), daemon=True
        )
        server.start()
        try:
            if not ours.poll(60):
                raise SystemExit("the discovery server did not start")
            port = ours.recv()
            share_the_lock()
            results = trio.run(_rounds, port, client_credentials, rounds)
        finally:
            server.kill()
        print(f"\n{routes:,} routes, {rounds} full snapshots received in turn (ms)")
        harness.print_table(
            [
                ("round", 6),
                ("subscribe → applied", 20),
                ("worst lateness", 16),
                ("late, summed", 14),
            ],
            [
                (i + 1, f"{r['applied_s'] * 1e3:.1f}", f"{r['worst_s'] * 1e3:.1f}",
                 f"{r['late_s'] * 1e3:.1f}")
                for i, r in enumerate(results)
            ],
        )  # fmt: skip
        for key, name in (("applied_s", "subscribe → applied"), ("worst_s", "worst lateness")):
            values = sorted(r[key] for r in results)
            print(f"{name}: median {harness.percentile(values, 0.5) * 1e3:.1f} ms, "
                  f"worst {values[-1] * 1e3:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
