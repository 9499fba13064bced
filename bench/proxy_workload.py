"""The proxy benchmark's inputs, kept apart from the code that runs them: the Kubernetes
manifests Coxswain compiles its routing table from, the two nginx configurations (the backend
and the front proxy Coxswain is compared with), and the reading of wrk's report.

Nothing here starts a process; ``proxy_setup.py`` does, for ``proxy.py``. Standard library
only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import api_objects as objects

NAMESPACE = "bench"
PATHS_PER_HOST = 10
SMALL_ROUTES = 10  # the table every mode serves unless told otherwise; nginx is compared at it
SMALL_PATH, LARGE_PATH = "/small", "/large"
SMALL_BYTES, LARGE_BYTES = 100, 1_000_000

# The eight paths beside /small and /large on every host. They are never requested: they are
# there so that the host's path list is as long at 10 routes as at 10,000, and the request has
# to be told apart from Prefix paths that share no element with it.
_DECOY_PATHS = (
    "/api/v1/users",
    "/api/v1/login",
    "/api",
    "/static",
    "/docs",
    "/metrics",
    "/admin/console",
    "/assets/img",
)


def host_name(index: int) -> str:
    """The host of the ``index``-th Ingress of the table."""
    return f"h{index}.example.com"


def target_host(hosts: int) -> str:
    """The host wrk requests: the middle of the table, so that a lookup that walked the hosts
    in order would have to walk half of them."""
    return host_name(hosts // 2)


def manifests(routes: int, backend_port: int, *, h2c: bool = False) -> list[dict[str, Any]]:
    """API objects for ``routes`` Ingress paths, ``PATHS_PER_HOST`` per host and one Ingress per
    host, every path with its own Service and EndpointSlice whose one ready endpoint is the
    backend nginx (127.0.0.1:``backend_port``).

    Every route leads to the same backend: the table's size is what varies, not the work behind
    it. One Service per path is what a real table of that size holds, and it makes the snapshot
    carry ``routes`` endpoint lists, as it would in a cluster. With ``h2c`` the Services' port
    says ``appProtocol: kubernetes.io/h2c``: the proxy speaks HTTP/2 to the backend.
    """
    if routes % PATHS_PER_HOST:
        raise ValueError(f"{routes} routes is not a multiple of {PATHS_PER_HOST} per host")
    bodies: list[dict[str, Any]] = [
        objects.default_ingress_class(),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    ]
    paths = [("Exact", SMALL_PATH), ("Exact", LARGE_PATH)]
    paths += [("Prefix", path) for path in _DECOY_PATHS]
    for host in range(routes // PATHS_PER_HOST):
        http_paths = []
        for slot, (path_type, path) in enumerate(paths):
            service = f"svc-{host}-{slot}"
            made = _service(service, backend_port, seed=host * PATHS_PER_HOST + slot)
            if h2c:
                made[0]["spec"]["ports"][0]["appProtocol"] = "kubernetes.io/h2c"
            bodies.extend(made)
            http_paths.append(
                {
                    "path": path,
                    "pathType": path_type,
                    "backend": {"service": {"name": service, "port": {"number": 80}}},
                }
            )
        spec = {
            "ingressClassName": "coxswain",
            "rules": [{"host": host_name(host), "http": {"paths": http_paths}}],
        }
        bodies.append(
            objects.api_object(
                "networking.k8s.io/v1",
                "Ingress",
                NAMESPACE,
                f"ing-{host}",
                spec,
                uid=f"uid-{host}",
                created=host,
            )
        )
    return bodies


def _service(name: str, backend_port: int, seed: int) -> list[dict[str, Any]]:
    """A Service and its EndpointSlice whose one ready endpoint is the real backend (not the
    made-up addresses of ``objects.service_bodies``)."""
    return objects.service_and_slice(
        NAMESPACE,
        name,
        cluster_ip=f"172.20.{(seed >> 8) % 256}.{seed % 256}",
        target_port=backend_port,
        endpoints=[{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
    )


# --- nginx --------------------------------------------------------------------------------------


def _nginx_main(prefix: str, workers: int) -> str:
    """The part both nginx instances share: foreground, logs and temporary files inside the
    instance's own directory (nginx's compiled-in paths are the system's), and, when running as
    root, workers that stay root so that they can read the 0700 temporary directory."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (
        f"{user}daemon off;\n"
        f"worker_processes {workers};\n"
        f"pid {prefix}/nginx.pid;\n"
        f"error_log {prefix}/error.log warn;\n"
        "events { worker_connections 4096; }\n"
    )


