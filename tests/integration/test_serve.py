"""``coxswain serve`` end to end with real processes.

One standalone server fed from a folder, an external shared proxy and an external dedicated
proxy with the certificates the server issued: traffic flows through all three; an edit of the
folder reaches every one; the dedicated proxy's certificate is refused for the shared pool and
for another Gateway; a Subscribe with an empty scope is refused; killing the server leaves the
proxies serving and restarting it resynchronises them; SIGTERM ends each process within 2 s.

The three proxies share the Gateway's internal port (30000), so each binds its own loopback
address: the server 127.0.0.1, the shared proxy 127.0.0.2, the dedicated one 127.0.0.3.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING, Any

import grpc
import pytest
import trio
import yaml

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain._proto.discovery.v1 import discovery_pb2_grpc as pb_grpc
from coxswain.shell.discovery.wire import WIRE_VERSION

from .e2e_harness import coxswain, served_by
from .manifests import (
    backend,
    gateway,
    gateway_class,
    http_route,
    ingress_class,
    own_infrastructure,
    own_parameters,
)
from .proxy_harness import free_port, reaped, serve_echo

pytestmark = pytest.mark.fixed_ports  # the shared pool's internal port 30000 (tests/conftest.py)

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 30
SERVER, SHARED, DEDICATED = "127.0.0.1", "127.0.0.2", "127.0.0.3"
SHARED_IDENTITY = "coxswain-system/coxswain-proxy"
INTERNAL = 30000  # the first internal port: the Gateway's only listener in the shared pool


def manifests(backends: dict[str, int], ingress_to: str, route_to: str, edge_port: int) -> str:
    """The folder's one file: an Ingress and a dedicated Gateway with one HTTPRoute."""
    objects: list[dict[str, Any]] = [
        ingress_class(default=True),
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "site", "namespace": "app"},
            "spec": {"defaultBackend": {"service": {"name": ingress_to, "port": {"number": 80}}}},
        },
        gateway_class(),
        own_parameters({"replicas": 1}),
        gateway("edge", edge_port, infrastructure=own_infrastructure()),
        http_route("edge", "edge", route_to),
    ]
    for name, port in backends.items():
        objects.extend(backend(name, port))
    return yaml.safe_dump_all(objects)


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def proxy(scope: list[str], address: str, bind: str, certs: Path, identity: str) -> list[str]:
    """A one-process proxy fed by discovery with the certificate the server issued for
    ``identity`` (``namespace/serviceaccount``); its Ingress ports are free ones."""
    folder = certs / "proxies" / identity
    return coxswain(
        "proxy", *scope, "--discovery", address, "--bind", bind,
        "--ingress-http-port", str(free_port()), "--ingress-https-port", str(free_port()),
        "--admin-port", "0", "--workers", "1", "--tls-cert", str(folder / "tls.crt"),
        "--tls-key", str(folder / "tls.key"), "--tls-ca", str(folder / "ca.crt"),
    )  # fmt: skip


async def stop_without_waiting_out_the_drain(process: trio.Process) -> None:
    """SIGTERM to an idle process: it exits 0 before the drain timeout (10 s, the default) runs
    out, since nothing is in flight. The bound leaves room for a loaded machine."""
    process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    with trio.fail_after(8):
        code = await process.wait()
    assert code == 0, f"exit {code} after {time.monotonic() - started:.2f} s"


