"""Benchmark: the controller end to end. Object created → first 200, attach time, memory.

Run from the repository root::

    .venv/bin/python bench/controller.py           # full run (about 2 minutes)
    .venv/bin/python bench/controller.py --quick   # tiny counts: a smoke run (about 7 s)
    .venv/bin/python bench/controller.py --profile /tmp/controller.prof   # cProfile the controller

Three measurements, one run, the controller and the proxy as they really run:

- the API emulator (``tests.apiserver.ApiServer``, real Kubernetes REST over HTTP on 127.0.0.1)
  in this process, with the Gateway API CRDs and Coxswain's; its watch history holds 200,000
  events so that no informer has to relist while the benchmark writes (a real API server's
  watch cache is smaller: a relist there is a cost this run does not pay);
- ``python -m coxswain controller --kubeconfig ...`` as a subprocess with its default settings
  (debounce 50 ms after the last change, at most 1 s after the first), so that its memory is its
  own: VmHWM and VmRSS come from ``/proc/<pid>/status``; reconcile rounds, their total time and
  the status writes come from its ``/metrics`` on the health port;
- ``python -m coxswain proxy --shared --discovery ... --workers 1`` as a subprocess on
  127.0.0.9, with the certificate the controller wrote into the Secret
  ``coxswain-proxy-discovery-tls``;
- an echo backend (a threaded ``http.server`` answering 200) behind the Service ``bench/echo``
  and its EndpointSlice; one GatewayClass, one Gateway ``bench/web`` (one HTTP listener on
  port 80: the shared pool serves it on the internal port 30000). Every HTTPRoute is in
  namespace ``bench``, has its own hostname ``<name>.bench.test`` and one rule to ``echo``.

Objects are created with ``ApiServer.put_object`` (straight into the emulator's store, no HTTP:
the controller's watches see them as any other client's writes); completion is read from the
store directly (``ApiServer.get``). Before the controller starts, ``--base`` routes (1,000) are
in the store; the benchmark waits until they are all attached and the proxy serves one.

(a) **Latency**: with the base routes attached, one new HTTPRoute at a time (``--latency``, 40
    creations): the clock starts before ``put_object`` and stops at the first 200 for its
    hostname through the proxy's port 30000 (a fresh connection every 10 ms; anything else,
    typically 404, means "not yet"). Before the next creation the benchmark waits for the
    route's status (Accepted by us) and for the controller to be idle (no reconcile round
    completed for 0.5 s by its ``/metrics``): each creation is measured from a quiet
    controller. p50 / p99 (nearest rank) / max.
(b) **Attach**: ``--burst`` (1,000) new HTTPRoutes created at once (``put_object`` in a loop,
    about 0.1 s): the time from the first creation until the Gateway's listener status counts
    every route (``attachedRoutes``) AND each new route's ``status.parents`` has our entry with
    Accepted True (polled every 50 ms).
(c) **Memory**: more routes at once, up to ``--total`` (10,000) in all, then the same wait; the
    time it took, and the controller's VmHWM (high-water mark: every round on the way counts)
    and VmRSS once it has been idle for 0.5 s. The proxy's RSS is shown for information.

Throughout, a thread asks the controller's ``/healthz`` every 100 ms: the controller's trio loop
answers it, and the same loop runs the reconcile round and renews the leader Lease, so the
slowest answer in each phase is a lower bound on how long a round blocked the loop.

Caveats. The machine has 2 cores, shared by the emulator (this process: every status PATCH the
controller sends is served by it, and each watch event is serialised by it), the controller,
the proxy and other work: the load average before and after is printed and the figures move
with it. All routes share one backend Service (a real cluster has more Services and
EndpointSlices, which the controller also holds and decodes), and the emulator stores objects as
given (no CRD defaulting, a coarse ``managedFields``): a real API server's bodies are bigger, so
memory here is a lower bound. Timings are wall-clock
(``time.perf_counter``); polling adds up to 10 ms (a) or 50 ms (b, c). The script prints PASS
or MISS per target and exits 0 whatever the figures; non-zero only when it breaks (a wait
times out, a process dies). ``--profile FILE`` runs the controller under ``python -m cProfile``
(its main thread only: the client's request and watch threads are not in it) and stops it with
SIGINT so that the profile is written.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import math
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import api_objects as objects
import harness
import processes

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the emulator lives in tests/, beside coxswain/
    sys.path.insert(0, str(ROOT))

from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

NAMESPACE = "coxswain-system"  # the controller's
APP = "bench"  # the Gateway, its routes and the backend
GATEWAY = "web"
CONTROLLER_NAME = "coxswain-labs.dev/gateway-controller"
PROXY_ADDRESS = "127.0.0.9"  # the shared pool's internal ports are fixed: an address of its own
INTERNAL_PORT = 30000  # the first (only) shared Gateway's listener
HISTORY = 200_000

TARGET_P99_S = 1.0
TARGET_ATTACH_S = 5.0
TARGET_RSS_MB = 300.0

FULL = {"base": 1_000, "latency": 40, "burst": 1_000, "total": 10_000}
QUICK = {"base": 20, "latency": 3, "burst": 20, "total": 60}

GET_EVERY = 0.01
POLL_EVERY = 0.05
IDLE_FOR = 0.5
TIMEOUT = 240.0


# --- the cluster: objects, echo backend ---------------------------------------------------------


def route(name: str) -> dict[str, Any]:
    """An HTTPRoute on the Gateway for ``<name>.bench.test``, one rule to ``echo``."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": APP},
        "spec": {
            "parentRefs": [{"name": GATEWAY}],
            "hostnames": [host(name)],
            "rules": [{"backendRefs": [{"name": "echo", "port": 80}]}],
        },
    }


