"""A subscriber with a valid certificate attacks the discovery server (docs/contracts.md, "The
discovery protocol"; docs/security.md, "The holder of a proxy certificate"): its reports count
only for its own stream, its scope and its identity; the fleet holds only open streams; a large
message and a revoked grant end its stream; its identity's streams are capped, and so are the
server's; its refusals are counted and cost the log one line per interval. Each test runs real
gRPC over mutual TLS on 127.0.0.1, and checks that an honest stream beside the attacker keeps
working."""

from __future__ import annotations

import contextlib
import datetime
import logging
from typing import TYPE_CHECKING, Any

import grpc
import pytest
import trio
from prometheus_client import CollectorRegistry

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.scope import GatewayScope, Scope, SharedPool
from coxswain.shell.discovery.ca import CertificateAuthority, ProxyIdentity, create_ca
from coxswain.shell.discovery.codec import encode_scope
from coxswain.shell.discovery.server import MAX_NODE_ID, granted_by, open_discovery_server
from coxswain.shell.discovery.tls import ClientCredentials, ServerCredentials
from coxswain.shell.discovery.wire import WIRE_VERSION
from tests.integration.discovery_harness import TIMEOUT, RawClient, listening

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from coxswain.compile.snapshot import Snapshot
    from coxswain.shell.discovery.server import DiscoveryServer

NOW = datetime.datetime.now(datetime.UTC)
WEB = GatewayScope("team", "web")
GRANTS: dict[tuple[str, str], Scope] = {
    ("coxswain", "shared"): SharedPool(),
    ("team", "web-proxy"): WEB,
}
SHARED_ID = ProxyIdentity(trust_domain="coxswain.test", namespace="coxswain", name="shared")
WEB_ID = ProxyIdentity(trust_domain="coxswain.test", namespace="team", name="web-proxy")


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return create_ca(trust_domain="coxswain.test", now=NOW)


def snap(version: str, scope: Scope, *ports: int) -> Snapshot:
    return listening(version, scope, ports)


class Attack:
    """A server with the shared pool (version ``s1``, port 8443) and Gateway ``team/web``
    (version ``g1``, port 80) published, and raw clients on it."""

    def __init__(
        self, server: DiscoveryServer, ca: CertificateAuthority, registry: CollectorRegistry
    ) -> None:
        self.server = server
        self._ca = ca
        self._registry = registry
        self._clients: list[RawClient] = []
        self.grants: dict[tuple[str, str], Scope] = {}

    def connect(
        self,
        identity: ProxyIdentity,
        node_id: str,
        scope: Scope,
        wire_version: int = WIRE_VERSION,
    ) -> RawClient:
        issued = self._ca.issue_proxy(namespace=identity.namespace, name=identity.name, now=NOW)
        creds = ClientCredentials(
            cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=self._ca.cert_pem
        )
        subscribe = pb.Subscribe(
            node_id=node_id, wire_version=wire_version, scope=encode_scope(scope)
        )
        client = RawClient(f"127.0.0.1:{self.server.port}", creds, subscribe)
        self._clients.append(client)
        return client

    async def honest(self, identity: ProxyIdentity, node_id: str, scope: Scope) -> RawClient:
        """A client that takes its first snapshot, Acks it and reports its ports."""
        client = self.connect(identity, node_id, scope)
        first = (await client.next()).snapshot
        client.send(pb.ClientMessage(ack=pb.Ack(version=first.version)))
        ports = [h.target_port for h in first.listener_health]
        client.send(pb.ClientMessage(node_status=pb.NodeStatus(bound_ports=ports)))
        await self.server.wait_fleet(
            lambda f: (
                (e := f.get((identity, node_id))) is not None
                and e.acked_version == first.version
                and e.bound_ports == frozenset(ports)
            )
        )
        return client

    async def refused(
        self, identity: ProxyIdentity, node_id: str, scope: Scope, **subscribe: Any
    ) -> grpc.RpcError:
        """How the server ends a new stream it refuses before any snapshot."""
        with pytest.raises(grpc.RpcError) as ended:
            await self.connect(identity, node_id, scope, **subscribe).next()
        return ended.value

    def refusals(self, reason: str) -> float | None:
        """``coxswain_discovery_refused_streams_total{reason}``."""
        sample = "coxswain_discovery_refused_streams_total"
        return self._registry.get_sample_value(sample, {"reason": reason})

    def close(self) -> None:
        for client in self._clients:
            client.close()


