"""The discovery stream over real gRPC on 127.0.0.1 with mutual TLS (docs/contracts.md)."""

from __future__ import annotations

import datetime
import gc
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import grpc
import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry
from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain._proto.discovery.v1 import discovery_pb2_grpc as pb_grpc
from coxswain.compile.scope import GatewayScope, Scope, SharedPool
from coxswain.compile.snapshot import (
    Certificate,
    Endpoint,
    Snapshot,
)
from coxswain.shell.discovery import aio_bridge
from coxswain.shell.discovery import client as discovery_client
from coxswain.shell.discovery.ca import CertificateAuthority, ProxyIdentity, create_ca
from coxswain.shell.discovery.client import DiscoveryRefusedError, stream_snapshots
from coxswain.shell.discovery.server import granted_by, open_discovery_server
from coxswain.shell.discovery.tls import ClientCredentials, ServerCredentials
from coxswain.shell.discovery.wire import WIRE_VERSION

from .discovery_harness import RawClient, entries, entry, listening

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pyrsistent.typing import PMap

    from coxswain.shell.discovery.fleet import NodeObservation

NOW = datetime.datetime.now(datetime.UTC)
TIMEOUT = 30  # an upper bound for what must happen, generous for a loaded machine
FAST_BACKOFF = (0.01, 0.05)


def allow(identity: ProxyIdentity, scope: Scope) -> bool:
    """Test policy: ``coxswain/shared`` gets SharedPool; ``<ns>/<gw>-proxy`` gets ``<ns>/<gw>``."""
    if isinstance(scope, SharedPool):
        return (identity.namespace, identity.name) == ("coxswain", "shared")
    return (identity.namespace, identity.name) == (scope.namespace, f"{scope.name}-proxy")


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return create_ca(trust_domain="coxswain.test", now=NOW)


def server_creds(ca: CertificateAuthority) -> ServerCredentials:
    issued = ca.issue_server(hosts=["127.0.0.1"], now=NOW)
    return ServerCredentials(cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=ca.cert_pem)


def client_creds(ca: CertificateAuthority, namespace: str, name: str) -> ClientCredentials:
    issued = ca.issue_proxy(namespace=namespace, name=name, now=NOW)
    return ClientCredentials(cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=ca.cert_pem)


def snap(version: str, scope: Scope | None = None, ports: tuple[int, ...] = ()) -> Snapshot:
    return listening(version, scope or SharedPool(), ports)


def acked(node: str, version: str) -> Callable[[PMap[str, NodeObservation]], bool]:
    return lambda fleet: any(e.acked_version == version for e in entries(fleet, node))


def start_client(
    nursery: trio.Nursery,
    port: int,
    on_snapshot: Callable[[Snapshot], Awaitable[None]],
    credentials: ClientCredentials | None,
    *,
    node_id: str = "shared-0",
    scope: Scope | None = None,
    **extra: Any,
) -> None:
    """Run ``stream_snapshots`` against the server on 127.0.0.1:``port`` in ``nursery``."""
    nursery.start_soon(
        lambda: stream_snapshots(
            f"127.0.0.1:{port}",
            node_id=node_id,
            scope=scope,
            credentials=credentials,
            on_snapshot=on_snapshot,
            **extra,
        )
    )


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with trio.fail_after(TIMEOUT):
            await main()

    trio.run(bounded)


def test_shared_client_gets_the_snapshot_then_only_the_newest_after_its_ack(
    ca: CertificateAuthority,
) -> None:
    async def main() -> None:
        received: list[str] = []
        send, recv = trio.open_memory_channel[str](10)
        gate = trio.Event()
        ports_send, ports_recv = trio.open_memory_channel[frozenset[int]](1)

        async def on_snapshot(snapshot: Snapshot) -> None:
            received.append(snapshot.version)
            await send.send(snapshot.version)
            if snapshot.version == "v1":
                await gate.wait()

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            server.publish(SharedPool(), snap("v1"))
            await nursery.start(
                lambda task_status: stream_snapshots(
                    f"127.0.0.1:{server.port}",
                    node_id="shared-0",
                    scope=None,
                    credentials=client_creds(ca, "coxswain", "shared"),
                    on_snapshot=on_snapshot,
                    bound_ports=ports_recv,
                    task_status=task_status,
                )
            )
            assert await recv.receive() == "v1"
            server.publish(SharedPool(), snap("v2"))
            server.publish(SharedPool(), snap("v3", ports=(8080, 8443)))
            gate.set()
            assert await recv.receive() == "v3"
            fleet = await server.wait_fleet(acked("shared-0", "v3"))
            assert received == ["v1", "v3"]
            assert entry(fleet, "shared-0").scope == SharedPool()
            assert entry(fleet, "shared-0").identity == ProxyIdentity(
                trust_domain="coxswain.test", namespace="coxswain", name="shared"
            )
            await ports_send.send(frozenset({8080, 8443}))
            await server.wait_fleet(lambda f: entry(f, "shared-0").bound_ports == {8080, 8443})
            nursery.cancel_scope.cancel()

    run(main)


