"""The proxy as a process: SIGTERM drains requests in flight, then the process exits 0;
``--workers N`` shares the ports and restarts a worker that dies; ``--max-body-bytes``."""

from __future__ import annotations

import contextlib
import http.client
import json
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

from .proxy_harness import Running, free_port, ingress_path, run_proxy, snapshot, write_snapshot

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 5


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


def read_until(process: subprocess.Popen[str], text: str) -> list[str]:
    """stderr lines up to the first containing ``text``; fails if the process ends first."""
    assert process.stderr is not None
    lines = [process.stderr.readline()]
    while text not in lines[-1]:
        assert lines[-1], lines
        lines.append(process.stderr.readline())
    return lines


def proxy_command(file: Path, http_port: int, admin_port: int, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "coxswain", "proxy", "--shared", "--snapshot", str(file),
        "--bind", "127.0.0.1", "--ingress-http-port", str(http_port),
        "--ingress-https-port", str(free_port()), "--admin-port", str(admin_port),
        "--workers", "1", *extra,
    ]  # fmt: skip


def test_sigterm_lets_a_request_in_flight_finish_then_exits_0(tmp_path: Path) -> None:
    backend = SlowBackend()
    file = tmp_path / "snapshot.json"
    write_snapshot(
        file,
        snapshot(hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [backend.port]}),
    )
    http_port, admin_port = free_port(), free_port()
    command = proxy_command(file, http_port, admin_port, "--drain-timeout", "10")
    results: list[tuple[int, bytes]] = []
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            read_until(process, "serving shared")
            assert get(admin_port, "/readyz")[0] == 200
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


def test_a_chunked_body_over_the_limit_is_413_and_one_within_is_forwarded(
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

    run_proxy(tmp_path, make, client)


_STARTED = re.compile(r"worker (\d) started: pid (\d+)")


def wait_for_workers(process: subprocess.Popen[str], admin_port: int, count: int) -> dict[str, int]:
    """Read stderr until ``count`` workers started and as many are serving, then wait for the
    supervisor to know them all (a worker reports itself just after it logs "serving")."""
    pids: dict[str, int] = {}
    serving = 0
    while len(pids) < count or serving < count:
        line = read_until(process, "")[-1]
        assert line, "the supervisor ended"
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


class _Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_workers_share_the_port_and_a_killed_worker_is_restarted(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
        return wait_for_workers(process, admin_port, count)

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
            pids.update(wait_for_workers(process, admin_port, 2))
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


def test_the_supervisor_gives_up_on_workers_that_cannot_start(tmp_path: Path) -> None:
    file = tmp_path / "snapshot.json"
    write_snapshot(file, snapshot(scope="app/other"))  # not the shared pool's snapshot
    command = proxy_command(file, free_port(), free_port(), "--workers", "2")
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2  # the workers' own status for an unusable snapshot
    assert "giving up: worker" in done.stderr
    assert done.stderr.count("started: pid") <= 2 * 3  # three attempts per worker at most