@contextlib.asynccontextmanager
async def attack(ca: CertificateAuthority, **bounds: Any) -> AsyncIterator[Attack]:
    """The server of :class:`Attack`, its grants those of ``GRANTS`` (a test may change them),
    ``bounds`` those of ``open_discovery_server`` (``revoked_grace``, the caps on streams)."""
    issued = ca.issue_server(hosts=["127.0.0.1"], now=NOW)
    credentials = ServerCredentials(
        cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=ca.cert_pem
    )
    grants = dict(GRANTS)
    registry = CollectorRegistry()
    async with open_discovery_server(
        credentials=credentials, policy=granted_by(lambda: grants), registry=registry, **bounds
    ) as server:
        server.publish(SharedPool(), snap("s1", SharedPool(), 8443))
        server.publish(WEB, snap("g1", WEB, 80))
        attack = Attack(server, ca, registry)
        attack.grants = grants
        try:
            yield attack
        finally:
            attack.close()


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with trio.fail_after(TIMEOUT):
            await main()

    trio.run(bounded)


@pytest.mark.parametrize("version", ["s1", "g0"])
def test_an_ack_of_a_version_not_sent_on_the_stream_is_ignored(
    ca: CertificateAuthority, version: str
) -> None:
    """``s1`` is the shared pool's (another scope's) version, ``g0`` one never published: an
    Ack of either would let the controller count the attacker's ports for Gateways it does
    not serve. The stream stays, and its own Ack still counts."""

    async def main() -> None:
        async with attack(ca) as at:
            await at.honest(SHARED_ID, "shared-0", SharedPool())
            web = at.connect(WEB_ID, "web-0", WEB)
            assert (await web.next()).snapshot.version == "g1"
            web.send(pb.ClientMessage(ack=pb.Ack(version=version)))
            web.send(pb.ClientMessage(node_status=pb.NodeStatus(bound_ports=[80])))
            fleet = await at.server.wait_fleet(lambda f: bool(f[(WEB_ID, "web-0")].bound_ports))
            assert fleet[(WEB_ID, "web-0")].acked_version is None
            assert at.server.ignored_reports == 1
            web.send(pb.ClientMessage(ack=pb.Ack(version="g1")))  # the stream still works
            await at.server.wait_fleet(lambda f: f[(WEB_ID, "web-0")].acked_version == "g1")
            assert at.server.fleet[(SHARED_ID, "shared-0")].acked_version == "s1"

    run(main)


def test_ports_outside_the_streams_scope_are_not_counted(ca: CertificateAuthority) -> None:
    """8443 is the shared pool's port and 9999 nobody's: claiming them would mark listeners
    Programmed that this proxy does not serve. The ports of its own scope count."""

    async def main() -> None:
        async with attack(ca) as at:
            await at.honest(SHARED_ID, "shared-0", SharedPool())
            web = await at.honest(WEB_ID, "web-0", WEB)
            web.send(pb.ClientMessage(node_status=pb.NodeStatus(bound_ports=[8443, 9999])))
            await at.server.wait_fleet(lambda f: not f[(WEB_ID, "web-0")].bound_ports)
            web.send(pb.ClientMessage(node_status=pb.NodeStatus(bound_ports=[80, 8443])))
            fleet = await at.server.wait_fleet(lambda f: bool(f[(WEB_ID, "web-0")].bound_ports))
            assert fleet[(WEB_ID, "web-0")].bound_ports == {80}
            assert fleet[(SHARED_ID, "shared-0")].bound_ports == {8443}
            assert at.server.ignored_reports == 2

    run(main)


