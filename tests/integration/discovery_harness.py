"""Discovery for end-to-end tests: a proxy identity the server grants the shared pool, its
certificate files, and the command line of a proxy fed by discovery."""

from __future__ import annotations

import datetime
import queue
import sys
from typing import TYPE_CHECKING

import grpc
import trio
from pyrsistent import pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain._proto.discovery.v1 import discovery_pb2_grpc as pb_grpc
from coxswain.compile.scope import SharedPool
from coxswain.compile.snapshot import IngressTable, ListenerHealth, Snapshot

from .proxy_harness import free_port

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from pyrsistent.typing import PMap

    from coxswain.compile.scope import Scope
    from coxswain.shell.discovery.ca import CertificateAuthority, ProxyIdentity
    from coxswain.shell.discovery.fleet import NodeKey, NodeObservation
    from coxswain.shell.discovery.tls import ClientCredentials

NOW = datetime.datetime.now(datetime.UTC)
TIMEOUT = 20


def allow(identity: ProxyIdentity, scope: Scope) -> bool:
    return isinstance(scope, SharedPool) and (identity.namespace, identity.name) == (
        "coxswain",
        "shared",
    )


def listening(version: str, scope: Scope, ports: Iterable[int]) -> Snapshot:
    """An empty snapshot whose Gateway listeners bind ``ports``: the ports a proxy of it may
    report bound."""
    return Snapshot(
        version=version,
        scope=scope,
        ingress=IngressTable(http_port=8080, https_port=8443),
        listener_health=pvector(
            ListenerHealth(
                gateway="team/web", listener=f"l{port}", port=port, target_port=port,
                protocol="HTTP", hostname=None, attached_routes=0, ready=True, reason="Accepted",
            )
            for port in ports
        ),
    )  # fmt: skip


class RawClient:
    """A blocking client driven message by message (``next`` in a trio worker thread), so a
    test can subscribe without deltas, as proxies before them did, Nack on purpose, or send
    what no proxy would."""

    def __init__(self, address: str, creds: ClientCredentials, subscribe: pb.Subscribe) -> None:
        channel_creds = grpc.ssl_channel_credentials(
            root_certificates=creds.ca_pem,
            private_key=creds.key_pem,
            certificate_chain=creds.cert_pem,
        )
        self._requests: queue.Queue[pb.ClientMessage | None] = queue.Queue()
        self._requests.put(pb.ClientMessage(subscribe=subscribe))
        self._channel = grpc.secure_channel(address, channel_creds)
        stream = pb_grpc.DiscoveryStub(self._channel).Stream
        self._responses = stream(iter(self._requests.get, None), timeout=TIMEOUT)

    async def next(self) -> pb.ServerMessage:
        return await trio.to_thread.run_sync(next, self._responses)

    def send(self, message: pb.ClientMessage) -> None:
        self._requests.put(message)

    def close(self) -> None:
        self._requests.put(None)
        self._channel.close()

    def cancel(self) -> None:
        """Cancel the call: a client that goes away without ending its stream."""
        self._responses.cancel()


def entries(fleet: PMap[NodeKey, NodeObservation], node_id: str) -> list[NodeObservation]:
    """The fleet's entries of ``node_id``, whatever their identity."""
    return [entry for (_, node), entry in fleet.items() if node == node_id]


def entry(fleet: PMap[NodeKey, NodeObservation], node_id: str) -> NodeObservation:
    """The one entry of ``node_id``; an AssertionError when there is none or several."""
    found = entries(fleet, node_id)
    assert len(found) == 1, f"{node_id}: {found}"
    return found[0]


def proxy_files(tmp_path: Path, ca: CertificateAuthority, name: str) -> list[str]:
    issued = ca.issue_proxy(namespace="coxswain", name=name, now=NOW)
    files = {"cert": issued.cert_pem, "key": issued.key_pem, "ca": ca.cert_pem}
    for kind, pem in files.items():
        (tmp_path / f"{name}.{kind}.pem").write_bytes(pem)
    return [
        arg for kind in files for arg in (f"--tls-{kind}", str(tmp_path / f"{name}.{kind}.pem"))
    ]


def command(address: str, http_port: int, tls: list[str], workers: int = 1) -> list[str]:
    return [
        sys.executable, "-m", "coxswain", "proxy", "--shared", "--discovery", address,
        "--node-id", "shared-0", "--bind", "127.0.0.1", "--ingress-http-port", str(http_port),
        "--ingress-https-port", str(free_port()), "--admin-port", "0",
        "--workers", str(workers), *tls,
    ]  # fmt: skip
