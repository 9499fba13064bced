"""What the benchmark scripts in bench/ share: how they run, measure and report.

The scripts (``compile_ingress.py``, ``compile_gateway.py``, ``compile_scopes.py``) each generate
their own workload and check their own snapshots; around that they run alike, and this module
holds that common part so that a fix to one (a memory reader, the subprocess protocol, the
header recorded with every result) reaches all three:

- running: the command line (``--quick``, the hidden ``--worker``), one size per fresh
  subprocess whose JSON result is read back, and the header and footer every run prints
  (machine, Python, commit, load average before and after);
- measuring: wall-clock runs with the time spent in the cyclic collector (and the figures a
  worker returns for them), runs after ``gc.freeze()``, ``tracemalloc`` peaks, and RSS and its
  high-water mark from /proc/self/status;
- workload pieces the scripts build the same way: the one self-signed certificate and its
  ``kubernetes.io/tls`` Secret, a Service with its EndpointSlice, namespaced objects with uid
  and creationTimestamp, a Gateway's HTTPS listener, HTTPRoute backendRefs with a 90/10 split;
- reporting: right-aligned tables, ``median (best)`` cells, MB figures, PASS/FAIL lines;
- building: a copy of the project with the HTTP/1.1 codec compiled by mypyc, as the image
  ships it (setup.py), for the proxy benchmarks and tests/compiled.py.

The scripts run as ``.venv/bin/python bench/<script>.py``, which puts bench/ first on
``sys.path``; they import this module as plain ``harness``. Standard library only, plus
``cryptography`` (a Coxswain dependency) for the certificate.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

T = TypeVar("T")

MB = 1_000_000

# Every Service of a workload has this many endpoints ready, and this many more not ready.
ENDPOINTS_READY = 3
ENDPOINTS_NOT_READY = 1
# Workload objects are created from this moment on, a second apart; the certificate starts then.
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


# --- running: command line, worker subprocesses, header and footer ------------------------------


def parse_args(doc: str | None, argv: list[str] | None) -> argparse.Namespace:
    """``--quick`` (tiny sizes, a smoke run) and the hidden ``--worker KIND N...``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def answer_worker(argv: list[str], workers: dict[str, Callable[..., dict[str, Any]]]) -> None:
    """In the subprocess: run ``workers[KIND](*N)`` and write its result to stdout as JSON."""
    kind, *numbers = argv
    json.dump(workers[kind](*(int(n) for n in numbers)), sys.stdout)


def run_worker(script: str, args: list[str]) -> dict[str, Any]:
    """Run ``script --worker *args`` in a fresh interpreter and return the JSON it prints.

    A fresh process per size keeps memory figures from carrying over. When the worker fails,
    the tail of its output goes to stderr and this process exits non-zero.
    """
    out = subprocess.run(
        [sys.executable, script, "--worker", *args], check=False, capture_output=True, text=True
    )
    if out.returncode:
        sys.stderr.write(out.stdout[-2000:] + out.stderr[-4000:])
        raise SystemExit(f"worker {' '.join(args)} failed with exit code {out.returncode}")
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def git_version() -> str:
    """``git describe --always --dirty`` of the checkout being measured, if git is there."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, or ``n/a`` off Linux."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


# --- building: the compiled codec -------------------------------------------------------------

PROJECT_FILES = ("coxswain", "build_backend", "pyproject.toml", "setup.py", "README.md")
_LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.so", ".hypothesis", ".pytest_cache")


def copy_project(source: Path, into: Path, names: Sequence[str] = PROJECT_FILES) -> Path:
    """Copy ``names`` (files or folders) of the project at ``source`` into ``into``, leaving
    out byte code and any native module built there; returns ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, into / name, ignore=_LEFT_OUT)
        else:
            shutil.copy2(source / name, into / name)
    return into


def add_build_argument(parser: argparse.ArgumentParser, *, both: bool = True) -> None:
    """``--build compiled|interpreted[|both]``: how the proxy benchmarks run the codec."""
    parser.add_argument(
        "--build",
        choices=("compiled", "interpreted", "both") if both else ("compiled", "interpreted"),
        default="compiled",
        help="the codec compiled with mypyc (as the image ships it), interpreted"
        + (", or both" if both else ""),
    )


