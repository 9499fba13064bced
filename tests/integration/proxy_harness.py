"""Running the proxy in-process for tests: an echo backend, snapshot builders, a runner.

The proxy runs inside ``trio.run`` with the test's client code in a worker thread (stdlib
``http.client`` and raw sockets, a client independent of our codec); readiness comes from
``nursery.start``, so nothing waits by sleeping. A client for both (:func:`request`), and the
command line of a proxy process (:func:`proxy_command`) with a reader of its log.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl

import h11
import trio

from coxswain.cli.types import networks
from coxswain.compile.scope import parse_scope
from coxswain.shell.dataplane.connection_limits import DEFAULT_MAX_CONNECTIONS
from coxswain.shell.dataplane.server import HANDSHAKE_TIMEOUT, Proxy, ProxyConfig
from coxswain.shell.dataplane.upstream import Timeouts
from coxswain.shell.proxy import serve_snapshot_file

if TYPE_CHECKING:
    import ssl
    import subprocess
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
    from pathlib import Path


# Ports the tests listen on are drawn below the kernel's ephemeral range (32768 on, by
# default), where every outgoing connection on the machine takes its local port: a port from
# bind(0) is one of those, and between its release and the proxy's own bind any connect() could
# take it (EADDRINUSE). Also below the shared pool's internal ports (30000 on).
_PORTS: Final = range(10_000, 30_000)
_draw = random.Random()  # spreads concurrent test runs apart; no secret
_given: set[int] = set()  # ports handed out in this process, never handed out twice


def free_port(ports: range = _PORTS) -> int:
    """A port of ``ports`` nothing is bound to right now on 127.0.0.1 (by default outside the
    ephemeral range), and never one this process handed out before: a test draws several ports
    before anything binds them, and the probe's bind cannot see a port drawn a moment earlier."""
    for _ in range(1000):
        port = _draw.choice(ports)
        if port in _given:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError(f"no free port in {ports} on 127.0.0.1")


# --- echo backend -------------------------------------------------------------------------------


_connections = iter(range(1, 1 << 30))
EPOCH_DATE = "Thu, 01 Jan 1970 00:00:00 GMT"  # the echo's Date: the proxy's replaces it


async def _echo_connection(
    stream: trio.abc.Stream, name: str, received: list[dict[str, Any]]
) -> None:
    """h11 server: answers each request with JSON of what it received.

    ``/chunked`` answers with a chunked body, ``/trailers`` too with a trailer
    ``x-checksum: 42``; ``/stall`` never answers; ``/stall-body`` sends
    a head and 10 of the 100 bytes it announced, then nothing; ``/bad`` answers garbage;
    ``/once`` closes the connection after a response that announced keep-alive; ``/extra``
    sends 5 bytes more than its response, in the same write, and keeps the connection;
    ``…/flaky?fail=N[&code=C][&delay=S]`` fails its first N requests of that target, after S
    seconds, with an empty C response or, without ``code``, by closing the connection. Each
    content-length answer names the backend in ``Server``, with a ``Date`` of 1970. Each answer
    carries the number of the connection it came on; ``received`` gets each request's JSON
    too, for requests whose answer the test never sees (mirrors).
    """
    conn = h11.Connection(h11.SERVER)
    number = next(_connections)
    async with stream:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(bytes(data))
                continue
            if not isinstance(event, h11.Request):
                return
            body = bytearray()
            while True:
                part = conn.next_event()
                if part is h11.NEED_DATA:
                    conn.receive_data(bytes(await stream.receive_some(65536)))
                elif isinstance(part, h11.Data):
                    body += part.data
                elif isinstance(part, h11.EndOfMessage):
                    break
                else:
                    return
            target = event.target.decode()
            if any(n == b"upgrade" for n, _ in event.headers):
                await _echo_upgraded(stream, conn)
                return
            if target == "/stall":
                await trio.sleep_forever()
            if target == "/stall-body":
                await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n0123456789")
                await trio.sleep_forever()
            if target == "/bad":
                await stream.send_all(b"HTTP/1.1 banana\r\n\r\n")
                return
            seen = {
                "backend": name,
                "connection": number,
                "method": event.method.decode(),
                "target": target,
                "headers": [[n.decode(), v.decode()] for n, v in event.headers],
                "body": body.decode("latin-1"),
            }
            tries = sum(1 for r in received if r["target"] == target)
            received.append(seen)
            if target.partition("?")[0].endswith("/flaky"):  # fails its first tries alike
                flaky = dict(parse_qsl(target.partition("?")[2]))
                if tries < int(flaky["fail"]):
                    await trio.sleep(float(flaky.get("delay", 0)))
                    if "code" not in flaky:
                        return  # the connection closes without an answer
                    status = int(flaky["code"])
                    await stream.send_all(
                        conn.send(
                            h11.Response(status_code=status, headers=[("content-length", "0")])
                        )
                        + conn.send(h11.EndOfMessage())
                    )
                    conn.start_next_cycle()
                    continue
            payload = json.dumps(seen).encode()
            if target in ("/chunked", "/trailers"):
                headers = [("content-type", "application/json"), ("transfer-encoding", "chunked")]
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
                for i in range(0, len(payload), 7):
                    await stream.send_all(conn.send(h11.Data(data=payload[i : i + 7])))
                trailers = [("x-checksum", "42")] if target == "/trailers" else []
                await stream.send_all(conn.send(h11.EndOfMessage(headers=trailers)))
            else:
                headers = [
                    ("content-type", "application/json"),
                    ("content-length", str(len(payload))),
                    ("x-backend", name),
                    ("server", f"echo-{name}"),
                    ("date", EPOCH_DATE),
                    ("connection", "x-hop"),
                    ("x-hop", "dropped"),
                ]
                response = conn.send(h11.Response(status_code=200, headers=headers))
                if event.method != b"HEAD":
                    response += conn.send(h11.Data(data=payload))
                response += conn.send(h11.EndOfMessage())
                await stream.send_all(response + b"hello" if target == "/extra" else response)
            if conn.our_state is h11.MUST_CLOSE or target == "/once":
                return
            conn.start_next_cycle()


