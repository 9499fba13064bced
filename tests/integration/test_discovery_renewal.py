"""Certificates renewed while discovery runs are used without a restart (shell.discovery.tls):
the server presents its new certificate to the next connection, and a proxy whose certificate
files were replaced presents the new one at its next attempt. Real gRPC over mutual TLS."""

from __future__ import annotations

import datetime
import socket
import ssl
from typing import TYPE_CHECKING

import trio

from coxswain.compile.scope import SharedPool
from coxswain.compile.snapshot import IngressTable, Snapshot
from coxswain.shell.discovery.ca import DEFAULT_VALIDITY, RENEW_BEFORE, create_ca
from coxswain.shell.discovery.client import stream_snapshots
from coxswain.shell.discovery.server import granted_by, open_discovery_server
from coxswain.shell.discovery.tls import CredentialFiles, ServerCertificate, ServerCredentials

if TYPE_CHECKING:
    from pathlib import Path

    from coxswain.shell.discovery.ca import CertificateAuthority

NOW = datetime.datetime.now(datetime.UTC)
TIMEOUT = 30  # an upper bound for what must happen, generous for a loaded machine
SHARED = ("coxswain", "shared")
POLICY = granted_by(lambda: {SHARED: SharedPool()})


def _snapshot() -> Snapshot:
    return Snapshot(
        version="v1", scope=SharedPool(), ingress=IngressTable(http_port=8080, https_port=8443)
    )


def _write_proxy_files(folder: Path, issuer: CertificateAuthority, server_ca: bytes) -> None:
    issued = issuer.issue_proxy(namespace=SHARED[0], name=SHARED[1], now=NOW)
    (folder / "tls.crt").write_bytes(issued.cert_pem)
    (folder / "tls.key").write_bytes(issued.key_pem)
    (folder / "ca.crt").write_bytes(server_ca)


def _presented(port: int, folder: Path) -> bytes:
    """The certificate the server presents to a new TLS connection (DER), fully verified."""
    context = ssl.create_default_context(cafile=str(folder / "ca.crt"))
    context.load_cert_chain(folder / "tls.crt", folder / "tls.key")
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


async def _first_snapshot(port: int, credentials: CredentialFiles) -> str:
    send, receive = trio.open_memory_channel[str](1)

    async def on_snapshot(snapshot: Snapshot) -> None:
        await send.send(snapshot.version)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: stream_snapshots(
                f"127.0.0.1:{port}",
                node_id="shared-0",
                scope=None,
                credentials=credentials,
                on_snapshot=on_snapshot,
                backoff=(0.01, 0.05),
            )
        )
        version = await receive.receive()
        nursery.cancel_scope.cancel()
    return version


def test_the_server_presents_its_renewed_certificate_to_new_connections(tmp_path: Path) -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW - DEFAULT_VALIDITY)
    # The first certificate was issued 340 days ago: still valid, but due for renewal now.
    clock = [NOW - DEFAULT_VALIDITY + RENEW_BEFORE - datetime.timedelta(days=5)]

    def issue(now: datetime.datetime) -> ServerCredentials:
        issued = ca.issue_server(hosts=["127.0.0.1"], now=now)
        return ServerCredentials(
            cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=ca.cert_pem
        )

    certificate = ServerCertificate(issue, clock=lambda: clock[0])
    _write_proxy_files(tmp_path, ca, ca.cert_pem)

    async def main() -> None:
        with trio.fail_after(TIMEOUT):
            await _renewal(certificate, clock, tmp_path)

    trio.run(main)


async def _renewal(
    certificate: ServerCertificate, clock: list[datetime.datetime], folder: Path
) -> None:
    async with open_discovery_server(credentials=certificate, policy=POLICY) as server:
        server.publish(SharedPool(), _snapshot())
        first = await trio.to_thread.run_sync(_presented, server.port, folder)
        assert first == ssl.PEM_cert_to_DER_cert(certificate.current.cert_pem.decode())
        clock[0] = NOW  # the renewal time came while the server ran
        second = await trio.to_thread.run_sync(_presented, server.port, folder)
        assert second != first
        assert second == ssl.PEM_cert_to_DER_cert(certificate.current.cert_pem.decode())
        # and proxies subscribe over it
        assert await _first_snapshot(server.port, CredentialFiles(*_paths(folder))) == "v1"


def test_a_proxy_presents_the_certificate_its_files_hold_at_each_attempt(tmp_path: Path) -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    stranger = create_ca(trust_domain="coxswain.test", now=NOW)
    server = ca.issue_server(hosts=["127.0.0.1"], now=NOW)
    credentials = ServerCredentials(
        cert_pem=server.cert_pem, key_pem=server.key_pem, ca_pem=ca.cert_pem
    )
    _write_proxy_files(tmp_path, stranger, ca.cert_pem)  # refused at the handshake
    files = CredentialFiles(*_paths(tmp_path))

    async def main() -> None:
        async with open_discovery_server(credentials=credentials, policy=POLICY) as discovery:
            discovery.publish(SharedPool(), _snapshot())
            async with trio.open_nursery() as nursery:
                subscribed = trio.Event()

                async def subscribe() -> None:
                    assert await _first_snapshot(discovery.port, files) == "v1"
                    subscribed.set()

                nursery.start_soon(subscribe)
                await trio.sleep(0.3)  # attempts with the stranger's certificate fail
                assert not subscribed.is_set()
                _write_proxy_files(tmp_path, ca, ca.cert_pem)  # the Secret was renewed
                await subscribed.wait()

    async def bounded() -> None:
        with trio.fail_after(TIMEOUT):
            await main()

    trio.run(bounded)


def _paths(folder: Path) -> tuple[Path, Path, Path]:
    return folder / "tls.crt", folder / "tls.key", folder / "ca.crt"
