"""Benchmark: the controller at scale. Cold start, memory, loop lag and lease through a resync.

Run from the repository root::

    .venv/bin/python bench/controller_scale.py           # 1,000 Gateways (about 4 minutes)
    .venv/bin/python bench/controller_scale.py --quick   # 20 Gateways: a smoke run
    .venv/bin/python bench/controller_scale.py --gateways 200

The world is ``compile_scopes.workload`` (1,000 Gateways, 10,000 HTTPRoutes of 10 rules: 100,000
rules, 15,000 Services and as many EndpointSlices, 300 Ingresses; half the Gateways on the shared
pool, a quarter dedicated with a ready Deployment, a quarter dedicated and rolling out), stored
in the API emulator (``tests.apiserver.ApiServer``, real Kubernetes REST on 127.0.0.1) before the
controller starts. The emulator runs in a process of its own (``multiprocessing``), so that its
work (a list of 15,000 Services serialised, every status PATCH served) does not share an
interpreter lock with the probes here, which would distort their figures; it answers this
script's commands over a pipe.

``python -m coxswain controller --kubeconfig ...`` runs as a subprocess with its default
settings (Lease of 15 s renewed every 5 s). Throughout, a thread asks its ``/healthz`` every
100 ms (``controller.HealthProbe``: the event loop that answers also renews the Lease and runs
the rounds), and a thread in the emulator's process reads the Lease every 100 ms, recording
each new ``renewTime``.

1. **Cold start**: from the controller's start until its ``/metrics`` says every scope is
   published (``coxswain_controller_published_scopes`` at the count expected: the shared pool
   and each dedicated Gateway, ready or rolling out; the first round handed their snapshots to
   the discovery server), and until ``/readyz`` answers 200 (the first round finished: status
   written, proxies provisioned). Then until the controller is idle (no round for 2 s).
2. **Full resync**: the emulator forgets its watch history and ends every watch
   (``ApiServer.expire``): each informer's new watch gets 410 Gone and
   lists its resource again, as after an API server restart with a cold watch cache. The
   phase lasts from then until every resource watched has been listed again and the controller
   is idle again.
3. **Changes**: one object at a time, written into the emulator's store as another client
   would, the controller idle (no round for 1 s) before each: the first path of 20 HTTPRoutes,
   then the first address of 20 EndpointSlices, each served by the shared pool alone (the
   largest scope). A receiver subscribed to the shared pool with the shared proxies'
   certificate (``discovery_fleet.py --worker receive``: each message's version read and
   Acked, nothing decoded) notes each version's arrival: change → the next version received,
   which is publish plus delivery. An edit's status: change → the route's status for its new
   generation stored (the store's own watch, in the emulator's process).

The same figures are taken over 10 s of the idle controller between the two: on a loaded
machine the scheduler's own delays show there, and a phase's figure means something only beside
that baseline. For each phase: the event-loop lag histogram's p99 and worst (bucket bounds, from the
difference of two ``/metrics`` scrapes), the ``/healthz`` answer times (p99 and worst), the
Lease renewals (the longest gap between two ``renewTime`` values; a gap longer than 1.5 renewal
periods counts as a missed renewal), the rounds and status writes, and VmHWM / VmRSS of the
controller at its end (``/proc``). Targets (docs/benchmarks.md): cold start < 30 s, VmHWM <
1.5 GB, loop lag p99 < 50 ms during the resync, ``/healthz`` p99 < 100 ms throughout, no
renewal missed, the lease kept. The script prints PASS or MISS per target and exits 0 whatever
the figures; non-zero when it breaks (a wait times out, a process dies). Changes: an edit's
version received p99 < 100 ms and its status p99 < 250 ms, an EndpointSlice's p99 < 50 ms.

Caveats: 2 shared cores run the emulator, the controller and other work; the load average
before and after is printed. The emulator stores bodies as given (no CRD defaulting), so memory
is a lower bound. The status writes of the cold start go to the emulator over loopback.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import itertools
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import api_objects as objects
import compile_scopes
import controller as bench_controller
import harness
import processes

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the emulator lives in tests/, beside coxswain/
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

NAMESPACE = "coxswain-system"
LEASE = "coxswain-controller"
RENEW_EVERY_S = 5.0  # the controller's default: a 15 s Lease renewed every third of it
HISTORY = 500_000
IDLE_FOR = 2.0
TIMEOUT = 600.0  # the world's load, the cold start: each wait

SERVICE_LABEL = "kubernetes.io/service-name"
CHANGES = 20  # of each kind
CHANGE_IDLE_S = 1.0  # before each change: no round for this long

TARGET_COLD_S = 30.0
TARGET_HWM_MB = 1_500.0
TARGET_LAG_P99_S = 0.050
TARGET_HEALTHZ_P99_S = 0.100
TARGET_EDIT_S, TARGET_STATUS_S, TARGET_ENDPOINTS_S = 0.100, 0.250, 0.050


# --- the emulator, in its own process -----------------------------------------------------------


def emulator(gateways: int, folder: str, pipe: Connection) -> None:
    """The emulator's process: load the world, answer commands until ``stop``."""
    from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer

    load = compile_scopes.workload(gateways, objects.make_tls_data(compile_scopes.TLS_SERIAL))
    with ApiServer(history_limit=HISTORY) as api:
        api.install_crds(COXSWAIN_CRDS, GATEWAY_API_CRDS)
        started = time.perf_counter()
        for body in load["bodies"]:
            api.put_object(body)
        put_s = time.perf_counter() - started
        renewals: list[str] = []
        done = threading.Event()

        def follow_lease() -> None:
            while not done.wait(0.1):
                lease = api.get("Lease", LEASE, NAMESPACE) or {}
                renewed = (lease.get("spec") or {}).get("renewTime")
                if renewed and (not renewals or renewals[-1] != renewed):
                    renewals.append(renewed)

        follower = threading.Thread(target=follow_lease, daemon=True)
        follower.start()
        changes = _Changes(api)
        summary = {k: v for k, v in load.items() if isinstance(v, int)}
        pipe.send({"kubeconfig": str(api.kubeconfig(Path(folder) / "kubeconfig")),
                   "put_s": put_s, **summary})  # fmt: skip
        while True:
            command = pipe.recv()
            if command == "stop":
                break
            if command == "resync":
                watched = _watched(api)
                mark = len(api.requests)
                api.expire()
                pipe.send({"watched": sorted(watched), "mark": mark})
            elif isinstance(command, tuple) and command[0] == "relisted":
                _, mark, watched = command
                listed = {r.path for r in api.requests[mark:] if _is_list(r)}
                pipe.send(set(watched) <= listed)
            elif command == "renewals":
                pipe.send(list(renewals))
            elif command == "secret":
                pipe.send(_discovery_secret(api))
            elif command == "changeable":
                pipe.send(_changeable(api))
            elif isinstance(command, tuple) and command[0] == "change":
                pipe.send(changes.make(*command[1:]))
            elif command == "written":
                pipe.send(changes.written)
        done.set()
        follower.join()