def host(name: str) -> str:
    return f"{name}.bench.test"


def cluster_objects(backend_port: int) -> list[dict[str, Any]]:
    """The GatewayClass, the Gateway, and the Service and EndpointSlice of the echo backend."""
    endpoints = [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]
    return [
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": "coxswain"},
            "spec": {"controllerName": CONTROLLER_NAME},
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": GATEWAY, "namespace": APP},
            "spec": {
                "gatewayClassName": "coxswain",
                "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
            },
        },
        *objects.service_and_slice(
            APP, "echo", cluster_ip="10.96.0.10", target_port=backend_port, endpoints=endpoints
        ),
    ]


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


@contextlib.contextmanager
def echo_backend() -> Iterator[int]:
    """A threaded HTTP server on 127.0.0.1 answering 200 to every GET; yields its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


# --- reading the store, the proxy and the controller --------------------------------------------


def attached(api: ApiServer) -> int:
    """The Gateway's ``attachedRoutes`` on its listener (0 before its status)."""
    body = api.get("Gateway", GATEWAY, APP) or {}
    listeners = (body.get("status") or {}).get("listeners") or [{}]
    return int(listeners[0].get("attachedRoutes") or 0)


def accepted(api: ApiServer, name: str) -> bool:
    """The route's ``status.parents`` has our entry for the Gateway, Accepted True."""
    body = api.get("HTTPRoute", name, APP) or {}
    for parent in (body.get("status") or {}).get("parents") or []:
        if parent.get("controllerName") == CONTROLLER_NAME and (
            (parent.get("parentRef") or {}).get("name") == GATEWAY
        ):
            return any(
                c.get("type") == "Accepted" and c.get("status") == "True"
                for c in parent.get("conditions") or []
            )
    return False


def get_status(hostname: str) -> int:
    """The status of ``GET /`` with ``Host: hostname`` through the proxy (0: no answer)."""
    try:
        status, _ = processes.http_get(PROXY_ADDRESS, INTERNAL_PORT, "/", hostname, timeout=5)
    except OSError:
        return 0
    return status