def test_another_identitys_node_id_does_not_touch_its_entry(ca: CertificateAuthority) -> None:
    async def main() -> None:
        async with attack(ca) as at:
            shared = await at.honest(SHARED_ID, "shared-0", SharedPool())
            honest = at.server.fleet[(SHARED_ID, "shared-0")]
            web = await at.honest(WEB_ID, "shared-0", WEB)  # the shared proxy's node id
            fleet = at.server.fleet
            assert fleet[(SHARED_ID, "shared-0")] == honest
            assert fleet[(WEB_ID, "shared-0")].scope == WEB
            assert fleet[(WEB_ID, "shared-0")].bound_ports == {80}
            web.close()  # its end does not disconnect the honest node either
            await at.server.wait_fleet(lambda f: (WEB_ID, "shared-0") not in f)
            assert at.server.fleet[(SHARED_ID, "shared-0")] == honest
            at.server.publish(SharedPool(), snap("s2", SharedPool(), 8443))
            assert (await shared.next()).snapshot.version == "s2"
            shared.send(pb.ClientMessage(ack=pb.Ack(version="s2")))
            await at.server.wait_fleet(lambda f: f[(SHARED_ID, "shared-0")].acked_version == "s2")

    run(main)


def test_the_fleet_forgets_the_streams_that_ended(ca: CertificateAuthority) -> None:
    """Reconnecting under new node ids must not grow the fleet: it holds open streams only."""

    async def main() -> None:
        async with attack(ca) as at:
            await at.honest(SHARED_ID, "shared-0", SharedPool())
            for attempt in range(5):
                client = await at.honest(WEB_ID, f"web-{attempt}", WEB)
                assert len(at.server.fleet) == 2
                client.close()
                await at.server.wait_fleet(lambda f: len(f) == 1)
            assert set(at.server.fleet) == {(SHARED_ID, "shared-0")}

    run(main)


def test_a_client_message_over_4_mib_ends_its_stream(ca: CertificateAuthority) -> None:
    """The server receives at most 4 MiB a message (it sends snapshots of up to 256 MiB)."""

    async def main() -> None:
        async with attack(ca) as at:
            shared = await at.honest(SHARED_ID, "shared-0", SharedPool())
            web = await at.honest(WEB_ID, "web-0", WEB)
            detail = "x" * (5 * 1024 * 1024)
            web.send(pb.ClientMessage(nack=pb.Nack(version="g1", detail=detail)))
            with pytest.raises(grpc.RpcError) as ended:
                await web.next()
            assert ended.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            at.server.publish(SharedPool(), snap("s2", SharedPool(), 8443))
            assert (await shared.next()).snapshot.version == "s2"

    run(main)


def test_a_stream_whose_grant_stays_revoked_is_ended(ca: CertificateAuthority) -> None:
    """Nothing is published after the grant goes: the stream is ended by the grace alone."""

    async def main() -> None:
        async with attack(ca, revoked_grace=0.2) as at:
            shared = await at.honest(SHARED_ID, "shared-0", SharedPool())
            web = await at.honest(WEB_ID, "web-0", WEB)
            del at.grants[("team", "web-proxy")]
            with pytest.raises(grpc.RpcError) as ended:
                await web.next()
            assert ended.value.code() == grpc.StatusCode.PERMISSION_DENIED
            await at.server.wait_fleet(lambda f: (WEB_ID, "web-0") not in f)
            assert at.server.revoked == 1
            at.server.publish(SharedPool(), snap("s2", SharedPool(), 8443))
            assert (await shared.next()).snapshot.version == "s2"

    run(main)


def test_a_grant_back_within_the_grace_keeps_the_stream_through_later_graces(
    ca: CertificateAuthority,
) -> None:
    """The grant flickers: lost (a version is withheld), back before the grace ends. The
    stream stays through several graces (the grant asked again as each one ends), gets the
    withheld version at the next ask, and a later loss ends it after a whole grace again."""

    async def main() -> None:
        async with attack(ca, revoked_grace=0.2) as at:
            web = await at.honest(WEB_ID, "web-0", WEB)
            key = ("team", "web-proxy")
            scope = at.grants.pop(key)
            at.server.publish(WEB, snap("g2", WEB, 80))  # the stream asks, and withholds g2
            at.grants[key] = scope
            assert (await web.next()).snapshot.version == "g2"  # at the grace's end
            web.send(pb.ClientMessage(ack=pb.Ack(version="g2")))
            await trio.sleep(0.7)  # three graces and more with the grant held
            assert at.server.revoked == 0
            at.server.publish(WEB, snap("g3", WEB, 80))
            assert (await web.next()).snapshot.version == "g3"
            del at.grants[key]
            with pytest.raises(grpc.RpcError) as ended:
                await web.next()
            assert ended.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert at.server.revoked == 1

    run(main)