def _discovery_secret(api: Any) -> dict[str, str] | None:
    """The shared proxies' discovery certificate, key and CA (PEM), once the controller has
    written their Secret."""
    secret = api.get("Secret", "coxswain-proxy-discovery-tls", NAMESPACE)
    if secret is None:
        return None
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    return {"cert": data["tls.crt"], "key": data["tls.key"], "ca": data["ca.crt"]}


def _changeable(api: Any) -> dict[str, list[tuple[str, str]]]:
    """(namespace, name) of the HTTPRoutes and EndpointSlices only the shared pool serves: the
    routes of Gateways with no ``infrastructure`` (no dedicated proxy) and their Services'
    slices. The shared pool is the largest scope, the one whose compile and hash cost most."""
    shared = {
        (g["metadata"]["namespace"], g["metadata"]["name"])
        for g in api.objects("Gateway")
        if "infrastructure" not in g["spec"]
    }
    routes, services = [], set()
    for route in api.objects("HTTPRoute"):
        namespace = route["metadata"]["namespace"]
        parents = {(namespace, p["name"]) for p in route["spec"]["parentRefs"]}
        if parents <= shared:
            routes.append((namespace, route["metadata"]["name"]))
            services |= {
                (namespace, b["name"]) for r in route["spec"]["rules"] for b in r["backendRefs"]
            }
    slices = [
        (s["metadata"]["namespace"], s["metadata"]["name"])
        for s in api.objects("EndpointSlice")
        if (s["metadata"]["namespace"], s["metadata"]["labels"][SERVICE_LABEL]) in services
    ]
    return {"HTTPRoute": sorted(routes), "EndpointSlice": sorted(slices)}


