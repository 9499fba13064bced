"""``make run``'s demo (examples/demo.py), and what the README's "Start here" promises of it:
the ``curl`` lines it prints answer as printed, and however it is stopped, nothing it started
is left running or listening.

Every process is started in a session of its own, so that all it starts can be found (its
process group, in /proc) and, should a test fail half-way, killed. The demo's ports are fixed:
anything else listening on them fails these tests (the demo names the port).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from examples import demo

pytestmark = pytest.mark.fixed_ports  # the demo's ports (tests/conftest.py)

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
DEMO = [sys.executable, str(ROOT / "examples" / "demo.py")]
WAIT = 30.0  # the longest any one step may take, on a loaded machine
SERVING = "Ctrl-C stops"  # the demo's last line once it serves
ROLES = demo.demo_ports(demo.EXAMPLES).roles()
ANSWER = re.compile(r"^# .* \((?P<said>[^()]*)\)\n(?P<curl>curl .*)$", re.MULTILINE)
SAID = re.compile(r"answered (?P<status>\d{3}) just now(?:, Location: (?P<location>\S+))?")


class Started:
    """A command in a new session, its standard output read line by line, its standard
    error kept in a file."""

    def __init__(self, command: list[str], stderr: Path, env: dict[str, str] | None = None):
        self.stderr = stderr
        with stderr.open("wb") as errors:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                start_new_session=True,
            )
        assert self.process.stdout is not None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, args=(self.process.stdout,))
        self.reader.start()

    def _read(self, stdout: IO[str]) -> None:
        with stdout:
            for line in stdout:
                self.lines.put(line)
        self.lines.put(None)

    def read_until(self, marker: str) -> str:
        """Standard output up to the first line holding ``marker``."""
        deadline = time.monotonic() + WAIT
        seen: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {marker!r} within {WAIT:g} s:\n{''.join(seen)}{self.errors()}")
            if line is None:
                code = self.process.wait(WAIT)
                pytest.fail(f"exited ({code}) before {marker!r}:\n{''.join(seen)}{self.errors()}")
            seen.append(line)
            if marker in line:
                return "".join(seen)

    def errors(self) -> str:
        return self.stderr.read_text(errors="replace")

    def exit_code(self) -> int:
        try:
            return self.process.wait(WAIT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {WAIT:g} s after it was stopped:\n{self.errors()}")

    def kill_all(self) -> None:
        """SIGKILL to every process of the session still there (only a failed test leaves any)."""
        if live_in_group(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(WAIT)
        self.reader.join(WAIT)  # at the end of standard output: every writer is gone


@pytest.fixture
def start(tmp_path: Path) -> Iterator[list[Started]]:
    """Started commands: each test appends its own; whatever they left is killed after it."""
    started: list[Started] = []
    yield started
    for each in started:
        each.kill_all()


def live_in_group(group: int) -> list[int]:
    """The processes of a process group that have not exited (zombies excluded: whoever
    inherited an orphan may be slow to reap it, or never do)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        state, _parent, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        if int(pgrp) == group and state != "Z":
            live.append(int(entry.name))
    return live


def listening(ports: dict[int, str]) -> list[str]:
    """The ports of ``ports`` where something accepts connections on 127.0.0.1."""
    found = []
    for port, role in ports.items():
        try:
            socket.create_connection((demo.BIND, port), timeout=5).close()
        except ConnectionRefusedError:
            continue
        found.append(f"{port} ({role})")
    return found