def served(name: str) -> Callable[[], bool]:
    """A check: the route's hostname answers 200 through the proxy."""
    return lambda: get_status(host(name)) == 200


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in bytes."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) * 1024
    return found


@dataclass
class Metrics:
    """What the controller's ``/metrics`` says about its rounds so far."""

    reconciles: float = 0.0
    seconds: float = 0.0
    status_writes: float = 0.0
    # coxswain_controller_event_loop_lag_seconds: upper bound → wake-ups at most that late
    lag: dict[float, float] = field(default_factory=dict)

    def __sub__(self, other: Metrics) -> Metrics:
        return Metrics(
            self.reconciles - other.reconciles,
            self.seconds - other.seconds,
            self.status_writes - other.status_writes,
            {bound: n - other.lag.get(bound, 0.0) for bound, n in self.lag.items()},
        )


def metrics(port: int) -> Metrics | None:
    """Scrape the controller's health port; None when it did not answer within 30 s (its
    event loop was busy that long: a reconcile round's synchronous part)."""
    try:
        _, body = processes.http_get("127.0.0.1", port, "/metrics", timeout=30)
    except OSError:
        return None
    values: dict[str, float] = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    lag = {
        float(match[1]): count
        for name, count in values.items()
        if (match := _LAG_BUCKET.fullmatch(name)) is not None
    }
    return Metrics(
        values.get("coxswain_controller_reconciles_total", 0.0),
        values.get("coxswain_controller_reconcile_seconds_sum", 0.0),
        values.get("coxswain_controller_status_writes_total", 0.0),
        lag,
    )


_LAG_BUCKET = re.compile(r'coxswain_controller_event_loop_lag_seconds_bucket\{le="([^"]+)"\}')


def lag_bound(lag: dict[float, float], share: float) -> float:
    """The smallest histogram bound under which ``share`` of the loop's wake-ups fell (the
    p99 for 0.99, inf when the worst was past the last bucket); 0 without samples."""
    total = lag.get(math.inf, 0.0)
    if not total:
        return 0.0
    return min(bound for bound, count in lag.items() if count >= share * total)


def scrape(port: int, fleet: processes.Fleet) -> Metrics:
    """``metrics``, retried until the controller answers."""
    found: Metrics = wait_for(lambda: metrics(port), "the controller's /metrics", fleet, 0.1)
    return found


class HealthProbe:
    """A thread asking the controller's ``/healthz`` every 100 ms, recording how long each
    answer took: the controller's event loop answers it, so a slow answer means the loop was
    blocked (by a reconcile round's synchronous work) for at least that long. The same loop
    renews the leader Lease (15 s) and answers the kubelet's liveness probe (1 s time-out)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers: list[tuple[float, float]] = []  # (asked at, seconds to answer)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            asked = time.perf_counter()
            try:
                processes.http_get("127.0.0.1", self.port, "/healthz", timeout=60)
            except OSError:
                continue  # not listening yet, or gone
            self.answers.append((asked, time.perf_counter() - asked))

    def slowest(self, since: float, until: float) -> float:
        """The slowest answer to a question asked between ``since`` and ``until``."""
        return max((took for asked, took in self.answers if since <= asked <= until), default=0)


# --- processes and waiting ----------------------------------------------------------------------


def wait_for(
    check: Callable[[], object], what: str, fleet: processes.Fleet, every: float = POLL_EVERY
) -> Any:
    """Poll ``check`` until it is truthy (its value is returned); stop the run on time-out or
    when a subprocess died."""
    return processes.wait_until(check, what, timeout=TIMEOUT, every=every, fleet=fleet)


def wait_idle(
    port: int,
    fleet: processes.Fleet,
    idle_for: float = IDLE_FOR,
    busy: Callable[[], bool] = lambda: False,
) -> None:
    """Until no reconcile round has completed for ``idle_for`` seconds (a scrape that times
    out counts as busy, and so does ``busy()``: a round in progress, say)."""
    last, since = scrape(port, fleet).reconciles, time.perf_counter()
    deadline = since + TIMEOUT
    while time.perf_counter() - since < idle_for:
        fleet.check()
        if time.perf_counter() > deadline:
            raise SystemExit(f"the controller never went idle\n{fleet.tails()}")
        time.sleep(0.1)
        found = metrics(port)
        if found is None or busy() or found.reconciles != last:
            last, since = (found.reconciles if found else -1.0), time.perf_counter()


def all_attached(api: ApiServer, expected: int, pending: set[str]) -> Callable[[], bool]:
    """A check: the Gateway counts ``expected`` routes and every name of ``pending`` (emptied
    as they are found) is Accepted by us. The Gateway is read first: it is one object."""

    def check() -> bool:
        if attached(api) < expected:
            return False
        pending.difference_update([n for n in pending if accepted(api, n)])
        return not pending

    return check


def create_all(api: ApiServer, names: list[str]) -> float:
    """``put_object`` each route in a loop; how long the loop took."""
    started = time.perf_counter()
    for name in names:
        api.put_object(route(name))
    return time.perf_counter() - started


# --- the run ------------------------------------------------------------------------------------


def secret_files(api: ApiServer, folder: Path) -> Path | None:
    """The proxy's discovery certificate from its Secret, as files (None: not there yet)."""
    secret = api.get("Secret", "coxswain-proxy-discovery-tls", NAMESPACE)
    if secret is None:
        return None
    for key, value in secret["data"].items():
        (folder / key).write_bytes(base64.b64decode(value))
    return folder