class _Changes:
    """One object changed at a time, as another client would, and when the controller wrote
    an edited HTTPRoute's status for its new generation (its store's watch, in a thread)."""

    def __init__(self, api: Any) -> None:
        self._api = api
        self.written: dict[int, float] = {}  # change number → time.monotonic()

    def make(self, number: int, kind: str, namespace: str, name: str) -> float:
        """Change the object; the time just before (``time.monotonic``: system-wide on Linux,
        so it compares with a receiver's clock)."""
        body = self._api.get(kind, name, namespace)
        if kind == "HTTPRoute":
            body["spec"]["rules"][0]["matches"][0]["path"]["value"] = f"/edited-{number}"
            rt = self._api.store.kind(kind)
            _, watcher = self._api.store.watch(rt, namespace, str(self._api.resource_version))
            generation = body["metadata"]["generation"] + 1
            threading.Thread(
                target=self._await_status, args=(number, watcher, name, generation), daemon=True
            ).start()
        else:
            body["endpoints"][0]["addresses"] = [f"10.250.{number // 250}.{number % 250}"]
        at = time.monotonic()
        self._api.put_object(body)
        return at

    def _await_status(self, number: int, watcher: Any, name: str, generation: int) -> None:
        try:
            while (event := watcher.queue.get(timeout=TIMEOUT)) is not None:
                obj = getattr(event, "obj", None)
                if obj is None or obj["metadata"]["name"] != name:
                    continue
                parents = (obj.get("status") or {}).get("parents") or []
                conditions = [c for p in parents for c in p.get("conditions", [])]
                if conditions and all(c["observedGeneration"] == generation for c in conditions):
                    self.written[number] = time.monotonic()
                    return
        finally:
            self._api.store.unwatch(watcher)


def _watched(api: Any) -> set[str]:
    """The collections some watch was opened on."""
    return {r.path for r in api.requests if r.method == "GET" and "watch=true" in r.query}


def _is_list(request: Any) -> bool:
    return request.method == "GET" and "watch=true" not in request.query


class Emulator:
    """The emulator's process and the pipe to it."""

    def __init__(self, gateways: int, folder: Path) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=emulator, args=(gateways, str(folder), child), daemon=True
        )

    def __enter__(self) -> Self:
        self._process.start()
        if not self._pipe.poll(TIMEOUT):
            raise SystemExit("the emulator did not load the world in time")
        self.loaded: dict[str, Any] = self._pipe.recv()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._process.is_alive():
            self._pipe.send("stop")
            self._process.join(30)
        if self._process.is_alive():
            self._process.kill()

    def ask(self, command: object) -> Any:
        self._pipe.send(command)
        return self._pipe.recv()


# --- reading the controller ---------------------------------------------------------------------


def gauge(port: int, name: str) -> float | None:
    """One value of the controller's ``/metrics`` (None: no answer, or not there yet)."""
    try:
        _, body = processes.http_get("127.0.0.1", port, "/metrics", timeout=30)
    except OSError:
        return None
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.rpartition(" ")[2])
    return None


def ready(port: int) -> bool:
    try:
        status, _ = processes.http_get("127.0.0.1", port, "/readyz", timeout=30)
    except OSError:
        return False
    return status == 200


def wait_idle(port: int, fleet: processes.Fleet) -> None:
    """Until no round has run for ``IDLE_FOR`` seconds: none in progress
    (``coxswain_controller_reconciling``) and none completed meanwhile."""
    bench_controller.wait_idle(
        port, fleet, IDLE_FOR, lambda: gauge(port, "coxswain_controller_reconciling") != 0
    )


def _renew_time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user and system, every thread): unlike wall time, what a
    phase costs whatever else the machine runs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def renewal_gaps(renewals: list[str], since: float, until: float) -> list[float]:
    """Gaps between successive renewals that end within the wall-clock window."""
    times = [_renew_time(t) for t in renewals]
    return [b - a for a, b in itertools.pairwise(times) if since <= b <= until + 1]


# --- the run ------------------------------------------------------------------------------------


