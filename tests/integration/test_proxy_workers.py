"""The proxy as a process, with ``--workers 1`` (one process) and ``--workers 2`` (a supervisor
and its workers, coxswain/shell/dataplane/workers.py): SIGTERM drains requests in flight, then the
command exits 0; SIGHUP makes every worker read its snapshot again; a configuration error ends
the command at once with status 2 and one message; the workers share the ports and a worker
that crashes is started again; ``--max-body-bytes``."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trustme

from coxswain.shell.dataplane.workers import CONFIGURATION_ERROR, STARTUP_ATTEMPTS, supervise
from coxswain.shell.discovery.ca import create_ca
from coxswain.shell.discovery.server import open_discovery_server
from coxswain.shell.discovery.tls import ServerCredentials

from .discovery_harness import NOW, allow, proxy_files
from .discovery_harness import TIMEOUT as DISCOVERY_TIMEOUT
from .discovery_harness import command as discovery_command
from .h2_client import H2Client
from .proxy_harness import (
    Running,
    free_port,
    ingress_path,
    proxy_command,
    read_until,
    run_proxy,
    signals_survived,
    snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

TIMEOUT = 30  # an upper bound for what must happen, generous for a loaded machine


class SlowBackend:
    """Answers one request, but only once ``release`` is set; ``received`` is set when the
    request head has arrived."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.server.getsockname()[1]
        self.received = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.server.accept()
        with connection:
            connection.settimeout(TIMEOUT)
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            self.received.set()
            self.release.wait(TIMEOUT)
            connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nslow")

    def close(self) -> None:
        self.release.set()
        self.server.close()


def get(port: int, path: str = "/", host: str = "a.example.com") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    conn.request("GET", path, headers={"Host": host})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_lets_a_request_in_flight_finish_then_exits_0(tmp_path: Path, workers: int) -> None:
    backend = SlowBackend()
    file = tmp_path / "snapshot.json"
    write_snapshot(
        file,
        snapshot(hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [backend.port]}),
    )
    http_port, admin_port = free_port(), free_port()
    command = proxy_command(
        file, http_port, admin_port, "--drain-timeout", "10", "--workers", str(workers)
    )
    results: list[tuple[int, bytes]] = []
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            wait_serving(process, admin_port, workers, supervised=workers > 1)
            client = threading.Thread(target=lambda: results.append(get(http_port)))
            client.start()
            assert backend.received.wait(TIMEOUT)
            process.send_signal(signal.SIGTERM)
            read_until(process, "draining")
            assert get(admin_port, "/readyz")[0] == 503
            backend.release.set()
            client.join(TIMEOUT)
            assert results == [(200, b"slow")]
            assert process.wait(TIMEOUT) == 0
        finally:
            if process.poll() is None:
                process.kill()
            backend.close()


def test_max_body_bytes_answers_413(tmp_path: Path) -> None:
    file = tmp_path / "snapshot.json"
    write_snapshot(file, snapshot(hosts={"a.example.com": [ingress_path("one")]}))
    http_port, admin_port = free_port(), free_port()
    command = proxy_command(file, http_port, admin_port, "--max-body-bytes", "10")
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            read_until(process, "serving shared")
            conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=TIMEOUT)
            conn.request("POST", "/", body=b"x" * 11, headers={"Host": "a.example.com"})
            assert conn.getresponse().status == 413
            conn.close()
        finally:
            process.terminate()
            assert process.wait(TIMEOUT) == 0


def test_a_chunked_or_http2_body_over_the_limit_is_413_and_one_within_is_forwarded(
    tmp_path: Path,
) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [ports["one"]]}
        )

    def client(run: Running) -> None:
        run.proxy.config = replace(run.proxy.config, max_body_bytes=10)  # new connections
        for size, status in ((10, 200), (11, 413)):
            conn = http.client.HTTPConnection("127.0.0.1", run.http_port, timeout=TIMEOUT)
            chunks = iter([b"x" * (size - 1), b"x"])  # an iterable body is sent chunked
            conn.request("POST", "/", body=chunks, headers={"Host": "a.example.com"})
            assert conn.getresponse().status == status
            conn.close()
        h2c = H2Client(run.http_port)  # HTTP/2 DATA, no content-length: counted alike
        within = h2c.send("POST", "/", authority="a.example.com", body=b"x" * 10)
        over = h2c.send("POST", "/", authority="a.example.com", body=b"x" * 11)
        assert [answer.status for answer in h2c.wait(within, over)] == [200, 413]
        h2c.close()

    run_proxy(tmp_path, make, client)