def test_an_identity_past_its_cap_of_streams_is_refused_until_one_of_them_ends(
    ca: CertificateAuthority,
) -> None:
    """Capped at three, the shared pool's identity gets its fourth and fifth streams refused
    at once, naming it and the cap, and no fleet entry for them; another identity's stream is
    served; one of the three closed, a new one is served, and the cap holds again."""

    async def main() -> None:
        async with attack(ca, streams_per_identity=3) as at:
            first = [await at.honest(SHARED_ID, f"shared-{n}", SharedPool()) for n in range(3)]
            for n in (3, 4):
                ended = await at.refused(SHARED_ID, f"extra-{n}", SharedPool())
                assert ended.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert ended.details() == (
                    f"{SHARED_ID.uri} has 3 discovery streams open, the most one identity may"
                )
            await at.honest(WEB_ID, "web-0", WEB)
            assert len(at.server.fleet) == 4
            assert at.refusals("identity_streams") == 2
            first[0].close()
            await at.server.wait_fleet(lambda f: (SHARED_ID, "shared-0") not in f)
            await at.honest(SHARED_ID, "shared-3", SharedPool())
            ended = await at.refused(SHARED_ID, "extra-5", SharedPool())
            assert ended.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            at.server.publish(SharedPool(), snap("s2", SharedPool(), 8443))
            assert (await first[1].next()).snapshot.version == "s2"

    run(main)


def test_the_server_past_its_cap_of_streams_refuses_a_new_one_of_any_identity(
    ca: CertificateAuthority,
) -> None:
    async def main() -> None:
        async with attack(ca, streams_per_identity=3, max_streams=4) as at:
            for n in range(3):
                await at.honest(SHARED_ID, f"shared-{n}", SharedPool())
            web = await at.honest(WEB_ID, "web-0", WEB)
            ended = await at.refused(WEB_ID, "web-1", WEB)
            assert ended.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert ended.details() == (
                f"{WEB_ID.uri}: the server has 4 discovery streams open, the most it holds"
            )
            assert at.refusals("server_streams") == 1
            web.close()
            await at.server.wait_fleet(lambda f: (WEB_ID, "web-0") not in f)
            await at.honest(WEB_ID, "web-1", WEB)

    run(main)


def test_every_end_of_a_stream_gives_its_place_back(ca: CertificateAuthority) -> None:
    """Capped at one stream, an identity whose streams end in every way a stream ends gets
    each next one: refused at its Subscribe (not granted, wrong wire version), ended by the
    server (a message over 4 MiB, a grant that stayed revoked), cancelled by the client, or
    dropped with the client's channel. Each way is taken twice: a place not given back would
    refuse the second."""

    async def main() -> None:
        async with attack(ca, streams_per_identity=1, revoked_grace=0.2) as at:
            for n in range(2):
                ended = await at.refused(WEB_ID, f"denied-{n}", SharedPool())
                assert ended.code() == grpc.StatusCode.PERMISSION_DENIED
                ended = await at.refused(WEB_ID, f"old-{n}", WEB, wire_version=WIRE_VERSION + 1)
                assert ended.code() == grpc.StatusCode.FAILED_PRECONDITION
            for n in range(2):
                web = await at.honest(WEB_ID, f"large-{n}", WEB)
                detail = "x" * (5 * 1024 * 1024)
                web.send(pb.ClientMessage(nack=pb.Nack(version="g1", detail=detail)))
                await at.server.wait_fleet(lambda f, n=n: (WEB_ID, f"large-{n}") not in f)
            for n in range(2):
                await at.honest(WEB_ID, f"revoked-{n}", WEB)
                del at.grants[("team", "web-proxy")]
                await at.server.wait_fleet(lambda f, n=n: (WEB_ID, f"revoked-{n}") not in f)
                at.grants[("team", "web-proxy")] = WEB
            for n in range(2):
                (await at.honest(WEB_ID, f"cancelled-{n}", WEB)).cancel()
                await at.server.wait_fleet(lambda f, n=n: (WEB_ID, f"cancelled-{n}") not in f)
            for n in range(2):
                (await at.honest(WEB_ID, f"dropped-{n}", WEB)).close()
                await at.server.wait_fleet(lambda f, n=n: (WEB_ID, f"dropped-{n}") not in f)
            await at.honest(WEB_ID, "web-0", WEB)
            assert at.refusals("identity_streams") == 0

    run(main)