def _temp_paths(prefix: str) -> str:
    return "".join(
        f"    {kind}_temp_path {prefix}/{kind}_temp;\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )


def backend_config(prefix: str, port: int) -> str:
    """The backend: one nginx worker serving ``small.bin`` and ``large.bin`` from ``prefix`` at
    /small and /large with sendfile, no access log, keep-alive without a request limit.

    Static files rather than ``return 200 "..."`` because a 1 MB string does not belong in a
    configuration file; with the page cache and sendfile they cost the backend the same.
    """
    return _nginx_main(prefix, 1) + (
        "http {\n"
        "    access_log off;\n"
        "    sendfile on;\n"
        "    tcp_nopush on;\n"
        "    keepalive_requests 1000000;\n"
        "    keepalive_timeout 300s;\n"
        "    default_type application/octet-stream;\n"
        f"{_temp_paths(prefix)}"
        "    server {\n"
        f"        listen 127.0.0.1:{port} reuseport backlog=4096;\n"
        f"        location = {SMALL_PATH} {{ alias {prefix}/small.bin; }}\n"
        f"        location = {LARGE_PATH} {{ alias {prefix}/large.bin; }}\n"
        "    }\n"
        "}\n"
    )


def front_config(
    prefix: str, port: int, backend_port: int, workers: int, *, http2: bool = False
) -> str:
    """The nginx reverse proxy Coxswain is compared with, in front of the same backend.

    Set up as a tuned ingress proxy would be: a keep-alive upstream pool (``keepalive 64``,
    HTTP/1.1, the Connection header cleared), and an access log line per request written to a
    file, as Coxswain writes one per request to its stderr. Response buffering stays on (nginx's
    default) with buffers that hold a whole 1 MB body in memory and no temporary file: nginx
    at its fastest. With buffering off (ingress-nginx's default) nginx relays the body through
    one 4 KB buffer and managed a third of the 1 MB req/s in an ad-hoc run. With ``http2`` the
    listener speaks HTTP/2 with prior knowledge (cleartext), as Coxswain's does.
    """
    return _nginx_main(prefix, workers) + (
        "http {\n"
        f"    access_log {prefix}/access.log;\n"
        "    keepalive_requests 1000000;\n"
        "    keepalive_timeout 300s;\n"
        f"{_temp_paths(prefix)}"
        "    upstream backend {\n"
        f"        server 127.0.0.1:{backend_port};\n"
        "        keepalive 64;\n"
        "        keepalive_requests 1000000;\n"
        "    }\n"
        "    server {\n"
        f"        listen 127.0.0.1:{port}{' http2' if http2 else ''} reuseport backlog=4096;\n"
        "        location / {\n"
        "            proxy_pass http://backend;\n"
        "            proxy_http_version 1.1;\n"
        '            proxy_set_header Connection "";\n'
        "            proxy_set_header Host $host;\n"
        "            proxy_buffering on;\n"
        "            proxy_buffers 64 16k;\n"
        "            proxy_max_temp_file_size 0;\n"
        "        }\n"
        "    }\n"
        "}\n"
    )


def grpc_backend_config(prefix: str, port: int) -> str:
    """A backend that answers every call as a gRPC server would, over HTTP/2 with prior
    knowledge: 200, ``content-type: application/grpc``, a small body and the trailer
    ``grpc-status: 0``. The body is not a framed gRPC message (nginx's configuration cannot
    hold the zero bytes of its prefix); neither proxy reads it."""
    return _nginx_main(prefix, 1) + (
        "http {\n"
        "    access_log off;\n"
        "    keepalive_requests 1000000;\n"
        "    keepalive_timeout 300s;\n"
        "    http2_max_concurrent_streams 1000;\n"
        f"{_temp_paths(prefix)}"
        "    server {\n"
        f"        listen 127.0.0.1:{port} http2 reuseport backlog=4096;\n"
        "        location / {\n"
        "            default_type application/grpc;\n"
        "            add_trailer grpc-status 0;\n"
        '            return 200 "a gRPC answer";\n'
        "        }\n"
        "    }\n"
        "}\n"
    )


def grpc_front_config(prefix: str, port: int, backend_port: int) -> str:
    """nginx's gRPC proxy Coxswain is compared with: one worker, HTTP/2 with prior knowledge
    towards clients, ``grpc_pass`` over a keep-alive upstream pool, an access log line per
    call (as Coxswain writes one)."""
    return _nginx_main(prefix, 1) + (
        "http {\n"
        f"    access_log {prefix}/access.log;\n"
        "    keepalive_requests 1000000;\n"
        "    keepalive_timeout 300s;\n"
        f"{_temp_paths(prefix)}"
        "    upstream grpc_backend {\n"
        f"        server 127.0.0.1:{backend_port};\n"
        "        keepalive 64;\n"
        "        keepalive_requests 1000000;\n"
        "    }\n"
        "    server {\n"
        f"        listen 127.0.0.1:{port} http2 reuseport backlog=4096;\n"
        "        location / { grpc_pass grpc://grpc_backend; }\n"
        "    }\n"
        "}\n"
    )


# --- wrk ----------------------------------------------------------------------------------------

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}  # to milliseconds


