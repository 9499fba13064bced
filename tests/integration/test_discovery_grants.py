"""A stream whose identity loses its grant gets no newer snapshot until the grant returns
(shell.discovery): the policy is asked before each version is sent, not only at subscription;
the stream is kept for the grace ``REVOKED_GRACE`` (tests/hostile/test_hostile_discovery.py
checks it is ended after). Real gRPC over mutual TLS."""

from __future__ import annotations

import datetime

import trio

from coxswain.compile.scope import SharedPool
from coxswain.compile.snapshot import IngressTable, Snapshot
from coxswain.shell.discovery.ca import create_ca
from coxswain.shell.discovery.client import stream_snapshots
from coxswain.shell.discovery.server import granted_by, open_discovery_server
from coxswain.shell.discovery.tls import ClientCredentials, ServerCredentials

from .discovery_harness import entry

NOW = datetime.datetime.now(datetime.UTC)
SHARED = ("coxswain", "shared")


def _snapshot(version: str) -> Snapshot:
    return Snapshot(
        version=version,
        scope=SharedPool(),
        ingress=IngressTable(http_port=8080, https_port=8443),
    )


def test_a_stream_that_lost_its_grant_gets_nothing_newer_until_it_returns() -> None:
    ca = create_ca(trust_domain="coxswain.test", now=NOW)
    server = ca.issue_server(hosts=["127.0.0.1"], now=NOW)
    proxy = ca.issue_proxy(namespace=SHARED[0], name=SHARED[1], now=NOW)
    grants = {SHARED: SharedPool()}

    async def main() -> None:
        received: list[str] = []
        send, receive = trio.open_memory_channel[str](10)

        async def on_snapshot(snapshot: Snapshot) -> None:
            received.append(snapshot.version)
            await send.send(snapshot.version)

        async with (
            open_discovery_server(
                credentials=ServerCredentials(
                    cert_pem=server.cert_pem, key_pem=server.key_pem, ca_pem=ca.cert_pem
                ),
                policy=granted_by(lambda: grants),
            ) as discovery,
            trio.open_nursery() as nursery,
        ):
            discovery.publish(SharedPool(), _snapshot("v1"))
            nursery.start_soon(
                lambda: stream_snapshots(
                    f"127.0.0.1:{discovery.port}",
                    node_id="shared-0",
                    scope=None,
                    credentials=ClientCredentials(
                        cert_pem=proxy.cert_pem, key_pem=proxy.key_pem, ca_pem=ca.cert_pem
                    ),
                    on_snapshot=on_snapshot,
                )
            )
            assert await receive.receive() == "v1"
            await discovery.wait_fleet(lambda f: entry(f, "shared-0").acked_version == "v1")
            grants.clear()  # the grant is revoked: v2 is withheld
            discovery.publish(SharedPool(), _snapshot("v2"))
            await trio.sleep(0.5)
            assert received == ["v1"]
            assert entry(discovery.fleet, "shared-0").connected  # the stream stays, for a grace
            grants[SHARED] = SharedPool()  # it comes back: the next version goes out
            discovery.publish(SharedPool(), _snapshot("v3"))
            assert await receive.receive() == "v3"
            nursery.cancel_scope.cancel()

    async def bounded() -> None:
        with trio.fail_after(10):
            await main()

    trio.run(bounded)