_STARTED = re.compile(r"worker (\d) started: pid (\d+)")


def wait_serving(
    process: subprocess.Popen[str], admin_port: int, count: int, *, supervised: bool = True
) -> dict[str, int]:
    """Read stderr until ``count`` processes serve (and, ``supervised``, as many workers were
    started: their pids by slot), then wait for the admin port to say ready (a worker reports
    itself to its supervisor just after it logs "serving")."""
    pids: dict[str, int] = {}
    serving = 0
    while len(pids) < (count if supervised else 0) or serving < count:
        line = read_until(process, "")[-1]
        assert line, "the proxy ended"
        if match := _STARTED.search(line):
            pids[match[1]] = int(match[2])
        serving += json.loads(line).get("message", "").startswith("serving shared")
    deadline = time.monotonic() + TIMEOUT
    while get(admin_port, "/readyz")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return pids


def gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaps counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


class _Text(BaseHTTPRequestHandler):
    """Answers every GET with ``body``."""

    protocol_version = "HTTP/1.1"
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve_text(body: bytes) -> ThreadingHTTPServer:
    """A backend answering ``body``, in a thread; shut it down and close it after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Text,), {"body": body}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_workers_share_the_port_and_a_killed_worker_is_restarted(tmp_path: Path) -> None:
    server = serve_text(b"hello")
    file = tmp_path / "snapshot.json"
    write_snapshot(
        file,
        snapshot(
            hosts={"a.example.com": [ingress_path("one")]},
            endpoints={"one": [server.server_address[1]]},
        ),
    )
    http_port, admin_port = free_port(), free_port()
    command = proxy_command(file, http_port, admin_port, "--workers", "2")

    def wait_workers(count: int) -> dict[str, int]:
        return wait_serving(process, admin_port, count)

    pids: dict[str, int] = {}
    restarted: dict[str, int] = {}
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            pids.update(wait_workers(2))
            assert len(set(pids.values())) == 2
            for _ in range(20):
                assert get(http_port) == (200, b"hello")
            assert get(admin_port, "/readyz")[0] == 200
            # the supervisor's /metrics is the sum over the workers
            status, metrics = get(admin_port, "/metrics")
            assert status == 200
            assert re.search(rb'coxswain_snapshot_info\{version="sha256:test"\} 2\.0', metrics)
            served = re.search(
                rb'coxswain_requests_total\{[^}]*status_class="2xx"\} (\S+)', metrics
            )
            assert served is not None
            assert float(served[1]) == 20
            os.kill(pids["0"], signal.SIGKILL)
            read_until(process, f"worker 0 (pid {pids['0']}) exited")
            for _ in range(20):  # the other worker alone
                assert get(http_port) == (200, b"hello")
            restarted.update(wait_workers(1))
            assert restarted["0"] != pids["0"]
            for _ in range(20):
                assert get(http_port) == (200, b"hello")
            process.send_signal(signal.SIGTERM)
            assert process.wait(TIMEOUT) == 0
        finally:
            if process.poll() is None:
                process.kill()
                for pid in (*pids.values(), *restarted.values()):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            server.shutdown()
            server.server_close()


def test_workers_leave_when_the_supervisor_is_killed(tmp_path: Path) -> None:
    file = tmp_path / "snapshot.json"
    write_snapshot(file, snapshot(hosts={"a.example.com": [ingress_path("one")]}))
    http_port, admin_port = free_port(), free_port()
    command = proxy_command(file, http_port, admin_port, "--workers", "2")
    pids: dict[str, int] = {}
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            pids.update(wait_serving(process, admin_port, 2))
            process.kill()  # SIGKILL: no chance to forward anything
            process.wait(TIMEOUT)
            deadline = time.monotonic() + TIMEOUT
            while not all(gone(pid) for pid in pids.values()):
                assert time.monotonic() < deadline, "a worker outlived its supervisor"
                time.sleep(0.05)
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", http_port), timeout=TIMEOUT).close()
        finally:
            for pid in pids.values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def wait_metric(admin_port: int, sample: str, value: float) -> None:
    """Poll the admin port's ``/metrics`` until the sample (name and labels) has ``value``."""
    pattern = re.compile(re.escape(sample).encode() + rb" (\S+)")
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = pattern.search(get(admin_port, "/metrics")[1])
        if found is not None and float(found[1]) == value:
            return
        assert time.monotonic() < deadline, (sample, found)
        time.sleep(0.02)


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_makes_every_worker_read_the_snapshot_again(tmp_path: Path, workers: int) -> None:
    one, two = serve_text(b"one"), serve_text(b"two")

    def routing_to(server: ThreadingHTTPServer, version: str) -> dict[str, Any]:
        data = snapshot(
            hosts={"a.example.com": [ingress_path("svc")]},
            endpoints={"svc": [server.server_address[1]]},
        )
        return {**data, "version": version}

    file = tmp_path / "snapshot.json"
    write_snapshot(file, routing_to(one, "sha256:one"))
    http_port, admin_port = free_port(), free_port()
    command = proxy_command(file, http_port, admin_port, "--workers", str(workers))
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            wait_serving(process, admin_port, workers, supervised=workers > 1)
            assert get(http_port) == (200, b"one")
            # the file is unchanged, so only SIGHUP makes a worker apply it again
            process.send_signal(signal.SIGHUP)
            wait_metric(admin_port, 'coxswain_snapshot_applies_total{result="ok"}', 2 * workers)
            write_snapshot(file, routing_to(two, "sha256:two"))
            process.send_signal(signal.SIGHUP)
            wait_metric(admin_port, 'coxswain_snapshot_info{version="sha256:two"}', workers)
            for _ in range(10):
                assert get(http_port) == (200, b"two")
            assert process.poll() is None
            process.send_signal(signal.SIGTERM)
            assert process.wait(TIMEOUT) == 0
        finally:
            if process.poll() is None:
                process.kill()
            for server in (one, two):
                server.shutdown()
                server.server_close()


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    "problem", ["another scope", "no file", "not a snapshot", "port taken", "admin port taken"]
)
def test_a_configuration_error_ends_the_command_at_once_with_one_message(
    tmp_path: Path, workers: int, problem: str
) -> None:
    file = tmp_path / "snapshot.json"
    write_snapshot(file, snapshot(scope="app/other" if problem == "another scope" else "shared"))
    if problem == "no file":
        file = tmp_path / "missing.json"
    if problem == "not a snapshot":
        file.write_text('{"scope": "shared"}')
    with socket.create_server(("127.0.0.1", 0)) as squatter:
        taken = squatter.getsockname()[1]
        http_port = taken if problem == "port taken" else free_port()
        admin_port = taken if problem == "admin port taken" else free_port()
        command = proxy_command(file, http_port, admin_port, "--workers", str(workers))
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    message = {
        "another scope": "snapshot.json is the snapshot of app/other, but this proxy serves shared",
        "no file": "missing.json cannot be read",
        "not a snapshot": "snapshot.json is not a snapshot",
        "port taken": f"cannot listen on 127.0.0.1:{taken}: ",
        "admin port taken": f"cannot listen on 127.0.0.1:{taken} (the admin port): ",
    }[problem]
    assert done.returncode == 2, done.stderr
    assert done.stderr.count(message) == 1, done.stderr
    assert "started: pid" not in done.stderr  # checked before any worker was started
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("bad", ["ca", "key"])
def test_discovery_tls_files_that_are_not_pem_end_the_command_at_once(
    tmp_path: Path, workers: int, bad: str
) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("proxy.example.com")
    pems = {"cert": leaf.cert_chain_pems[0].bytes(), "key": leaf.private_key_pem.bytes()}
    pems = {**pems, "ca": ca.cert_pem.bytes(), bad: b"not PEM\n"}
    flags: list[str] = []
    for kind, pem in pems.items():
        (tmp_path / f"{kind}.pem").write_bytes(pem)
        flags += [f"--tls-{kind}", str(tmp_path / f"{kind}.pem")]
    command = [
        sys.executable, "-m", "coxswain", "proxy", "--shared", "--discovery", "127.0.0.1:1",
        *flags, "--bind", "127.0.0.1", "--ingress-http-port", str(free_port()),
        "--ingress-https-port", str(free_port()), "--admin-port", "0", "--workers", str(workers),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    message = {
        "ca": f"{tmp_path / 'ca.pem'}: not a PEM CA certificate",
        "key": f"{tmp_path / 'key.pem'}: not a PEM certificate and its private key",
    }[bad]
    assert done.returncode == 2, done.stderr
    assert done.stderr.count(message) == 1, done.stderr
    assert "started: pid" not in done.stderr


def test_a_worker_refused_by_discovery_ends_the_supervisor_at_once(tmp_path: Path) -> None:
    """A configuration error only a worker can find: the discovery server refuses its
    identity. The supervisor stops at once with the worker's status, restarting nothing."""
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    issued = ca.issue_server(hosts=["127.0.0.1"], now=NOW)
    credentials = ServerCredentials(
        cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=ca.cert_pem
    )

    async def main() -> None:
        with trio.fail_after(DISCOVERY_TIMEOUT):
            async with open_discovery_server(credentials=credentials, policy=allow) as server:
                address = f"127.0.0.1:{server.port}"
                tls = proxy_files(tmp_path, ca, "intruder")  # not allowed the shared pool
                refused = await trio.run_process(
                    discovery_command(address, free_port(), tls, workers=2),
                    capture_stderr=True,
                    check=False,
                )
        stderr = refused.stderr.decode()
        assert refused.returncode == 2, stderr
        assert "PERMISSION_DENIED" in stderr
        assert "a configuration error: stopping every worker" in stderr
        assert stderr.count("started: pid") == 2  # each slot once: none restarted

    trio.run(main)


def supervise_fake_workers(script: str) -> int:
    """Run the supervisor in this process over one worker running ``script``, no admin port."""
    command = [sys.executable, "-c", script]
    return trio.run(
        lambda: supervise(command, 1, drain_timeout=1, admin_bind="127.0.0.1", admin_port=None)
    )


def test_a_worker_exiting_2_is_not_started_again(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    script = f"open({str(starts)!r}, 'a').write('.'); raise SystemExit(2)"
    assert supervise_fake_workers(script) == CONFIGURATION_ERROR
    assert starts.read_text() == "."


def test_the_supervisor_gives_up_on_a_worker_that_keeps_crashing_before_it_serves(
    tmp_path: Path,
) -> None:
    starts = tmp_path / "starts"
    script = f"open({str(starts)!r}, 'a').write('.'); raise SystemExit(1)"
    assert supervise_fake_workers(script) == 1
    assert starts.read_text() == "." * STARTUP_ATTEMPTS


_REPORTS_ON_GO = """
import json, os, signal, sys, time
log = open(sys.argv[1], "a")
reported = False
def note(text):
    log.write(text)
    log.flush()
signal.signal(signal.SIGHUP, lambda *_: note("SIGHUP " + ("after" if reported else "before")))
note("started;")
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
reported = True
print(json.dumps({"admin_port": 1}), flush=True)
sys.stdin.read()
"""


def test_a_sighup_before_a_worker_reports_reaches_it_once_it_has(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker does not handle SIGHUP until it serves: the supervisor holds it until then."""
    log, go = tmp_path / "log", tmp_path / "go"
    command = [sys.executable, "-c", _REPORTS_ON_GO, str(log), str(go)]

    def logged(text: str) -> bool:
        return log.exists() and text in log.read_text()

    async def until(done: Callable[[], bool]) -> None:
        with trio.fail_after(TIMEOUT):
            while not done():  # noqa: ASYNC110 - a file or a log has no event to wait on
                await trio.sleep(0.01)

    async def main() -> int:
        async with trio.open_nursery() as nursery:
            status: list[int] = []

            async def run() -> None:
                status.append(
                    await supervise(
                        command, 1, drain_timeout=1, admin_bind="127.0.0.1", admin_port=None
                    )
                )

            nursery.start_soon(run)
            await until(lambda: logged("started;"))
            os.kill(os.getpid(), signal.SIGHUP)
            await until(lambda: "SIGHUP: 1 workers" in caplog.text)
            go.touch()
            await until(lambda: logged("SIGHUP"))
            os.kill(os.getpid(), signal.SIGTERM)
        return status[0]

    with (
        caplog.at_level(logging.INFO, logger="coxswain.workers"),
        signals_survived(signal.SIGHUP, signal.SIGTERM),
    ):
        assert trio.run(main) == 0
    assert log.read_text() == "started;SIGHUP after"