@dataclass(frozen=True)
class WrkResult:
    """What one wrk run reported: throughput, latency percentiles in ms, and what went wrong
    (socket errors of any kind, and responses that were not 2xx or 3xx)."""

    requests: int
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    non_2xx: int


def _duration_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if match is None:
        raise ValueError(f"not a wrk duration: {text!r}")
    return float(match[1]) * _UNITS[match[2]]


def parse_wrk(output: str) -> WrkResult:
    """Read the report of ``wrk --latency``; a report without the figures raises ValueError
    (wrk prints no percentiles when not a single request completed)."""

    def find(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise ValueError(f"wrk report without {pattern!r}:\n{output}")
        return match

    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return WrkResult(
        requests=int(find(r"^\s*(\d+) requests in")[1]),
        requests_per_s=float(find(r"^Requests/sec:\s*([\d.]+)")[1]),
        p50_ms=_duration_ms(find(r"^\s*50%\s+(\S+)")[1]),
        p99_ms=_duration_ms(find(r"^\s*99%\s+(\S+)")[1]),
        errors=sum(int(n) for n in errors.groups()) if errors else 0,
        non_2xx=int(non_2xx[1]) if non_2xx else 0,
    )


# --- h2load -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class H2loadResult:
    """What one h2load run reported: requests done, throughput, and failures (errored,
    timed out, or not 2xx)."""

    requests: int
    requests_per_s: float
    failed: int


def parse_h2load(output: str) -> H2loadResult:
    """Read h2load's report; one without the figures raises ValueError."""
    finished = re.search(r"finished in [\d.]+\w*, ([\d.]+) req/s", output)
    counts = re.search(
        r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
        r"(\d+) errored, (\d+) timeout",
        output,
    )
    status = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", output)
    if finished is None or counts is None or status is None:
        raise ValueError(f"h2load report without its figures:\n{output}")
    done, _, failed, errored, timeout = map(int, counts.groups())
    bad = sum(int(n) for n in status.groups()[1:])
    return H2loadResult(done, float(finished[1]), failed + errored + timeout + bad)