async def _expect_refusal(
    address: str, credentials: ClientCredentials, scope: Scope | None, **extra: int
) -> DiscoveryRefusedError:
    async def never(snapshot: Snapshot) -> None:
        raise AssertionError(f"unexpected snapshot {snapshot.version}")

    with pytest.raises(DiscoveryRefusedError) as info:
        await stream_snapshots(
            address,
            node_id="refused",
            scope=scope,
            credentials=credentials,
            on_snapshot=never,
            **extra,  # type: ignore[arg-type]
        )
    return info.value


def test_dedicated_identity_is_refused_the_shared_pool_and_other_gateways(
    ca: CertificateAuthority,
) -> None:
    async def main() -> None:
        dedicated = client_creds(ca, "team", "web-proxy")
        registry = CollectorRegistry()
        async with open_discovery_server(
            credentials=server_creds(ca), policy=allow, registry=registry
        ) as server:
            server.publish(SharedPool(), snap("v1"))
            server.publish(GatewayScope("team", "api"), snap("g1", GatewayScope("team", "api")))
            address = f"127.0.0.1:{server.port}"
            for scope in (None, SharedPool(), GatewayScope("team", "api")):
                refused = await _expect_refusal(address, dedicated, scope)
                assert refused.code == grpc.StatusCode.PERMISSION_DENIED
            refused = ("coxswain_discovery_refused_streams_total", {"reason": "not_granted"})
            assert registry.get_sample_value(*refused) == 3
            stranger = create_ca(trust_domain="coxswain.test", now=NOW)
            foreign = client_creds(stranger, "coxswain", "shared")
            assert not entries(server.fleet, "refused")
            # A certificate from another CA fails the TLS handshake before any RPC.
            subscribe = pb.Subscribe(node_id="foreign", wire_version=WIRE_VERSION)
            with pytest.raises(grpc.RpcError) as info:
                await trio.to_thread.run_sync(_raw_subscribe, address, foreign, subscribe)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert not entries(server.fleet, "foreign")

    run(main)


def test_unknown_gateway_scope_waits_until_its_first_snapshot(ca: CertificateAuthority) -> None:
    async def main() -> None:
        scope = GatewayScope("team", "web")
        got = trio.Event()

        async def on_snapshot(snapshot: Snapshot) -> None:
            assert snapshot.scope == scope
            got.set()

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            start_client(
                nursery,
                server.port,
                on_snapshot,
                client_creds(ca, "team", "web-proxy"),
                node_id="web-0",
                scope=scope,
            )
            await server.wait_fleet(lambda f: bool(entries(f, "web-0")))
            assert not got.is_set()
            server.publish(scope, snap("g1", scope))
            await got.wait()
            await server.wait_fleet(acked("web-0", "g1"))
            nursery.cancel_scope.cancel()

    run(main)


def test_wrong_wire_version_is_failed_precondition(ca: CertificateAuthority) -> None:
    async def main() -> None:
        async with open_discovery_server(credentials=server_creds(ca), policy=allow) as server:
            refused = await _expect_refusal(
                f"127.0.0.1:{server.port}",
                client_creds(ca, "coxswain", "shared"),
                None,
                wire_version=WIRE_VERSION + 1,
            )
            assert refused.code == grpc.StatusCode.FAILED_PRECONDITION

    run(main)


def _raw_subscribe(
    address: str, creds: ClientCredentials, subscribe: pb.Subscribe | pb.Ack
) -> None:
    """A raw blocking client, so a test can send what stream_snapshots never would."""
    channel_creds = grpc.ssl_channel_credentials(
        root_certificates=creds.ca_pem,
        private_key=creds.key_pem,
        certificate_chain=creds.cert_pem,
    )
    with grpc.secure_channel(address, channel_creds) as channel:
        responses = pb_grpc.DiscoveryStub(channel).Stream(
            iter([_client_message(subscribe)]), timeout=TIMEOUT
        )
        next(responses)