def coxswain(*args: str, profile: str | None = None) -> list[str]:
    prefix = ["-m", "cProfile", "-o", profile] if profile else []
    return [sys.executable, *prefix, "-m", "coxswain", *args]


def run(counts: dict[str, int], profile: str | None) -> dict[str, Any]:
    """Everything, in order: setup, (a), (b), (c). Returns the figures."""
    result: dict[str, Any] = {"counts": counts}
    with (
        tempfile.TemporaryDirectory(prefix="bench-controller-") as tmp,
        ApiServer(history_limit=HISTORY) as api,
        echo_backend() as backend,
    ):
        folder = Path(tmp)
        ports = Ports(discovery=processes.free_port(), health=processes.free_port())
        # SIGKILL: nothing to wait for; but SIGINT to a profiled controller, so that cProfile
        # writes its file (Fleet.start).
        with (
            processes.Fleet(folder, first_signal=signal.SIGKILL) as fleet,
            HealthProbe(ports.health) as probe,
        ):
            _run(api, backend, folder, fleet, ports, counts, profile, result)
        result["stalls"] = {
            phase: probe.slowest(since, until)
            for phase, (since, until) in result.pop("windows").items()
        }
    return result


@dataclass(frozen=True)
class Ports:
    discovery: int
    health: int