def phase(
    probe: bench_controller.HealthProbe,
    before: bench_controller.Metrics,
    after: bench_controller.Metrics,
    window: tuple[float, float],
    wall: tuple[float, float],
    renewals: list[str],
    pid: int,
) -> dict[str, Any]:
    """The figures of one phase."""
    spent = after - before
    answers = [took for asked, took in probe.answers if window[0] <= asked <= window[1]]
    gaps = renewal_gaps(renewals, *wall)
    return {
        "lag_p99": bench_controller.lag_bound(spent.lag, 0.99),
        "lag_worst": bench_controller.lag_bound(spent.lag, 1.0),
        "lag_samples": spent.lag.get(float("inf"), 0.0),
        "healthz_p99": harness.percentile(answers, 0.99) if answers else 0.0,
        "healthz_worst": max(answers, default=0.0),
        "healthz_samples": len(answers),
        "renewals": len(gaps),
        "longest_gap": max(gaps, default=0.0),
        "missed": sum(gap > 1.5 * RENEW_EVERY_S for gap in gaps),
        "rounds": spent.reconciles,
        "round_seconds": spent.seconds,
        "status_writes": spent.status_writes,
        "memory": bench_controller.proc_status(pid),
        "cpu": cpu_seconds(pid),
    }


def run(gateways: int) -> dict[str, Any]:
    result: dict[str, Any] = {"gateways": gateways}
    with tempfile.TemporaryDirectory(prefix="bench-controller-scale-") as tmp:
        folder = Path(tmp)
        with (
            Emulator(gateways, folder) as emulated,
            processes.Fleet(folder, first_signal=signal.SIGKILL) as fleet,
        ):
            result["world"] = emulated.loaded
            health = processes.free_port()
            discovery = processes.free_port()
            with bench_controller.HealthProbe(health) as probe:
                _run(emulated, fleet, probe, health, discovery, result)
    return result


def _run(
    emulated: Emulator,
    fleet: processes.Fleet,
    probe: bench_controller.HealthProbe,
    health: int,
    discovery: int,
    result: dict[str, Any],
) -> None:
    loaded = emulated.loaded
    expected_scopes = 1 + int(loaded["ready"]) + int(loaded["pending"])
    wall0, started = time.time(), time.perf_counter()
    process = fleet.start(
        "controller",
        bench_controller.coxswain(
            "controller", "--kubeconfig", loaded["kubeconfig"], "--namespace", NAMESPACE,
            "--discovery-port", str(discovery), "--health-port", str(health),
            "--discovery-address", f"127.0.0.1:{discovery}",
            "--shared-vip-service-type", "ClusterIP",
        ),
        ROOT,
    )  # fmt: skip
    zero = bench_controller.Metrics()

    def published() -> bool:
        return (gauge(health, "coxswain_controller_published_scopes") or 0) >= expected_scopes

    processes.wait_until(published, "every scope published", timeout=TIMEOUT, every=0.1,
                         fleet=fleet)  # fmt: skip
    result["published_s"] = time.perf_counter() - started
    result["published_cpu"] = cpu_seconds(process.pid)
    processes.wait_until(lambda: ready(health), "/readyz", timeout=TIMEOUT, every=0.1, fleet=fleet)
    result["ready_s"] = time.perf_counter() - started
    wait_idle(health, fleet)
    result["idle_s"] = time.perf_counter() - started
    result["scopes"] = gauge(health, "coxswain_controller_published_scopes")
    cold = bench_controller.scrape(health, fleet)
    result["cold"] = phase(
        probe, zero, cold, (started, time.perf_counter()), (wall0, time.time()),
        emulated.ask("renewals"), process.pid,
    )  # fmt: skip

    # a full resync: every watch ends, its history gone (410 Gone), every resource listed again
    # the idle controller: the baseline of the machine's own scheduling delays
    wall_idle, quiet = time.time(), time.perf_counter()
    time.sleep(2 * RENEW_EVERY_S)
    idle = bench_controller.scrape(health, fleet)
    result["idle"] = phase(
        probe, cold, idle, (quiet, time.perf_counter()), (wall_idle, time.time()),
        emulated.ask("renewals"), process.pid,
    )  # fmt: skip
    wall1, since = time.time(), time.perf_counter()
    trigger = emulated.ask("resync")
    processes.wait_until(
        lambda: bool(emulated.ask(("relisted", trigger["mark"], trigger["watched"]))),
        "every resource listed again", timeout=TIMEOUT, every=0.2, fleet=fleet,
    )  # fmt: skip
    result["relisted_s"] = time.perf_counter() - since
    wait_idle(health, fleet)
    result["resync_s"] = time.perf_counter() - since
    time.sleep(RENEW_EVERY_S)  # the renewal after it
    after = bench_controller.scrape(health, fleet)
    result["watched"] = len(trigger["watched"])
    result["resync"] = phase(
        probe, idle, after, (since, time.perf_counter()), (wall1, time.time()),
        emulated.ask("renewals"), process.pid,
    )  # fmt: skip
    fleet.check()  # still running: the lease was never lost
    result["alive"] = process.poll() is None
    result["changes"] = _changes(emulated, fleet, health, discovery)


