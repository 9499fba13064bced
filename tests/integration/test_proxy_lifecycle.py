"""Snapshot swaps, listeners, the admin port, TLS, and the command line, over real sockets."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import trio
import trustme

from coxswain.compile.scope import SharedPool
from coxswain.shell.dataplane.snapshot_file import watch_snapshot_file

from .h2_backend import H2Backend
from .h2_client import H2Client
from .proxy_harness import (
    Running,
    backend,
    free_port,
    gateway_rule,
    ingress_path,
    run_proxy,
    signals_survived,
    snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from coxswain.compile.snapshot import Snapshot

TIMEOUT = 30  # an upper bound for what must happen, generous for a loaded machine


def get(port: int, path: str = "/", host: str = "a.example.com") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    conn.request("GET", path, headers={"Host": host})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def test_replaced_file_is_applied_without_restart_and_listeners_follow(tmp_path: Path) -> None:
    file = tmp_path / "snapshot.json"

    def first(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [ports["one"]]}
        )

    def client(run: Running) -> None:
        assert get(run.http_port, host="new.example.com")[0] == 404
        assert get(run.admin_port, "/readyz")[0] == 200
        ports = run.backends
        # keep-alive connection opened before the swap: its next request sees the new snapshot
        kept = http.client.HTTPConnection("127.0.0.1", run.http_port, timeout=TIMEOUT)
        kept.request("GET", "/", headers={"Host": "a.example.com"})
        assert kept.getresponse().read()
        http_listener = run.proxy.listeners[run.http_port]
        write_snapshot(
            file,
            snapshot(
                hosts={"new.example.com": [ingress_path("two")]},
                endpoints={"two": [ports["two"]]},
                gateway_port=run.gateway_port,
                gateway_rules=[gateway_rule([backend("two")])],
            ),
        )
        run.wait_applies(2)
        status, data = get(run.http_port, host="new.example.com")
        assert status == 200
        assert json.loads(data)["backend"] == "two"
        assert get(run.http_port, host="a.example.com")[0] == 404
        assert get(run.gateway_port)[0] == 200  # the Gateway listener was opened
        assert run.proxy.listeners[run.http_port] is http_listener  # kept, never re-bound
        kept.request("GET", "/", headers={"Host": "new.example.com"})
        assert kept.getresponse().status == 200
        kept.close()

        # a bad file is reported and the served snapshot stays
        file.with_suffix(".tmp").write_text("{not json")
        os.replace(file.with_suffix(".tmp"), file)
        run.wait_applies(2, rejections=1)
        assert get(run.http_port, host="new.example.com")[0] == 200
        write_snapshot(file, first(ports))
        run.wait_applies(3, rejections=1)
        assert get(run.http_port, host="a.example.com")[0] == 200
        # the Gateway listener is gone again
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", run.gateway_port)) != 0

    run_proxy(tmp_path, first, client)


def test_sighup_re_reads_the_file(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [ports["one"]]}
        )

    def client(run: Running) -> None:
        os.kill(os.getpid(), signal.SIGHUP)
        run.wait_applies(2)
        assert get(run.http_port)[0] == 200

    run_proxy(tmp_path, make, client)


def test_a_sighup_as_soon_as_the_first_snapshot_is_applied_is_not_lost(tmp_path: Path) -> None:
    """SIGHUP is caught from before the first load: one sent the moment the proxy serves
    (when a supervisor forwards it to a worker that has just reported) re-reads the file."""
    file = tmp_path / "snapshot.json"
    write_snapshot(file, snapshot())
    applied: list[Snapshot] = []
    again = trio.Event()

    async def apply(served: Snapshot) -> None:
        applied.append(served)
        if len(applied) == 1:
            os.kill(os.getpid(), signal.SIGHUP)
        else:
            again.set()

    async def main() -> None:
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                await nursery.start(
                    lambda task_status: watch_snapshot_file(
                        str(file), SharedPool(), apply, print, task_status=task_status
                    )
                )
                await again.wait()  # the file is unchanged: only the SIGHUP reads it again
                nursery.cancel_scope.cancel()

    with signals_survived(signal.SIGHUP):
        trio.run(main)
    assert len(applied) == 2


def test_admin_port_health_and_readiness(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot()

    def client(run: Running) -> None:
        assert get(run.admin_port, "/healthz")[0] == 200
        assert get(run.admin_port, "/readyz")[0] == 200
        assert get(run.admin_port, "/nope")[0] == 404
        # a listener that cannot be bound makes the proxy unready
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", 0))
            squatter.listen()
            taken = squatter.getsockname()[1]
            write_snapshot(
                tmp_path / "snapshot.json", snapshot(gateway_port=taken, gateway_rules=[])
            )
            run.wait_applies(2)
            assert get(run.admin_port, "/readyz")[0] == 503
        # once the port is free, the retries bind it: ready, and the listener serves
        deadline = time.monotonic() + TIMEOUT
        while get(run.admin_port, "/readyz")[0] != 200:
            assert time.monotonic() < deadline, "the freed port was never bound"
            time.sleep(0.05)
        assert get(taken, "/")[0] == 404  # the Gateway listener answers (it has no routes)

    run_proxy(tmp_path, make, client)


def test_tls_with_sni_picks_the_certificate_and_forwards_as_https(tmp_path: Path) -> None:
    ca = trustme.CA()
    a = ca.issue_cert("a.example.com")
    wildcard = ca.issue_cert("*.example.org")
    fallback = ca.issue_cert("default.invalid")

    def pem(cert: trustme.LeafCert) -> dict[str, str]:
        return {
            "cert_chain": "".join(b.bytes().decode() for b in cert.cert_chain_pems),
            "private_key": cert.private_key_pem.bytes().decode(),
            "secret": "app/tls",
        }

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={
                "a.example.com": [ingress_path("one")],
                "*.example.org": [ingress_path("two")],
            },
            endpoints={"one": [ports["one"]], "two": [ports["two"]]},
            tls={"a.example.com": pem(a), "*.example.org": pem(wildcard), "*": pem(fallback)},
        )

    def client(run: Running) -> None:
        context = ssl.create_default_context()
        ca.configure_trust(context)
        for host, expected in [("a.example.com", "one"), ("www.example.org", "two")]:
            conn = http.client.HTTPSConnection(
                "127.0.0.1", run.https_port, timeout=TIMEOUT, context=context
            )
            # connect by address, present the host name as SNI and Host
            conn.sock = context.wrap_socket(
                socket.create_connection(("127.0.0.1", run.https_port), timeout=TIMEOUT),
                server_hostname=host,
            )
            conn.request("GET", "/", headers={"Host": host})
            response = conn.getresponse()
            got = json.loads(response.read())
            assert response.status == 200
            assert got["backend"] == expected
            assert ["x-forwarded-proto", "https"] in got["headers"]
            conn.close()

        # no SNI: the default certificate; routing by the Host header
        context.check_hostname = False
        with context.wrap_socket(
            socket.create_connection(("127.0.0.1", run.https_port), timeout=TIMEOUT)
        ) as tls:
            peer = tls.getpeercert()
            assert peer is not None
            assert ("DNS", "default.invalid") in peer["subjectAltName"]
            tls.sendall(b"GET / HTTP/1.1\r\nHost: a.example.com\r\nConnection: close\r\n\r\n")
            response = http.client.HTTPResponse(tls)  # type: ignore[arg-type]
            response.begin()
            assert response.status == 200
            assert json.loads(response.read())["backend"] == "one"

    run_proxy(tmp_path, make, client)


def test_command_line_serves_a_snapshot_file(tmp_path: Path) -> None:
    http_port, https_port, admin_port = free_port(), free_port(), free_port()
    file = tmp_path / "snapshot.json"
    write_snapshot(file, snapshot())
    command = [
        sys.executable, "-m", "coxswain", "proxy", "--shared", "--snapshot", str(file),
        "--bind", "127.0.0.1", "--ingress-http-port", str(http_port),
        "--ingress-https-port", str(https_port), "--admin-port", str(admin_port),
        "--workers", "1",
    ]  # fmt: skip
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            # the process's own log is JSON lines when stderr is not a terminal; "serving" is
            # logged once everything is up
            lines = [process.stderr.readline()]
            while not (lines[-1] and json.loads(lines[-1]).get("message", "")).startswith(
                "serving shared"
            ):
                assert lines[-1], lines
                lines.append(process.stderr.readline())
            assert {"time", "level", "logger"} <= json.loads(lines[-1]).keys()
            assert get(admin_port, "/readyz")[0] == 200
            assert get(http_port, host="x.example.com")[0] == 404
            access = json.loads(process.stderr.readline())
            assert access["status"] == 404
            assert access["host"] == "x.example.com"
            assert {"method", "path", "route", "upstream", "duration_ms"} <= access.keys()
            assert access["reason"]  # why the proxy answered itself
        finally:
            process.terminate()
            process.wait(TIMEOUT)


def test_command_line_refuses_a_snapshot_of_another_scope(tmp_path: Path) -> None:
    file = tmp_path / "snapshot.json"
    write_snapshot(file, snapshot())
    done = subprocess.run(
        [sys.executable, "-m", "coxswain", "proxy", "--gateway", "app/gw", "--snapshot", str(file)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert "this proxy serves app/gw" in done.stderr


def test_client_certificates_are_checked_on_a_gateway_https_listener(tmp_path: Path) -> None:
    server_ca, client_ca = trustme.CA(), trustme.CA()
    server = server_ca.issue_cert("gw.example.com")
    good_client = client_ca.issue_cert("client.example.com")

    def make(ports: dict[str, int]) -> dict[str, Any]:
        port = ports["gateway"]
        data = snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=port,
            gateway_rules=[gateway_rule([backend("one")])],
        )
        data["gateways"][str(port)]["*"]["protocol"] = "HTTPS"
        data["listener_health"][0]["protocol"] = "HTTPS"
        data["tls"] = {
            str(port): {
                "*": {
                    "cert_chain": "".join(b.bytes().decode() for b in server.cert_chain_pems),
                    "private_key": server.private_key_pem.bytes().decode(),
                    "secret": "app/tls",
                }
            }
        }
        data["client_certs"] = {
            str(port): {
                "*": {"ca_bundle": client_ca.cert_pem.bytes().decode(), "mode": "AllowValidOnly"}
            }
        }
        return data

    def fetch(port: int, with_certificate: bool) -> int:
        context = ssl.create_default_context()
        server_ca.configure_trust(context)
        if with_certificate:
            good_client.configure_cert(context)
        conn = http.client.HTTPSConnection("gw.example.com", port, timeout=TIMEOUT, context=context)
        conn.sock = context.wrap_socket(
            socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT),
            server_hostname="gw.example.com",
        )
        try:
            conn.request("GET", "/", headers={"Host": "gw.example.com"})
            return conn.getresponse().status
        finally:
            conn.close()

    def client(run: Running) -> None:
        assert fetch(run.gateway_port, with_certificate=True) == 200
        try:
            status = fetch(run.gateway_port, with_certificate=False)
        except (OSError, http.client.HTTPException):
            status = None  # refused: the connection was closed after the handshake
        assert status is None

    run_proxy(tmp_path, make, client)


def under_swaps(
    run: Running, versions: list[Snapshot], load: Callable[[threading.Event], None]
) -> None:
    """Run ``load`` in a thread, until the event it gets is set, while the proxy applies
    ``versions`` in turn a thousand times."""
    stop = threading.Event()
    loader = threading.Thread(target=load, args=(stop,))
    loader.start()
    try:
        for i in range(1000):
            trio.from_thread.run(run.proxy.apply, versions[i % 2])
    finally:
        stop.set()
        loader.join(TIMEOUT)


def test_no_request_fails_while_a_thousand_snapshots_are_swapped(tmp_path: Path) -> None:
    def make(ports: dict[str, int], service: str = "one") -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path(service)]},
            endpoints={"one": [ports["one"]], "two": [ports["two"]]},
        )

    def client(run: Running) -> None:
        from coxswain.compile.snapshot_read import snapshot_from_data

        versions = [snapshot_from_data(make(run.backends, s)) for s in ("one", "two")]
        statuses: list[int] = []
        seen: set[str] = set()

        def load(stop: threading.Event) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", run.http_port, timeout=TIMEOUT)
            while not stop.is_set():
                conn.request("GET", "/", headers={"Host": "a.example.com"})
                response = conn.getresponse()
                statuses.append(response.status)
                seen.add(json.loads(response.read())["backend"])
            conn.close()

        under_swaps(run, versions, load)
        assert len(statuses) > 20, len(statuses)
        assert set(statuses) == {200}
        assert seen == {"one", "two"}

    run_proxy(tmp_path, make, client)


def test_no_http2_call_fails_while_a_thousand_snapshots_are_swapped(tmp_path: Path) -> None:
    """The same over HTTP/2 end to end: a client multiplexing ten streams at a time, h2c
    backends on the proxy's shared connections, each snapshot sending the calls to the other."""
    backends = {"one": H2Backend(), "two": H2Backend()}

    async def serve(name: str, *_: object, tls: object, task_status: trio.TaskStatus[int]) -> None:
        await backends[name].serve(task_status=task_status)

    def make(ports: dict[str, int], service: str = "one") -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]], "two": [ports["two"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([backend(service, protocol="h2c")])],
        )

    def client(run: Running) -> None:
        from coxswain.compile.snapshot_read import snapshot_from_data

        ports = {**run.backends, "gateway": run.gateway_port}
        versions = [snapshot_from_data(make(ports, s)) for s in ("one", "two")]
        statuses: list[int] = []

        def load(stop: threading.Event) -> None:
            h2c = H2Client(run.gateway_port)
            while not stop.is_set():
                streams = [h2c.send("GET", "/", authority="h2.example") for _ in range(10)]
                statuses.extend(response.status for response in h2c.wait(*streams))
            h2c.close()

        under_swaps(run, versions, load)
        assert len(statuses) > 20, len(statuses)
        assert set(statuses) == {200}
        assert all(b.heads for b in backends.values())  # both served, as the snapshots said
        relay = run.proxy.forwarder.h2
        assert relay is not None
        deadline = time.monotonic() + TIMEOUT  # the last exchanges end after their answers
        while relay.pool.stream_count():
            assert time.monotonic() < deadline, "backend streams left open"
            time.sleep(0.01)

    run_proxy(tmp_path, make, client, echo=serve)