def _run(
    api: ApiServer,
    backend: int,
    folder: Path,
    fleet: processes.Fleet,
    ports: Ports,
    counts: dict[str, int],
    profile: str | None,
    result: dict[str, Any],
) -> None:
    windows: dict[str, tuple[float, float]] = {}
    result["windows"] = windows
    api.install_crds(COXSWAIN_CRDS, GATEWAY_API_CRDS)
    for body in cluster_objects(backend):
        api.put_object(body)
    base = [f"base-{i}" for i in range(counts["base"])]
    create_all(api, base)
    discovery, health = ports.discovery, ports.health
    kubeconfig = api.kubeconfig(folder / "kubeconfig")
    started = time.perf_counter()
    controller = fleet.start(
        "controller",
        coxswain(
            "controller", "--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE,
            "--discovery-port", str(discovery), "--health-port", str(health),
            "--discovery-address", f"127.0.0.1:{discovery}",
            "--shared-vip-service-type", "ClusterIP",
            profile=profile,
        ),
        ROOT,
        stop=(signal.SIGINT, 30.0) if profile else None,
    )  # fmt: skip
    certs = wait_for(lambda: secret_files(api, folder), "the proxy's Secret", fleet)
    proxy = fleet.start(
        "proxy",
        coxswain(
            "proxy", "--shared", "--discovery", f"127.0.0.1:{discovery}",
            "--tls-cert", str(certs / "tls.crt"), "--tls-key", str(certs / "tls.key"),
            "--tls-ca", str(certs / "ca.crt"), "--node-id", "bench", "--bind", PROXY_ADDRESS,
            "--workers", "1", "--admin-port", "0",
            "--ingress-http-port", str(processes.free_port()),
            "--ingress-https-port", str(processes.free_port()),
        ),
        ROOT,
    )  # fmt: skip
    wait_for(all_attached(api, len(base), set(base)), "the base routes attached", fleet)
    wait_for(lambda: get_status(host(base[-1])) == 200, "a base route served", fleet)
    result["startup_s"] = time.perf_counter() - started
    wait_idle(health, fleet)
    result["startup_memory"] = proc_status(controller.pid)
    windows["setup"] = (started, time.perf_counter())
    expected = len(base)

    # (a) one route at a time, from an idle controller
    latencies, to_status = [], []
    before = scrape(health, fleet)
    since = time.perf_counter()
    for i in range(counts["latency"]):
        name = f"lat-{i}"
        started = time.perf_counter()
        api.put_object(route(name))
        wait_for(served(name), f"{name} served", fleet, GET_EVERY)
        latencies.append(time.perf_counter() - started)
        expected += 1
        wait_for(all_attached(api, expected, {name}), f"{name} attached", fleet)
        to_status.append(time.perf_counter() - started)
        wait_idle(health, fleet)
    result["latency_s"] = latencies
    result["latency_status_s"] = to_status
    result["latency_metrics"] = vars(scrape(health, fleet) - before)
    windows["latency"] = (since, time.perf_counter())

    # (b) a burst of new routes, all at once
    since = time.perf_counter()
    result["burst"] = _burst(api, health, fleet, "burst", counts["burst"], expected)
    expected += counts["burst"]
    windows["burst"] = (since, time.perf_counter())

    # (c) up to the total, then memory
    more = max(0, counts["total"] - expected)
    since = time.perf_counter()
    result["fill"] = _burst(api, health, fleet, "fill", more, expected)
    expected += more
    wait_idle(health, fleet)
    windows["fill"] = (since, time.perf_counter())
    result["fill"]["idle_s"] = time.perf_counter() - result["fill"]["started"]
    result["routes"] = expected
    result["memory"] = proc_status(controller.pid)
    result["proxy_memory"] = proc_status(proxy.pid)
    result["served_last"] = get_status(host(f"fill-{more - 1}" if more else base[-1]))


def _burst(
    api: ApiServer, health: int, fleet: processes.Fleet, prefix: str, count: int, before: int
) -> dict[str, Any]:
    """``count`` new routes at once; the time until all are attached, and the rounds."""
    wait_idle(health, fleet)
    names = [f"{prefix}-{i}" for i in range(count)]
    start_metrics = scrape(health, fleet)
    started = time.perf_counter()
    put_s = create_all(api, names)
    wait_for(all_attached(api, before + count, set(names)), f"{prefix} attached", fleet)
    done = time.perf_counter() - started
    return {
        "count": count,
        "started": started,
        "put_s": put_s,
        "attached_s": done,
        "metrics": vars(scrape(health, fleet) - start_metrics),
    }


# --- report -------------------------------------------------------------------------------------


def _rounds(figures: dict[str, float]) -> str:
    rounds = int(figures["reconciles"])
    mean = figures["seconds"] / rounds * 1e3 if rounds else 0.0
    lag: dict[float, float] = figures["lag"]
    return (
        f"{rounds} reconcile rounds ({figures['seconds']:.2f} s in all, {mean:,.0f} ms mean), "
        f"{int(figures['status_writes'])} status writes; event-loop lag p99 ≤ "
        f"{lag_bound(lag, 0.99) * 1e3:,.0f} ms, worst ≤ {lag_bound(lag, 1.0) * 1e3:,.0f} ms"
    )