def _changes(
    emulated: Emulator, fleet: processes.Fleet, health: int, discovery: int
) -> dict[str, Any]:
    """One object changed at a time, the controller idle before each: an HTTPRoute's first
    path (``CHANGES`` routes), then an EndpointSlice's first address (as many slices), each
    served by the shared pool alone. A receiver subscribed to the shared pool as its proxies
    are (``discovery_fleet``'s: it reads each message's version and Acks it, no decode)
    notes when each version arrives: change → the next version received. An edit's status:
    change → the route's status for its new generation stored."""
    credentials = emulated.ask("secret")
    if credentials is None:
        raise SystemExit("no discovery Secret for the shared proxies")
    changeable = emulated.ask("changeable")
    plan = [
        (kind, *changeable[kind][(i * 7919) % len(changeable[kind])])
        for kind in ("HTTPRoute", "EndpointSlice")
        for i in range(CHANGES)
    ]
    setup = {"address": f"127.0.0.1:{discovery}", **credentials, "streams": [["bench", None]]}
    rounds = bench_controller.scrape(health, fleet).reconciles
    with _Receiver(setup) as receiver:
        # its Ack of the shared pool's full snapshot brings a round (the fleet changed)
        processes.wait_until(
            lambda: bench_controller.scrape(health, fleet).reconciles > rounds,
            "the receiver's first snapshot", timeout=TIMEOUT, every=0.1, fleet=fleet,
        )  # fmt: skip
        made: list[tuple[str, float]] = []
        for number, (kind, namespace, name) in enumerate(plan):
            bench_controller.wait_idle(health, fleet, CHANGE_IDLE_S)
            made.append((kind, emulated.ask(("change", number, kind, namespace, name))))
        bench_controller.wait_idle(health, fleet, CHANGE_IDLE_S)
        records = receiver.records()
    written = emulated.ask("written")
    arrivals = sorted(at for _, _, at in records)
    figures: dict[str, list[float]] = {"HTTPRoute": [], "EndpointSlice": [], "status": []}
    for number, (kind, at) in enumerate(made):
        after = [arrived for arrived in arrivals if arrived > at]
        if not after:
            raise SystemExit(f"change {number} ({kind}): no version received after it")
        figures[kind].append(after[0] - at)
        if kind == "HTTPRoute":
            if number not in written:
                raise SystemExit(f"change {number}: the route's status was not written")
            figures["status"].append(written[number] - at)
    return figures