def until_gone(group: int) -> list[int]:
    """Poll until no process of ``group`` is left, for at most WAIT; those still there."""
    deadline = time.monotonic() + WAIT
    while (live := live_in_group(group)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return live


def occupy(port: int) -> socket.socket:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((demo.BIND, port))
    listener.listen()
    return listener


# --- `make run`: the README's promise ------------------------------------------------------------


def test_make_run_prints_curl_lines_that_answer_as_printed_and_stops_on_sigterm_twice(
    start: list[Started], tmp_path: Path
) -> None:
    venv = Path(sys.prefix)  # the venv `make test` made: -o keeps make from remaking it
    command = ["make", "--no-print-directory", "-o", str(venv / ".installed-stamp")]
    command += ["run", f"VENV={venv}"]
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    for turn in (1, 2):
        make = Started(command, tmp_path / f"make-{turn}.err", env)
        start.append(make)
        printed = ANSWER.findall(make.read_until(SERVING))
        assert len(printed) == 4, printed
        for said, curl in printed:
            shown = SAID.fullmatch(said)
            assert shown is not None, f"the demo said {said!r} of {curl}"
            expected = int(shown["status"]), shown["location"]
            assert request_as_curl_would(curl) == expected, curl
            if shutil.which("curl") is not None:
                assert run_curl(curl) == expected, curl
        os.kill(make.process.pid, signal.SIGTERM)  # make passes it on to the demo
        make.exit_code()
        assert live_in_group(make.process.pid) == [], make.errors()
        assert listening(ROLES) == [], make.errors()


def request_as_curl_would(line: str) -> tuple[int, str | None]:
    """The request of a printed ``curl`` line, sent from Python: its status and Location. A
    200 must come from the sample backend: JSON naming the path asked for."""
    words = iter(shlex.split(line)[1:])
    headers: dict[str, str] = {}
    resolve: dict[tuple[str, int], str] = {}
    cafile = url = None
    for word in words:
        if word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "--cacert":
            cafile = str(ROOT / next(words))  # relative to where make runs
        elif word == "--resolve":
            host, port, address = next(words).split(":")
            resolve[host, int(port)] = address
        elif not word.startswith("-") and url is None:
            url = urlsplit(word)
        elif word != "-i":  # -i only shows the head
            pytest.fail(f"the test does not know curl's {word} ({line})")
    assert url is not None, line
    assert url.hostname is not None, line
    assert url.port is not None, line
    address = resolve.get((url.hostname, url.port), url.hostname)
    if url.scheme == "https":
        context = ssl.create_default_context(cafile=cafile)
        conn = _named(address, url.port, url.hostname, context)
    else:
        conn = http.client.HTTPConnection(address, url.port, timeout=10)
    try:
        conn.request("GET", url.path, headers={"Host": url.netloc, **headers})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status == 200:
        assert json.loads(body)["path"] == url.path, body
    return response.status, response.getheader("Location")


def _named(
    address: str, port: int, host: str, context: ssl.SSLContext
) -> http.client.HTTPConnection:
    """An HTTPS connection to ``address`` whose handshake names ``host`` (curl --resolve)."""

    class Connection(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            self.sock = context.wrap_socket(self.sock, server_hostname=host)

    return Connection(address, port, timeout=10)


def run_curl(line: str) -> tuple[int, str | None]:
    """The printed ``curl`` line, run: its status and the Location it was redirected to."""
    extra = ["--silent", "--show-error", "--max-time", "10", "--output", os.devnull]
    done = subprocess.run(
        [*shlex.split(line), *extra, "--write-out", "%{http_code} %{redirect_url}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    status, _, location = done.stdout.partition(" ")
    return int(status), location or None


# --- stopping the demo ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "to_group"),
    [
        (signal.SIGINT, True),  # Ctrl-C: the terminal signals the whole foreground group
        (signal.SIGTERM, False),
        (signal.SIGHUP, False),
        (signal.SIGKILL, False),  # no cleanup possible: coxswain serve must notice by itself
    ],
    ids=["ctrl-c", "sigterm", "sighup", "sigkill"],
)
def test_however_the_demo_is_stopped_nothing_it_started_is_left(
    start: list[Started], tmp_path: Path, sent: signal.Signals, to_group: bool
) -> None:
    running = Started(DEMO, tmp_path / "demo.err")
    start.append(running)
    running.read_until(SERVING)
    group = running.process.pid
    assert len(live_in_group(group)) == 2  # the demo and its coxswain serve
    (os.killpg if to_group else os.kill)(group, sent)
    code = running.exit_code()
    if sent == signal.SIGKILL:
        assert until_gone(group) == [], running.errors()
    else:
        assert code == 0, running.errors()
        assert live_in_group(group) == [], running.errors()  # the demo waited for its child
    assert listening(ROLES) == [], running.errors()


# --- --check ----------------------------------------------------------------------------------


def test_check_sends_each_request_it_prints_and_exits_0(tmp_path: Path) -> None:
    done = subprocess.run(
        [*DEMO, "--check"], cwd=ROOT, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    said = [SAID.fullmatch(s) for s, _ in ANSWER.findall(done.stdout)]
    assert [m["status"] if m else None for m in said] == ["308", "200", "200", "200"], done.stdout
    # plain HTTP to a TLS host named with port 8080: to the HTTPS port the demo serves (README)
    assert said[0] is not None
    assert said[0]["location"] == "https://demo.example.com:8443/", done.stdout


@pytest.mark.parametrize("port", sorted(ROLES), ids=[ROLES[p] for p in sorted(ROLES)])
def test_a_port_in_use_is_named_before_anything_starts(port: int) -> None:
    with occupy(port):
        done = subprocess.run(
            [*DEMO, "--check"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 1
    assert f"{demo.BIND}:{port} ({ROLES[port]})" in done.stderr
    assert done.stdout == ""  # nothing claimed, nothing started


def test_check_fails_when_answers_come_from_another_backend(tmp_path: Path) -> None:
    """The demo's requests must reach its own backend: one answering for it does not count."""

    class Impostor(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    impostor = http.server.ThreadingHTTPServer((demo.BIND, 0), Impostor)
    threading.Thread(target=impostor.serve_forever, daemon=True).start()
    manifests = shutil.copytree(demo.EXAMPLES, tmp_path / "examples")
    services = manifests / "services.yaml"
    port = impostor.server_address[1]
    services.write_text(services.read_text().replace("port: 9080", f"port: {port}"))
    try:
        done = subprocess.run(
            [*DEMO, "--check", "--manifests", str(manifests)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    finally:
        impostor.shutdown()
        impostor.server_close()
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("but not from this demo's backend") == 3, done.stdout


# --- the sample backend -------------------------------------------------------------------------


class CountingSocket(socket.socket):
    """An accepted connection that counts the writes made on it."""

    sends = 0

    def sendall(self, data: object, flags: int = 0) -> None:  # type: ignore[override]
        self.sends += 1
        super().sendall(data, flags)  # type: ignore[arg-type]


def test_the_sample_backend_answers_in_one_write_without_nagle() -> None:
    """Two writes with Nagle's algorithm wait for a delayed ACK on kept-alive connections."""
    backend = demo.Backend((demo.BIND, 0), token="run-token")
    with (
        backend,
        socket.create_server((demo.BIND, 0)) as listener,
        socket.create_connection(listener.getsockname()) as client,
    ):
        accepted, address = listener.accept()
        connection = CountingSocket(fileno=accepted.detach())
        handler = threading.Thread(target=demo.Echo, args=(connection, address, backend))
        handler.start()
        client.sendall(b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        response = http.client.HTTPResponse(client)
        response.begin()
        body = json.loads(response.read())
        handler.join(WAIT)
        assert (response.status, response.getheader(demo.RUN_HEADER)) == (200, "run-token")
        assert body["path"] == "/x"
        assert connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert connection.sends == 1
        connection.close()