async def _echo_upgraded(stream: trio.abc.Stream, conn: h11.Connection) -> None:
    """Switch to the protocol asked for, played as a toy: every received chunk comes back
    upper-cased."""
    switch = h11.InformationalResponse(
        status_code=101, headers=[("upgrade", "websocket"), ("connection", "upgrade")]
    )
    await stream.send_all(conn.send(switch))
    rest, _ = conn.trailing_data
    if rest:
        await stream.send_all(bytes(rest).upper())
    while data := await stream.receive_some(65536):
        await stream.send_all(bytes(data).upper())


async def serve_echo(
    name: str,
    received: list[dict[str, Any]] | None = None,
    *,
    tls: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The echo on a port of its own; with ``tls``, behind TLS with that server context."""
    tcp = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(tcp[0].socket.getsockname()[1])
    listeners: list[trio.abc.Listener[Any]] = (
        list(tcp)
        if tls is None
        else [trio.SSLListener(lis, tls, https_compatible=True) for lis in tcp]
    )

    async def handle(stream: trio.abc.Stream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, h11.RemoteProtocolError):
            await _echo_connection(stream, name, [] if received is None else received)

    await trio.serve_listeners(handle, listeners)


# --- snapshots ----------------------------------------------------------------------------------


def backend(service: str, weight: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "namespace": "app",
        "service": service,
        "port": 80,
        "weight": weight,
        "valid": True,
        **extra,
    }


def ref(kind: str, name: str) -> dict[str, str]:
    return {"kind": kind, "namespace": "app", "name": name, "rule": "spec.rules[0]"}


def ingress_path(service: str, path: str = "/", *, tls_redirect: bool = False) -> dict[str, Any]:
    return {
        "path": path,
        "match": "Prefix",
        "backend": backend(service),
        "route": ref("Ingress", service),
        "tls_redirect": tls_redirect,
    }


def gateway_rule(backends: list[dict[str, Any]], **action: Any) -> dict[str, Any]:
    return {
        "match": {
            "path_type": "PathPrefix",
            "path": "/",
            "headers": [],
            "query": [],
            "method": None,
        },
        "route": ref("HTTPRoute", "r"),
        "backends": backends,
        "request_headers": None,
        "response_headers": None,
        "redirect": None,
        "rewrite": None,
        "mirrors": [],
        "timeouts": {"request": None, "backend_request": None},
        "problem": None,
        **action,
    }


def snapshot(
    *,
    hosts: dict[str, list[dict[str, Any]]] | None = None,
    endpoints: dict[str, list[int]] | None = None,
    gateway_port: int | None = None,
    gateway_rules: list[dict[str, Any]] | None = None,
    tls: dict[str, dict[str, str]] | None = None,
    scope: str = "shared",
) -> dict[str, Any]:
    """A snapshot document: Ingress hosts → paths; endpoints by service → local ports."""
    data: dict[str, Any] = {
        "version": "sha256:test",
        "scope": scope,
        "ingress": {
            "http_port": 80,
            "https_port": 443,
            "hosts": {
                host: {"paths": paths, "default_backend": None}
                for host, paths in (hosts or {}).items()
            },
        },
        "gateways": {},
        "client_certs": {},
        "listener_health": [],
        "tls": {"443": tls} if tls else {},
        "endpoints": {
            f"app/{service}/80": [{"address": "127.0.0.1", "port": p} for p in ports]
            for service, ports in (endpoints or {}).items()
        },
    }
    if gateway_port is not None:
        data["gateways"] = {
            str(gateway_port): {
                "*": {
                    "gateway": "app/gw",
                    "listener": "http",
                    "port": 80,
                    "protocol": "HTTP",
                    "hostname": "*",
                    "hosts": {"*": gateway_rules or []},
                }
            }
        }
        data["listener_health"] = [
            {
                "gateway": "app/gw",
                "listener": "http",
                "port": 80,
                "target_port": gateway_port,
                "protocol": "HTTP",
                "hostname": None,
                "attached_routes": 1,
                "ready": True,
                "reason": "Ready",
            }
        ]
    return data


def write_snapshot(path: Path, data: dict[str, Any]) -> None:
    """Replace the file as tools should: write a temporary name, then rename."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data))
    os.replace(temporary, path)


# --- running ------------------------------------------------------------------------------------


@dataclass
class Running:
    """What a test's client code gets: ports, the proxy, and a way into the trio thread."""

    proxy: Proxy
    http_port: int
    https_port: int
    admin_port: int
    gateway_port: int
    backends: dict[str, int] = field(default_factory=dict)
    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def wait_applies(self, count: int, rejections: int = 0) -> None:
        trio.from_thread.run(lambda: self.proxy.wait_applies(count, rejections=rejections))


def run_proxy(
    tmp_path: Path,
    make_snapshot: Callable[[dict[str, int]], dict[str, Any]],
    client: Callable[[Running], None],
    *,
    backends: tuple[str, ...] = ("one", "two"),
    scope: str = "shared",
    header_timeout: float = 60.0,
    handshake_timeout: float = HANDSHAKE_TIMEOUT,
    timeouts: Timeouts | None = None,
    trusted_proxies: str = "",
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    pass_server: bool = False,
    tls_backends: dict[str, ssl.SSLContext] | None = None,
    echo: Callable[..., Awaitable[None]] = serve_echo,
) -> None:
    """Start echo backends and a proxy serving ``make_snapshot(ports)``, run ``client`` in a
    thread, then stop everything. ``ports`` maps each backend name to its port, and
    ``"gateway"`` to a free port for a Gateway listener; ``tls_backends`` serves the backends
    it names behind TLS, with their server contexts. ``echo(name, received, *, tls,
    task_status)`` serves each backend (:func:`serve_echo`, or another echo of that shape)."""
    file = tmp_path / "snapshot.json"
    http_port, https_port, admin_port = free_port(), free_port(), free_port()
    gateway_port = free_port()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            received: dict[str, list[dict[str, Any]]] = {name: [] for name in backends}
            secured = tls_backends or {}
            ports = {
                name: await nursery.start(
                    partial(echo, name, received[name], tls=secured.get(name))
                )
                for name in backends
            }
            write_snapshot(file, make_snapshot({**ports, "gateway": gateway_port}))
            parsed = parse_scope(scope)
            assert parsed is not None
            proxy: Proxy = await nursery.start(
                lambda task_status: serve_snapshot_file(
                    str(file),
                    parsed,
                    ProxyConfig(
                        ingress_http_port=http_port,
                        ingress_https_port=https_port,
                        header_timeout=header_timeout,
                        handshake_timeout=handshake_timeout,
                        timeouts=timeouts or Timeouts(),
                        trusted_proxies=networks(trusted_proxies),
                        max_connections=max_connections,
                        pass_server=pass_server,
                    ),
                    admin_port=admin_port,
                    poll_interval=0.02,
                    task_status=task_status,
                )
            )
            running = Running(
                proxy, http_port, https_port, admin_port, gateway_port, ports, received
            )
            await trio.to_thread.run_sync(client, running)
            nursery.cancel_scope.cancel()

    trio.run(main)


@contextlib.asynccontextmanager
async def reaped() -> AsyncIterator[Callable[..., Awaitable[trio.Process]]]:
    """``start(command, **options)`` opens a process that is killed and reaped when the block
    exits, even failing, so that no test leaves a server holding its ports."""
    processes: list[trio.Process] = []

    async def start(command: list[str], **options: Any) -> trio.Process:
        processes.append(await trio.lowlevel.open_process(command, **options))
        return processes[-1]

    try:
        yield start
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                with trio.CancelScope(shield=True):
                    await process.wait()


@contextlib.contextmanager
def signals_survived(*numbers: signal.Signals) -> Iterator[None]:
    """Signals a test sends its own process do nothing unless the code under test catches
    them: a test of signal handling fails, rather than ending the test run, when it does not."""
    previous = {number: signal.signal(number, lambda *_: None) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


TIMEOUT = 30  # an upper bound for what must happen, generous for a loaded machine


def eventually(check: Callable[[], object]) -> None:
    """Poll ``check`` (from a client's thread) until it is true, for what no answer the client
    waits for tells: a mirror's request, the rest of a body a backend answered before it
    ended."""
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def request(
    port: int,
    method: str,
    path: str,
    *,
    host: str = "a.example.com",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[http.client.HTTPResponse, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    conn.request(method, path, body=body, headers={"Host": host, **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data


def echoed(data: bytes) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(data)
    found["header_map"] = {}
    for name, value in found["headers"]:
        found["header_map"].setdefault(name, []).append(value)
    return found


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