def compile_codec(folder: Path) -> None:
    """Build setup.py's modules in place in ``folder`` (a copy or a worktree, never the
    working tree: a native module there would shadow edits to its source) and check that
    ``python -m coxswain`` run there uses them."""
    done = subprocess.run(
        [sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"],
        cwd=folder,
        env=dict(os.environ, COXSWAIN_MYPYC="1"),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the mypyc build in {folder} failed:\n{done.stdout}\n{done.stderr}")
    check = "from coxswain.http1 import codec_build; print(codec_build())"
    build = subprocess.run(
        [sys.executable, "-c", check], cwd=folder, capture_output=True, text=True, check=True
    ).stdout.strip()
    if build != "compiled":
        raise SystemExit(f"the copy in {folder} runs the codec {build}, not compiled")


@contextmanager
def session(script: str, quick: bool) -> Iterator[None]:
    """Print what a result needs beside it: the header line (script, Python, machine, date,
    commit) before the run; the total time and the load average before and after, once the
    run has finished without an exception."""
    print(
        f"bench/{Path(script).name}{' --quick' if quick else ''}: "
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit {git_version()}"
    )
    load_before = load_average()
    started = time.perf_counter()
    yield
    print(
        f"\n(total {time.perf_counter() - started:.0f} s; load average before {load_before}, "
        f"after {load_average()})"
    )


# --- measuring: memory and time -----------------------------------------------------------------


def proc_status(field: str) -> int | None:
    """A ``VmRSS``-style field of /proc/self/status, in bytes (None off Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def rss_bytes() -> int:
    """Current resident set size."""
    return proc_status("VmRSS") or max_rss_bytes()


def max_rss_bytes() -> int:
    """Peak resident set size of this process so far."""
    found = proc_status("VmHWM")
    if found is not None:
        return found
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class GcClock:
    """Time spent in the cyclic garbage collector, through ``gc.callbacks``."""

    def __init__(self) -> None:
        self.total = 0.0
        self.full = 0  # collections of the oldest generation
        self.cpu = 0.0  # CPU time of the whole run (set by timed)
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start
            self.full += info["generation"] == 2


def timed(function: Callable[[], T], repeat: int) -> tuple[list[float], list[GcClock], T]:
    """Run ``function`` ``repeat`` (at least 1) times, after a full collection each: wall times,
    the gc clock of each run (collector time, full collections, CPU time), the last value."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, not {repeat}")
    times: list[float] = []
    in_gc: list[GcClock] = []
    last: list[T] = []  # the previous run's value is dropped before the next run
    for _ in range(repeat):
        last.clear()
        gc.collect()
        clock = GcClock()
        gc.callbacks.append(clock)
        cpu, start = time.process_time(), time.perf_counter()
        last.append(function())
        times.append(time.perf_counter() - start)
        clock.cpu = time.process_time() - cpu
        gc.callbacks.remove(clock)
        in_gc.append(clock)
    return times, in_gc, last[0]


@contextmanager
def gc_frozen() -> Iterator[None]:
    """A full collection, then every live object out of the collector's reach (``gc.freeze()``)
    for the block: as a controller could do with its long-lived inputs and state after a sync."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def timed_figures(
    name: str, times: list[float], clocks: list[GcClock]
) -> dict[str, list[float] | list[int]]:
    """What ``timed`` measured, for a worker's JSON result: ``<name>_s`` (wall times),
    ``<name>_gc_s`` (time in the collector), ``<name>_cpu_s`` and ``<name>_full_gcs``."""
    return {
        f"{name}_s": times,
        f"{name}_gc_s": [c.total for c in clocks],
        f"{name}_cpu_s": [c.cpu for c in clocks],
        f"{name}_full_gcs": [c.full for c in clocks],
    }


def traced(function: Callable[[], T]) -> tuple[int, int, T]:
    """Bytes traced by tracemalloc while ``function`` runs: the peak, what is still held at the
    end (mostly the returned value), and the value."""
    gc.collect()
    tracemalloc.start()
    try:
        value = function()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, held, value


# --- workload pieces ----------------------------------------------------------------------------


def make_tls_data(serial: int) -> dict[str, str]:
    """One self-signed EC P-256 certificate for *.example.com, as a Secret's ``data``.

    Each workload reuses it in every Secret: the compiler does not match certificate names
    against hostnames, and one certificate keeps the workload cheap to generate.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "*.example.com")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(EPOCH)
        .not_valid_after(EPOCH + dt.timedelta(days=3650))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("*.example.com"), x509.DNSName("example.com")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return {
        "tls.crt": base64.b64encode(chain).decode(),
        "tls.key": base64.b64encode(key_pem).decode(),
    }


def tls_secret(namespace: str, name: str, tls_data: dict[str, str]) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret holding (a copy of) ``tls_data``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "data": dict(tls_data),
    }


