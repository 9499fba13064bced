"""``coxswain proxy --discovery``: a proxy process fed by the discovery server over gRPC with
mutual TLS, end to end (docs/contracts.md): it applies the snapshot, reports the ports
it bound, serves traffic, and exits 2 when the server refuses its identity."""

from __future__ import annotations

import http.client
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
import trio

from coxswain.compile.scope import SharedPool
from coxswain.compile.snapshot_json import snapshot_from_data
from coxswain.shell.discovery.ca import create_ca
from coxswain.shell.discovery.server import open_discovery_server
from coxswain.shell.discovery.tls import ServerCredentials

from .discovery_harness import NOW, TIMEOUT, allow, command, entries, entry, proxy_files
from .proxy_harness import free_port, ingress_path, serve_echo, snapshot

if TYPE_CHECKING:
    from pathlib import Path

    from pyrsistent.typing import PMap

    from coxswain.shell.discovery.fleet import NodeKey, NodeObservation


def get(port: int) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/x", headers={"Host": "a.example.com"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


@pytest.mark.parametrize("workers", [1, 2])
def test_a_proxy_process_serves_what_discovery_sends_and_reports_its_ports(
    tmp_path: Path, workers: int
) -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    issued = ca.issue_server(hosts=["127.0.0.1"], now=NOW)
    server_creds = ServerCredentials(
        cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=ca.cert_pem
    )
    tls = proxy_files(tmp_path, ca, "shared")
    http_port, gateway_port = free_port(), free_port()

    # with --workers N each worker subscribes as its own node: <node-id>-<slot>
    nodes = ["shared-0"] if workers == 1 else [f"shared-0-{slot}" for slot in range(workers)]

    def served(fleet: PMap[NodeKey, NodeObservation]) -> bool:
        # a Gateway listener's port: the server counts only ports of the scope's snapshot
        return all(
            any(gateway_port in e.bound_ports for e in entries(fleet, node)) for node in nodes
        )

    async def main() -> None:
        with trio.fail_after(TIMEOUT):
            async with (
                open_discovery_server(credentials=server_creds, policy=allow) as server,
                trio.open_nursery() as nursery,
            ):
                backend = await nursery.start(serve_echo, "one")
                data = snapshot(
                    hosts={"a.example.com": [ingress_path("one")]},
                    endpoints={"one": [backend]},
                    gateway_port=gateway_port,
                )
                server.publish(SharedPool(), snapshot_from_data(data))
                address = f"127.0.0.1:{server.port}"
                process = await trio.lowlevel.open_process(
                    command(address, http_port, tls, workers)
                )
                try:
                    fleet = await server.wait_fleet(served)
                    assert sorted(node for _, node in fleet) == nodes
                    assert {entry(fleet, node).acked_version for node in nodes} == {"sha256:test"}
                    status, body = await trio.to_thread.run_sync(get, http_port)
                    assert status == 200
                    assert b'"backend": "one"' in body
                finally:
                    process.terminate()
                    assert await process.wait() == 0
                # an identity the policy does not allow the shared pool: refused, exit 2
                refused = await trio.run_process(
                    command(address, free_port(), proxy_files(tmp_path, ca, "intruder")),
                    capture_stderr=True,
                    check=False,
                )
                assert refused.returncode == 2
                assert b"PERMISSION_DENIED" in refused.stderr
                nursery.cancel_scope.cancel()

    trio.run(main)


def test_discovery_without_credentials_is_refused_at_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coxswain", "proxy", "--shared", "--discovery", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert "--tls-cert, --tls-key and --tls-ca" in done.stderr