class _Receiver:
    """``discovery_fleet.py --worker receive`` in a process of its own: its streams' messages
    until its stdin closes; then (node, version, arrival) of each."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self._setup = setup

    def __enter__(self) -> Self:
        argv = [sys.executable, str(ROOT / "bench" / "discovery_fleet.py"), "--worker", "receive"]
        self._process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT / "bench"
        )
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(self._setup).encode() + b"\n")
        self._process.stdin.flush()
        return self

    def records(self) -> list[tuple[str, str, float]]:
        output, _ = self._process.communicate(timeout=TIMEOUT)
        if self._process.returncode:
            raise SystemExit(f"the receiver failed ({self._process.returncode})")
        return [tuple(r) for r in json.loads(output)["records"]]  # type: ignore[misc]

    def __exit__(self, *exc_info: object) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


# --- report -------------------------------------------------------------------------------------


def _line(label: str, figures: dict[str, Any]) -> str:
    memory = figures["memory"]
    return (
        f"{label}: loop lag p99 ≤ {figures['lag_p99'] * 1e3:,.0f} ms, worst ≤ "
        f"{figures['lag_worst'] * 1e3:,.0f} ms ({figures['lag_samples']:,.0f} wake-ups); "
        f"/healthz p99 {figures['healthz_p99'] * 1e3:,.0f} ms, worst "
        f"{figures['healthz_worst'] * 1e3:,.0f} ms ({figures['healthz_samples']} answers); "
        f"{figures['renewals']} lease renewals, longest gap {figures['longest_gap']:.1f} s, "
        f"{figures['missed']} missed; {figures['rounds']:.0f} rounds "
        f"({figures['round_seconds']:.1f} s), {figures['status_writes']:,.0f} status writes; "
        f"VmHWM {harness.mb(memory['VmHWM'])} MB, VmRSS {harness.mb(memory['VmRSS'])} MB"
    )


def report(result: dict[str, Any], quick: bool) -> None:
    world = result["world"]
    cold, resync = result["cold"], result["resync"]
    print()
    print(
        f"world: {world['gateways']:,} Gateways ({world['shared']} shared, {world['pending']} "
        f"dedicated rolling out, {world['ready']} dedicated ready), {world['routes']:,} "
        f"HTTPRoutes, {world['rules']:,} rules, {world['services']:,} Services, "
        f"{world['slices']:,} EndpointSlices, {world['ingresses']:,} Ingresses: "
        f"{world['objects']:,} objects stored in {world['put_s']:.1f} s"
    )
    print(
        f"cold start: {result['scopes']:.0f} scopes published {result['published_s']:.2f} s "
        f"after the controller's start ({result['published_cpu']:.1f} s of its CPU time); "
        f"ready {result['ready_s']:.2f} s; idle {result['idle_s']:.2f} s "
        f"({cold['cpu']:.1f} s of CPU)"
    )
    print(_line("  during it", cold))
    print(
        f"full resync ({result['watched']} resources watched, 410 Gone): all listed again "
        f"{result['relisted_s']:.2f} s after, idle after {result['resync_s']:.2f} s "
        f"({resync['cpu'] - result['idle']['cpu']:.1f} s of CPU)"
    )
    print(_line("  during it", resync))
    print(_line(f"idle {2 * RENEW_EVERY_S:g} s before the resync (baseline)", result["idle"]))
    changes = result["changes"]
    for what, label in (
        ("HTTPRoute", "an HTTPRoute's path edited → the shared pool's new version received"),
        ("status", "  → its status for the new generation stored"),
        ("EndpointSlice", "an EndpointSlice's address changed → the new version received"),
    ):
        times = changes[what]
        print(f"{label}: {harness.spread(times, 1)} ms (median / p99 / max of {len(times)})")
    edit, status, endpoints = (
        harness.percentile(changes[k], 0.99) for k in ("HTTPRoute", "status", "EndpointSlice")
    )
    hwm = max(cold["memory"]["VmHWM"], resync["memory"]["VmHWM"]) / harness.MB
    healthz = max(cold["healthz_p99"], resync["healthz_p99"])
    missed = cold["missed"] + resync["missed"]
    rows = [
        ("cold start to every scope published", f"< {TARGET_COLD_S:g} s",
         f"{result['published_s']:.2f} s", result["published_s"] < TARGET_COLD_S),
        ("controller VmHWM", f"< {TARGET_HWM_MB:,.0f} MB", f"{hwm:,.0f} MB",
         hwm < TARGET_HWM_MB),
        ("loop lag p99 during the resync", f"< {TARGET_LAG_P99_S * 1e3:g} ms",
         f"≤ {resync['lag_p99'] * 1e3:,.0f} ms", resync["lag_p99"] < TARGET_LAG_P99_S),
        ("/healthz p99, both phases", f"< {TARGET_HEALTHZ_P99_S * 1e3:g} ms",
         f"{healthz * 1e3:,.0f} ms", healthz < TARGET_HEALTHZ_P99_S),
        ("lease renewals missed, both phases", "0", str(missed), missed == 0),
        ("lease kept through the resync", "yes", "yes" if result["alive"] else "no",
         result["alive"]),
        ("HTTPRoute edit → new version received, p99", f"< {TARGET_EDIT_S * 1e3:g} ms",
         f"{edit * 1e3:,.1f} ms", edit < TARGET_EDIT_S),
        ("HTTPRoute edit → status stored, p99", f"< {TARGET_STATUS_S * 1e3:g} ms",
         f"{status * 1e3:,.1f} ms", status < TARGET_STATUS_S),
        ("EndpointSlice → new version received, p99", f"< {TARGET_ENDPOINTS_S * 1e3:g} ms",
         f"{endpoints * 1e3:,.1f} ms", endpoints < TARGET_ENDPOINTS_S),
    ]  # fmt: skip
    print()
    print("Targets")
    bench_controller.print_verdicts(rows, quick)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 Gateways: a smoke run")
    parser.add_argument("--gateways", type=int, help="(default 1,000)")
    args = parser.parse_args(argv)
    gateways = args.gateways or (20 if args.quick else compile_scopes.TARGET_GATEWAYS)
    with harness.session(__file__, argv):
        result = run(gateways)
        report(result, args.quick or gateways < compile_scopes.TARGET_GATEWAYS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