def _client_message(body: pb.Subscribe | pb.Ack) -> pb.ClientMessage:
    if isinstance(body, pb.Ack):
        return pb.ClientMessage(ack=body)
    return pb.ClientMessage(subscribe=body)


def test_first_message_other_than_subscribe_is_invalid_argument(
    ca: CertificateAuthority,
) -> None:
    async def main() -> None:
        async with open_discovery_server(credentials=server_creds(ca), policy=allow) as server:
            with pytest.raises(grpc.RpcError) as info:
                await trio.to_thread.run_sync(
                    _raw_subscribe,
                    f"127.0.0.1:{server.port}",
                    client_creds(ca, "coxswain", "shared"),
                    pb.Ack(version="v1"),
                )
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    run(main)


def test_scope_without_kind_is_invalid_argument(ca: CertificateAuthority) -> None:
    async def main() -> None:
        async with open_discovery_server(credentials=server_creds(ca), policy=allow) as server:
            server.publish(SharedPool(), snap("v1"))
            subscribe = pb.Subscribe(node_id="n", wire_version=WIRE_VERSION, scope=pb.Scope())
            assert subscribe.HasField("scope")
            with pytest.raises(grpc.RpcError) as info:
                await trio.to_thread.run_sync(
                    _raw_subscribe,
                    f"127.0.0.1:{server.port}",
                    client_creds(ca, "coxswain", "shared"),
                    subscribe,
                )
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    run(main)


def test_nack_keeps_the_stream_and_the_next_snapshot_arrives(ca: CertificateAuthority) -> None:
    async def main() -> None:
        send, recv = trio.open_memory_channel[str](10)

        async def on_snapshot(snapshot: Snapshot) -> None:
            await send.send(snapshot.version)
            if snapshot.version == "bad":
                raise ValueError("cannot apply")

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            server.publish(SharedPool(), snap("bad"))
            start_client(
                nursery,
                server.port,
                on_snapshot,
                client_creds(ca, "coxswain", "shared"),
                scope=SharedPool(),
            )
            assert await recv.receive() == "bad"
            server.publish(SharedPool(), snap("good"))
            assert await recv.receive() == "good"
            fleet = await server.wait_fleet(acked("shared-0", "good"))
            assert entry(fleet, "shared-0").streams == 1
            assert entry(fleet, "shared-0").last_nack == "bad: ValueError: cannot apply"
            nursery.cancel_scope.cancel()

    run(main)


def test_client_reconnects_and_resynchronises_when_the_server_restarts(
    ca: CertificateAuthority,
) -> None:
    async def main() -> None:
        send, recv = trio.open_memory_channel[str](10)

        async def on_snapshot(snapshot: Snapshot) -> None:
            await send.send(snapshot.version)

        async with trio.open_nursery() as nursery:
            async with open_discovery_server(credentials=server_creds(ca), policy=allow) as first:
                port = first.port
                first.publish(SharedPool(), snap("v1"))
                start_client(
                    nursery,
                    port,
                    on_snapshot,
                    client_creds(ca, "coxswain", "shared"),
                    backoff=FAST_BACKOFF,
                )
                assert await recv.receive() == "v1"
                await first.wait_fleet(acked("shared-0", "v1"))
            async with open_discovery_server(
                port=port, credentials=server_creds(ca), policy=allow
            ) as second:
                second.publish(SharedPool(), snap("v2"))
                assert await recv.receive() == "v2"
                await second.wait_fleet(acked("shared-0", "v2"))
            nursery.cancel_scope.cancel()

    run(main)


def test_plaintext_mode_serves_when_explicitly_insecure() -> None:
    async def main() -> None:
        got = trio.Event()

        async def on_snapshot(snapshot: Snapshot) -> None:
            assert snapshot.version == "v1"
            got.set()

        async with (
            open_discovery_server(credentials=None, policy=None, insecure=True) as server,
            trio.open_nursery() as nursery,
        ):
            server.publish(SharedPool(), snap("v1"))
            start_client(nursery, server.port, on_snapshot, None, node_id="local")
            await got.wait()
            fleet = await server.wait_fleet(acked("local", "v1"))
            assert entry(fleet, "local").identity is None
            nursery.cancel_scope.cancel()

    run(main)


def test_server_refuses_to_start_without_credentials_unless_insecure() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="insecure=True"):
            async with open_discovery_server(credentials=None, policy=None):
                pass

    run(main)