def report(result: dict[str, Any], quick: bool) -> None:
    counts = result["counts"]
    latency = result["latency_s"]
    burst, fill = result["burst"], result["fill"]
    memory = result["memory"]
    hwm, rss = memory["VmHWM"] / harness.MB, memory["VmRSS"] / harness.MB
    p99 = harness.percentile(latency, 0.99)
    print()
    print(
        f"setup: {counts['base']:,} routes present before the controller started; attached and "
        f"served {result['startup_s']:.2f} s after its start (VmHWM "
        f"{harness.mb(result['startup_memory']['VmHWM'])} MB, VmRSS "
        f"{harness.mb(result['startup_memory']['VmRSS'])} MB when idle)"
    )
    print(
        f"(a) {len(latency)} creations, one at a time, {counts['base']:,}+ routes present: "
        f"created → first 200 p50 {statistics.median(latency) * 1e3:,.0f} ms, p99 "
        f"{p99 * 1e3:,.0f} ms, max {max(latency) * 1e3:,.0f} ms; created → Accepted in status "
        f"p50 {statistics.median(result['latency_status_s']) * 1e3:,.0f} ms; "
        f"{_rounds(result['latency_metrics'])}"
    )
    for label, run in (("(b)", burst), ("(c)", fill)):
        print(
            f"{label} {run['count']:,} routes at once (put_object loop {run['put_s']:.2f} s): all "
            f"attached after {run['attached_s']:.2f} s; {_rounds(run['metrics'])}"
        )
    print(
        f"    idle (no round for {IDLE_FOR:g} s) {fill['idle_s']:.2f} s after the first "
        "creation; then"
    )
    print(
        f"    at {result['routes']:,} routes, idle: controller VmHWM {hwm:,.1f} MB, VmRSS "
        f"{rss:,.1f} MB; proxy VmRSS {harness.mb(result['proxy_memory']['VmRSS'])} MB; last "
        f"route served: {result['served_last']}"
    )
    stalls = ", ".join(f"{phase} {took:.2f} s" for phase, took in result["stalls"].items())
    print(f"longest /healthz answer (the event loop blocked at least that long): {stalls}")
    print()
    print("Targets")
    rows = [
        ("created → first 200 p99", f"< {TARGET_P99_S:g} s", f"{p99:.3f} s", p99 < TARGET_P99_S),
        (
            f"{burst['count']:,} routes attached",
            f"< {TARGET_ATTACH_S:g} s",
            f"{burst['attached_s']:.2f} s",
            burst["attached_s"] < TARGET_ATTACH_S,
        ),
        (
            f"controller memory, {result['routes']:,} routes",
            f"< {TARGET_RSS_MB:g} MB",
            f"HWM {hwm:,.1f} MB",
            hwm < TARGET_RSS_MB,
        ),
    ]
    print_verdicts(rows, quick)


def print_verdicts(rows: list[tuple[str, str, str, bool]], quick: bool) -> None:
    """The targets' table: what, bar, measured, PASS / MISS (SKIP for a smoke run)."""
    harness.print_table(
        [("target", 38), ("bar", 10), ("measured", 14), ("verdict", 8)],
        [
            (what, bar, got, "SKIP" if quick else ("PASS" if ok else "MISS"))
            for what, bar, got, ok in rows
        ],
    )
    if quick:
        harness.print_skipped_targets()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts: a smoke run")
    parser.add_argument("--profile", metavar="FILE", help="run the controller under cProfile")
    for name, default in FULL.items():
        parser.add_argument(f"--{name}", type=int, help=f"(default {default:,})")
    args = parser.parse_args(argv)
    counts = dict(QUICK if args.quick else FULL)
    counts.update({k: v for k in FULL if (v := getattr(args, k)) is not None})
    with harness.session(__file__, argv):
        result = run(counts, args.profile)
        report(result, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