def service_bodies(
    namespace: str, service: str, seed: int, cluster_ip: str
) -> list[dict[str, Any]]:
    """A ClusterIP Service (port 80 named ``http``, target 8080) and its EndpointSlice, with
    ``ENDPOINTS_READY`` ready endpoints and ``ENDPOINTS_NOT_READY`` not ready; ``seed`` spreads
    the endpoint addresses."""
    base = f"10.{(seed >> 14) % 256}.{(seed >> 6) % 256}"
    endpoints = [
        {
            "addresses": [f"{base}.{(seed % 64) * 4 + i}"],
            "conditions": {"ready": i < ENDPOINTS_READY},
        }
        for i in range(ENDPOINTS_READY + ENDPOINTS_NOT_READY)
    ]
    return service_and_slice(
        namespace, service, cluster_ip=cluster_ip, target_port=8080, endpoints=endpoints
    )


def service_and_slice(
    namespace: str,
    service: str,
    *,
    cluster_ip: str,
    target_port: int,
    endpoints: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """A ClusterIP Service (port 80 named ``http``) and its one EndpointSlice of ``endpoints``
    on ``target_port``."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": cluster_ip,
                "ports": [
                    {"name": "http", "port": 80, "targetPort": target_port, "protocol": "TCP"}
                ],
            },
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service}-abcde",
                "namespace": namespace,
                "labels": {"kubernetes.io/service-name": service},
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": target_port, "protocol": "TCP"}],
            "endpoints": endpoints,
        },
    ]


INGRESS_CONTROLLER = "coxswain-labs.dev/ingress-controller"  # CompileConfig's default


def default_ingress_class() -> dict[str, Any]:
    """The IngressClass ``coxswain`` of the default controller, marked the cluster default."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {
            "name": "coxswain",
            "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
        },
        "spec": {"controller": INGRESS_CONTROLLER},
    }


def api_object(
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    spec: dict[str, Any],
    *,
    uid: str,
    created: int,
) -> dict[str, Any]:
    """A namespaced object as the API server holds it: ``uid``, generation 1, and a
    creationTimestamp ``created`` seconds after ``EPOCH``."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "generation": 1,
            "creationTimestamp": (EPOCH + dt.timedelta(seconds=created)).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
        },
        "spec": spec,
    }


def https_listener(hostname: str, secret: str) -> dict[str, Any]:
    """A Gateway listener ``https`` on 443 for ``hostname``, terminating TLS with ``secret``."""
    return {
        "name": "https",
        "port": 443,
        "protocol": "HTTPS",
        "hostname": hostname,
        "tls": {
            "mode": "Terminate",
            "certificateRefs": [{"kind": "Secret", "name": secret}],
        },
    }


def set_backend_refs(
    rules: list[dict[str, Any]], service: str, canary: str | None, split: frozenset[int]
) -> None:
    """Send every HTTPRoute rule to ``service`` port 80; with a ``canary``, split the rules at
    the indexes in ``split`` 90/10 between the two."""
    for slot, rule in enumerate(rules):
        if canary is not None and slot in split:
            rule["backendRefs"] = [
                {"name": service, "port": 80, "weight": 90},
                {"name": canary, "port": 80, "weight": 10},
            ]
        else:
            rule["backendRefs"] = [{"name": service, "port": 80}]


# --- reporting ----------------------------------------------------------------------------------


def print_table(columns: Sequence[tuple[str, int]], rows: Iterable[Sequence[object]]) -> None:
    """A header line and one line per row: each cell right-aligned to its column's width, one
    space between columns. Cells are formatted with ``format(cell, ">width")``; pass strings
    for anything but plain integers and words."""
    print(" ".join(f"{title:>{width}}" for title, width in columns))
    for row in rows:
        print(" ".join(f"{cell:>{width}}" for cell, (_, width) in zip(row, columns, strict=True)))


def med_best(values: list[float], scale: float = 1e3, digits: int = 1, grouping: str = ",") -> str:
    """``median (best)`` of ``values`` times ``scale``, or ``–`` when there were no runs.
    ``grouping`` is the thousands separator (``""`` for none)."""
    if not values:
        return "–"
    spec = f"{grouping}.{digits}f"
    return f"{statistics.median(values) * scale:{spec}} ({min(values) * scale:{spec}})"


def mb(count: int | None, grouping: str = ",") -> str:
    """Bytes as MB (10^6 bytes) with one decimal, or ``–`` for None."""
    return "–" if count is None else f"{count / MB:{grouping}.1f}"


def verdict(ok: bool) -> str:
    """``PASS`` or ``FAIL``."""
    return "PASS" if ok else "FAIL"


def print_targets(lines: list[tuple[bool, str]]) -> None:
    """One ``PASS``/``FAIL`` line per target."""
    for ok, text in lines:
        print(f"{verdict(ok)}  {text}")


def print_skipped_targets() -> None:
    """The line that stands for every target when the run did not reach the target sizes."""
    print("SKIP  all targets: --quick does not run the target sizes")