def empty_scope_subscribe(address: str, certs: Path) -> grpc.StatusCode:
    """A raw client sending what no proxy would: a Subscribe whose scope has no kind."""
    folder = certs / "proxies" / SHARED_IDENTITY
    credentials = grpc.ssl_channel_credentials(
        root_certificates=(folder / "ca.crt").read_bytes(),
        private_key=(folder / "tls.key").read_bytes(),
        certificate_chain=(folder / "tls.crt").read_bytes(),
    )
    subscribe = pb.Subscribe(node_id="raw", wire_version=WIRE_VERSION, scope=pb.Scope())
    with grpc.secure_channel(address, credentials) as channel:
        responses = pb_grpc.DiscoveryStub(channel).Stream(
            iter([pb.ClientMessage(subscribe=subscribe)]), timeout=TIMEOUT
        )
        try:
            next(responses)
        except grpc.RpcError as error:
            return error.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def test_serve_feeds_its_own_proxy_and_external_ones_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    site, certs = tmp_path / "site", tmp_path / "certs"
    site.mkdir()
    discovery = free_port()
    http_port, edge_port, admin = free_port(), free_port(), free_port()
    server_command = coxswain(
        "serve", "--manifests", str(site), "--discovery-port", str(discovery),
        "--issue-certs", str(certs), "--bind", SERVER, "--ingress-http-port", str(http_port),
        "--ingress-https-port", str(free_port()), "--admin-port", str(admin),
    )  # fmt: skip
    address = f"{SERVER}:{discovery}"

    async def main() -> None:
        with trio.fail_after(120):
            async with reaped() as start, trio.open_nursery() as nursery:
                ports = {name: await nursery.start(serve_echo, name) for name in ("one", "two")}

                def publish(ingress_to: str, route_to: str) -> None:
                    text = manifests(ports, ingress_to, route_to, edge_port)
                    write_atomically(site / "site.yaml", text)

                publish("one", "two")
                server = await start(server_command)
                # the server's own proxy: the Ingress, and the dedicated Gateway (its own
                # proxy is not known to be ready, so the shared pool serves it meanwhile)
                await served_by(SERVER, http_port, "a.example.com", "one")
                await served_by(SERVER, INTERNAL, "edge.example.com", "two")

                shared_command = proxy(["--shared"], address, SHARED, certs, SHARED_IDENTITY)
                shared_command[shared_command.index("--ingress-http-port") + 1] = str(http_port)
                shared = await start(shared_command)
                dedicated = await start(
                    proxy(
                        ["--gateway", "app/edge"],
                        address,
                        DEDICATED,
                        certs,
                        "app/edge-coxswain",
                    )
                )
                await served_by(SHARED, http_port, "a.example.com", "one")
                await served_by(SHARED, INTERNAL, "edge.example.com", "two")
                await served_by(DEDICATED, edge_port, "edge.example.com", "two")

                # an edit reaches the server's proxy and both external ones
                publish("two", "one")
                for where, port, host, backend in (
                    (SERVER, http_port, "a.example.com", "two"),
                    (SHARED, http_port, "a.example.com", "two"),
                    (DEDICATED, edge_port, "edge.example.com", "one"),
                ):
                    await served_by(where, port, host, backend)

                # the dedicated identity may have its own Gateway's scope and nothing else
                for scope in (["--shared"], ["--gateway", "app/other"]):
                    refused = await trio.run_process(
                        proxy(scope, address, DEDICATED, certs, "app/edge-coxswain"),
                        capture_stderr=True,
                        check=False,
                    )
                    assert refused.returncode == 2
                    assert b"PERMISSION_DENIED" in refused.stderr
                code = await trio.to_thread.run_sync(empty_scope_subscribe, address, certs)
                assert code == grpc.StatusCode.INVALID_ARGUMENT

                # the server dies: both proxies keep serving their last snapshot
                server.kill()
                await server.wait()
                await served_by(SHARED, http_port, "a.example.com", "two")
                await served_by(DEDICATED, edge_port, "edge.example.com", "one")
                # a new server, the folder changed meanwhile: both resynchronise
                publish("one", "two")
                server = await start(server_command)
                await served_by(SHARED, http_port, "a.example.com", "one")
                await served_by(DEDICATED, edge_port, "edge.example.com", "two")

                for process in (shared, dedicated, server):
                    await stop_without_waiting_out_the_drain(process)
                nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_syntax_error_keeps_the_last_good_manifests_and_is_reported_with_its_line(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    http_port = free_port()
    command = coxswain(
        "serve", "--manifests", str(site), "--bind", SERVER, "--ingress-http-port",
        str(http_port), "--ingress-https-port", str(free_port()), "--admin-port", "0",
    )  # fmt: skip

    async def main() -> None:
        with trio.fail_after(60):
            async with reaped() as start, trio.open_nursery() as nursery:
                ports = {"one": await nursery.start(serve_echo, "one")}
                write_atomically(site / "a.yaml", manifests(ports, "one", "one", free_port()))
                server = await start(
                    command,
                    stderr=subprocess.PIPE,
                )
                assert server.stderr is not None
                await served_by(SERVER, http_port, "a.example.com", "one")
                write_atomically(site / "b.yaml", "kind: Service\nmetadata: [unclosed\n")
                log = b""
                while b"b.yaml:2: " not in log:  # where the unclosed list opens
                    log += await server.stderr.receive_some(65536)
                await served_by(SERVER, http_port, "a.example.com", "one")
                await stop_without_waiting_out_the_drain(server)
                nursery.cancel_scope.cancel()

    trio.run(main)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--discovery-port", "0"], "--discovery-port needs --issue-certs DIR"),
        (["--issue-certs", "x"], "need --discovery-port"),
        (["--manifests", "/nonexistent/x"], "/nonexistent/x: no such file or directory"),
    ],
)
def test_serve_refuses_bad_flags_and_a_missing_folder(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    done = subprocess.run(
        coxswain("serve", "--manifests", str(tmp_path), "--admin-port", "0", *flags),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert message in done.stderr