def test_cancellation_and_shutdown_leave_no_thread_behind(ca: CertificateAuthority) -> None:
    before = set(threading.enumerate())

    async def main() -> None:
        got = trio.Event()

        async def on_snapshot(snapshot: Snapshot) -> None:
            got.set()

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            server.publish(SharedPool(), snap("v1"))
            start_client(nursery, server.port, on_snapshot, client_creds(ca, "coxswain", "shared"))
            await got.wait()
            names = {t.name for t in threading.enumerate()}
            assert "coxswain-discovery-server" in names
            assert "coxswain-discovery-client" in names
            # Cancelled while blocked in a read on the stream.
            nursery.cancel_scope.cancel()

    run(main)
    # grpc.aio's process-wide poller thread stops once the last aio server or channel object is
    # collected; collect, then join (a wait on the event itself, not a sleep) anything new.
    gc.collect()
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=TIMEOUT)
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert leftover == []


def test_the_production_policy_follows_the_grants(ca: CertificateAuthority) -> None:
    """``granted_by``: each ServiceAccount gets its one scope, read anew per subscription."""
    grants = {
        ("coxswain-system", "coxswain-proxy"): SharedPool(),
        ("app", "edge-coxswain"): GatewayScope("app", "edge"),
    }
    policy = granted_by(lambda: grants)
    shared = ProxyIdentity(trust_domain="t", namespace="coxswain-system", name="coxswain-proxy")
    edge = ProxyIdentity(trust_domain="t", namespace="app", name="edge-coxswain")
    assert policy(shared, SharedPool())
    assert not policy(shared, GatewayScope("app", "edge"))
    assert policy(edge, GatewayScope("app", "edge"))
    assert not policy(edge, GatewayScope("app", "other"))
    assert not policy(edge, SharedPool())
    assert not policy(ProxyIdentity(trust_domain="t", namespace="x", name="y"), SharedPool())
    del grants[("app", "edge-coxswain")]  # the Gateway went back to the shared pool
    assert not policy(edge, GatewayScope("app", "edge"))

    async def main() -> None:
        async with open_discovery_server(credentials=server_creds(ca), policy=policy) as server:
            refused = await _expect_refusal(
                f"127.0.0.1:{server.port}",
                client_creds(ca, "app", "edge-coxswain"),
                GatewayScope("app", "edge"),
            )
            assert refused.code == grpc.StatusCode.PERMISSION_DENIED

    run(main)


# --- incremental delivery -----------------------------------------------------------------------


def with_endpoints(version: str, **addresses: str) -> Snapshot:
    """A snapshot whose endpoints table maps each ``ns/svc/port`` key (``_`` for ``/``) to one
    address."""
    return replace(
        snap(version),
        endpoints=pmap(
            {k.replace("_", "/"): pvector([Endpoint(a, 8080)]) for k, a in addresses.items()}
        ),
    )