def lines(caplog: pytest.LogCaptureFixture, word: str) -> list[str]:
    """The discovery server's log lines that hold ``word``."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "coxswain.shell.discovery" and word in r.getMessage()
    ]


def refusal_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return lines(caplog, "refused")


def test_a_flood_of_refused_subscriptions_logs_one_line_per_identity_and_counts_them_all(
    ca: CertificateAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    """Refused for its scope and for its cap, one identity's refusals log one WARNING line
    in the interval (an hour here); another identity's first refusal logs its own line. The
    metric counts every refusal by reason, never by identity."""

    async def main() -> None:
        async with attack(ca, streams_per_identity=1, log_interval=3600.0) as at:
            for n in range(10):
                await at.refused(WEB_ID, f"denied-{n}", SharedPool())
            await at.honest(WEB_ID, "web-0", WEB)
            for n in range(10):
                await at.refused(WEB_ID, f"extra-{n}", WEB)
            await at.refused(SHARED_ID, "shared-0", WEB)
            assert at.refusals("not_granted") == 11
            assert at.refusals("identity_streams") == 10

    with caplog.at_level(logging.WARNING, logger="coxswain.shell.discovery"):
        run(main)
    lines = refusal_lines(caplog)
    assert lines == [
        f"discovery: refused (PERMISSION_DENIED): {WEB_ID.uri} may not subscribe to shared",
        f"discovery: refused (PERMISSION_DENIED): {SHARED_ID.uri} may not subscribe to team/web",
    ]


def test_refusals_held_back_are_counted_in_a_later_line(
    ca: CertificateAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    """Every refusal is logged or counted in the line that ends its interval (0.05 s here)."""

    def logged() -> int:
        counts = [
            int(line.split()[0]) if line[0].isdigit() else 1 for line in refusal_lines(caplog)
        ]
        return sum(counts)

    async def main() -> None:
        async with attack(ca, log_interval=0.05) as at:
            for n in range(8):
                await at.refused(WEB_ID, f"denied-{n}", SharedPool())
            while logged() < 8:  # noqa: ASYNC110 - the log has no event to wait on
                await trio.sleep(0.01)
            assert logged() == 8

    with caplog.at_level(logging.WARNING, logger="coxswain.shell.discovery"):
        run(main)


def test_a_node_id_longer_than_a_pod_name_and_its_slot_is_refused(
    ca: CertificateAuthority,
) -> None:
    """The fleet keys its entries by node id, and logs name it: one of 4 MiB a stream would
    be held and logged as many times as the identity has streams."""

    async def main() -> None:
        async with attack(ca) as at:
            ended = await at.refused(WEB_ID, "w" * (MAX_NODE_ID + 1), WEB)
            assert ended.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert ended.details() == (
                f"{WEB_ID.uri}: node_id of {MAX_NODE_ID + 1} characters, more than {MAX_NODE_ID}"
            )
            assert at.refusals("bad_subscribe") == 1
            await at.honest(WEB_ID, "w" * MAX_NODE_ID, WEB)

    run(main)


def test_nacks_are_kept_and_logged_cut_and_a_flood_of_them_logs_one_line(
    ca: CertificateAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    """A Nack's detail may be 4 MiB: the fleet keeps, and the log shows, its first 1,024
    characters. Nacks of the version sent are all applied, and logged once in the interval."""

    async def main() -> None:
        async with attack(ca, log_interval=3600.0) as at:
            web = await at.honest(WEB_ID, "web-0", WEB)
            for n in range(10):
                detail = f"{n}" * 100_000
                web.send(pb.ClientMessage(nack=pb.Nack(version="g1", detail=detail)))
            fleet = await at.server.wait_fleet(
                lambda f: (f[(WEB_ID, "web-0")].last_nack or "").startswith("g1: 9")
            )
            assert fleet[(WEB_ID, "web-0")].last_nack == (
                f"g1: {'9' * 1024}... (100000 characters)"
            )

    with caplog.at_level(logging.WARNING, logger="coxswain.shell.discovery"):
        run(main)
    [nacked] = lines(caplog, "nacked")
    assert nacked.endswith(f"nacked {'0' * 1024}... (100000 characters)")


def test_reports_ignored_on_many_streams_log_one_line(
    ca: CertificateAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    """Per identity, not per stream: reconnecting does not buy the attacker new lines."""

    async def main() -> None:
        async with attack(ca, log_interval=3600.0) as at:
            for n in range(4):
                web = await at.honest(WEB_ID, f"web-{n}", WEB)
                web.send(pb.ClientMessage(ack=pb.Ack(version="g0" * 100_000)))
                web.send(pb.ClientMessage(node_status=pb.NodeStatus(bound_ports=[])))
                await at.server.wait_fleet(lambda f, n=n: not f[(WEB_ID, f"web-{n}")].bound_ports)
                web.close()
            assert at.server.ignored_reports == 4

    with caplog.at_level(logging.WARNING, logger="coxswain.shell.discovery"):
        run(main)
    [ignored] = lines(caplog, "ignored")
    assert len(ignored) < 500, ignored


def test_a_node_status_of_more_ports_than_a_scope_has_is_ignored_whole(
    ca: CertificateAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    """Each stream keeps the ports it claims: a claim of a million would be held as many
    times as the identity has streams. A claim of 4,096 ports counts for those of its scope,
    and the others are logged as a count and a few; past 4,096 the claim is ignored whole,
    and the last one stands."""

    async def main() -> None:
        async with attack(ca, log_interval=3600.0) as at:
            web = await at.honest(WEB_ID, "web-0", WEB)

            async def claim(ports: list[int]) -> frozenset[int]:
                web.send(pb.ClientMessage(node_status=pb.NodeStatus(bound_ports=ports)))
                web.send(pb.ClientMessage(nack=pb.Nack(version="g1", detail=f"{len(ports)}")))
                fleet = await at.server.wait_fleet(
                    lambda f: f[(WEB_ID, "web-0")].last_nack == f"g1: {len(ports)}"
                )
                return fleet[(WEB_ID, "web-0")].bound_ports

            assert await claim([80, *range(1000, 5095)]) == {80}
            assert await claim(list(range(1000, 6000))) == {80}
            assert at.server.ignored_reports == 2

    with caplog.at_level(logging.WARNING, logger="coxswain.shell.discovery"):
        run(main)
    [ignored] = lines(caplog, "ignored")  # the second is held back: same identity and kind
    assert ignored.endswith(
        "ignored 4095 ports outside its scope: 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, ..."
    )


def test_a_grant_lost_by_many_streams_of_an_identity_logs_one_line(
    ca: CertificateAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    """Each stream asks for the grant, and each would log its loss: the identity's budget
    makes that one line, whatever the number of streams."""

    async def main() -> None:
        async with attack(ca, revoked_grace=0.2, log_interval=3600.0) as at:
            for n in range(3):
                await at.honest(WEB_ID, f"web-{n}", WEB)
            del at.grants[("team", "web-proxy")]
            await at.server.wait_fleet(lambda f: not any(i == WEB_ID for i, _ in f))
            assert at.server.revoked == 3

    with caplog.at_level(logging.WARNING, logger="coxswain.shell.discovery"):
        run(main)
    assert lines(caplog, "grant") == [f"discovery: {WEB_ID.uri} lost the grant of scope team/web"]