def test_a_delta_client_applies_deltas_to_exactly_the_published_snapshots(
    ca: CertificateAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    applied_deltas: list[str] = []
    real = discovery_client.apply_delta

    def counting(base: Snapshot, delta: pb.Delta) -> Snapshot:
        applied_deltas.append(delta.version)
        return real(base, delta)

    monkeypatch.setattr(discovery_client, "apply_delta", counting)
    published = [
        with_endpoints("v1", a_s_80="10.0.0.1", a_t_80="10.0.0.2"),
        with_endpoints("v2", a_s_80="10.0.0.9", a_t_80="10.0.0.2"),
        with_endpoints("v3", a_s_80="10.0.0.9", b_u_80="10.0.0.3"),
    ]

    async def main() -> None:
        send, recv = trio.open_memory_channel[Snapshot](10)

        async def on_snapshot(snapshot: Snapshot) -> None:
            await send.send(snapshot)

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            start_client(nursery, server.port, on_snapshot, client_creds(ca, "coxswain", "shared"))
            for snapshot in published:
                server.publish(SharedPool(), snapshot)
                assert await recv.receive() == snapshot
                await server.wait_fleet(acked("shared-0", snapshot.version))
            nursery.cancel_scope.cancel()

    run(main)
    assert applied_deltas == ["v2", "v3"]


@pytest.mark.parametrize("accept_deltas", [False, True])
def test_only_a_client_that_accepts_deltas_gets_them(
    ca: CertificateAuthority, accept_deltas: bool
) -> None:
    async def main() -> None:
        async with open_discovery_server(credentials=server_creds(ca), policy=allow) as server:
            server.publish(SharedPool(), with_endpoints("v1", a_s_80="10.0.0.1"))
            subscribe = pb.Subscribe(
                node_id="raw", wire_version=WIRE_VERSION, accept_deltas=accept_deltas
            )
            client = RawClient(
                f"127.0.0.1:{server.port}", client_creds(ca, "coxswain", "shared"), subscribe
            )
            try:
                first = await client.next()
                assert first.WhichOneof("message") == "snapshot"
                client.send(pb.ClientMessage(ack=pb.Ack(version="v1")))
                server.publish(SharedPool(), with_endpoints("v2", a_s_80="10.0.0.2"))
                second = await client.next()
            finally:
                client.close()
        if accept_deltas:
            assert second.WhichOneof("message") == "delta"
            assert (second.delta.base_version, second.delta.version) == ("v1", "v2")
            assert [r.key.name for r in second.delta.upserts] == ["a/s/80"]
        else:
            assert second.WhichOneof("message") == "snapshot"
            assert second.snapshot.version == "v2"

    run(main)


def test_a_proxy_that_reconnects_before_its_old_stream_ends_stays_connected(
    ca: CertificateAuthority,
) -> None:
    """The fleet is keyed by identity and node id: the end of the old stream must not mark the node
    disconnected while its new stream is open (the controller reads Programmed from it)."""

    async def main() -> None:
        async with open_discovery_server(credentials=server_creds(ca), policy=allow) as server:
            server.publish(SharedPool(), snap("v1"))
            subscribe = pb.Subscribe(node_id="shared-0", wire_version=WIRE_VERSION)
            address, creds = f"127.0.0.1:{server.port}", client_creds(ca, "coxswain", "shared")
            old = RawClient(address, creds, subscribe)
            assert (await old.next()).WhichOneof("message") == "snapshot"
            new = RawClient(address, creds, subscribe)
            try:
                assert (await new.next()).WhichOneof("message") == "snapshot"
                await server.wait_fleet(lambda f: entry(f, "shared-0").live == 2)
                old.close()
                await server.wait_fleet(lambda f: entry(f, "shared-0").live == 1)
                assert entry(server.fleet, "shared-0").connected
                assert entry(server.fleet, "shared-0").streams == 2
            finally:
                new.close()
            await server.wait_fleet(lambda f: not entries(f, "shared-0"))  # pruned

    run(main)


def test_a_nacked_delta_is_followed_by_the_same_version_in_full(ca: CertificateAuthority) -> None:
    async def main() -> None:
        async with open_discovery_server(credentials=server_creds(ca), policy=allow) as server:
            server.publish(SharedPool(), with_endpoints("v1", a_s_80="10.0.0.1"))
            subscribe = pb.Subscribe(node_id="raw", wire_version=WIRE_VERSION, accept_deltas=True)
            client = RawClient(
                f"127.0.0.1:{server.port}", client_creds(ca, "coxswain", "shared"), subscribe
            )
            try:
                assert (await client.next()).WhichOneof("message") == "snapshot"
                client.send(pb.ClientMessage(ack=pb.Ack(version="v1")))
                server.publish(SharedPool(), with_endpoints("v2", a_s_80="10.0.0.2"))
                assert (await client.next()).WhichOneof("message") == "delta"
                client.send(pb.ClientMessage(nack=pb.Nack(version="v2", detail="cannot apply")))
                again = await client.next()
                assert again.WhichOneof("message") == "snapshot"
                assert again.snapshot.version == "v2"
                client.send(pb.ClientMessage(ack=pb.Ack(version="v2")))
                await server.wait_fleet(acked("raw", "v2"))
            finally:
                client.close()

    run(main)


def test_a_snapshot_over_4_mib_gets_through(ca: CertificateAuthority) -> None:
    """gRPC's default receive limit is 4 MiB; both sides raise it."""
    big = Certificate(chain_pem="x" * (5 * 1024 * 1024), key_pem="k", secret="a/tls")
    large = replace(snap("big"), tls=pmap({8443: pmap({"*": big})}))

    async def main() -> None:
        got = trio.Event()

        async def on_snapshot(snapshot: Snapshot) -> None:
            assert snapshot == large
            got.set()

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            server.publish(SharedPool(), large)
            start_client(nursery, server.port, on_snapshot, client_creds(ca, "coxswain", "shared"))
            await got.wait()
            await server.wait_fleet(acked("shared-0", "big"))
            nursery.cancel_scope.cancel()

    run(main)


def test_node_status_goes_out_before_any_snapshot_and_while_one_is_applied(
    ca: CertificateAuthority,
) -> None:
    """The Subscribe is written before anything else; a NodeStatus is not held back by the
    client waiting for the scope's first snapshot nor by an ``on_snapshot`` still running,
    and the Ack follows once it returns, on the same stream. The server holds a claim made
    before the stream was sent any version, and counts its ports once the version shows
    them to be the scope's."""

    async def main() -> None:
        scope = GatewayScope("team", "web")
        applying, gate = trio.Event(), trio.Event()
        ports_send, ports_recv = trio.open_memory_channel[frozenset[int]](1)

        async def on_snapshot(snapshot: Snapshot) -> None:
            applying.set()
            await gate.wait()

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            await ports_send.send(frozenset({80}))
            start_client(
                nursery,
                server.port,
                on_snapshot,
                client_creds(ca, "team", "web-proxy"),
                node_id="web-0",
                scope=scope,
                bound_ports=ports_recv,
            )
            await server.wait_fleet(lambda f: bool(entries(f, "web-0")))
            server.publish(scope, snap("g1", scope, ports=(80, 443)))
            await applying.wait()
            await server.wait_fleet(lambda f: entry(f, "web-0").bound_ports == {80})
            await ports_send.send(frozenset({80, 443}))
            await server.wait_fleet(lambda f: entry(f, "web-0").bound_ports == {80, 443})
            assert entry(server.fleet, "web-0").acked_version is None
            gate.set()
            await server.wait_fleet(acked("web-0", "g1"))
            assert entry(server.fleet, "web-0").streams == 1
            nursery.cancel_scope.cancel()

    run(main)


def test_the_same_bound_ports_are_reported_once(ca: CertificateAuthority) -> None:
    """A proxy hands its bound ports to the client after every snapshot it applies, mostly
    unchanged; the client reports them only when they change (docs/contracts.md, "Node
    status"), so a change reaching a thousand proxies is not answered by a thousand reports
    that say nothing new. Each report naming a port outside the scope is counted as ignored:
    the count shows how many went out."""

    async def main() -> None:
        scope = GatewayScope("team", "web")
        ports_send, ports_recv = trio.open_memory_channel[frozenset[int]](0)

        async def on_snapshot(snapshot: Snapshot) -> None:
            pass

        async with (
            open_discovery_server(credentials=server_creds(ca), policy=allow) as server,
            trio.open_nursery() as nursery,
        ):
            server.publish(scope, snap("g1", scope, ports=(80, 443)))
            start_client(
                nursery,
                server.port,
                on_snapshot,
                client_creds(ca, "team", "web-proxy"),
                node_id="web-0",
                scope=scope,
                bound_ports=ports_recv,
            )
            await server.wait_fleet(acked("web-0", "g1"))
            await ports_send.send(frozenset({80, 9999}))
            await server.wait_fleet(lambda f: entry(f, "web-0").bound_ports == {80})
            await ports_send.send(frozenset({80, 9999}))  # taken by the client: unbuffered
            await trio.testing.wait_all_tasks_blocked()  # what it writes, it has written
            await ports_send.send(frozenset({80, 443}))
            await server.wait_fleet(lambda f: entry(f, "web-0").bound_ports == {80, 443})
            assert server.ignored_reports == 1
            nursery.cancel_scope.cancel()

    run(main)


def test_the_inbox_runs_every_callback_on_the_trio_thread_in_each_threads_order() -> None:
    """Loop threads hand results to trio through one ``_Inbox`` per run, which calls
    ``run_sync_soon`` only when no drain is pending: nothing may be lost or reordered."""

    async def main() -> None:
        inbox = aio_bridge.run_inbox()
        assert aio_bridge.run_inbox() is inbox  # one per run
        trio_thread = threading.get_ident()
        seen: dict[int, list[int]] = {t: [] for t in range(8)}
        done = trio.Event()
        total = 8 * 2000

        def note(t: int, i: int) -> None:
            assert threading.get_ident() == trio_thread
            seen[t].append(i)
            if sum(map(len, seen.values())) == total:
                done.set()

        def produce(t: int) -> None:
            for i in range(2000):
                inbox.put(lambda t=t, i=i: note(t, i))  # type: ignore[misc]

        threads = [threading.Thread(target=produce, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        await done.wait()
        for thread in threads:
            thread.join()
        assert all(seen[t] == list(range(2000)) for t in seen)

    run(main)
