"""``coxswain controller``: Coxswain in a cluster (docs/architecture.md, docs/contracts.md).

Start order ("Shell patterns"): the health port; leader election (a standby waits
there, live but not ready); the discovery CA from its Secret; the discovery server; informers
for every resource the cluster serves; then, once every informer has listed, the reconcile
loop. The Gateway API is probed every ``crd_probe_every`` seconds, so installing its CRDs
switches an Ingress-only controller to full mode without a restart.

One reconcile, at once for a lone change, after a burst's changes settle (``debounce``: at
least the first delay after the last change, at most the second after the first;
:mod:`.control.settling`): take the state the informers' events have built
(:mod:`.cluster_view`), compile every scope the changes concern (the publisher's
``compile.memo``; the others are reused, ``coxswain_controller_scopes_total`` counts both) and
publish it, write the status that changed,
apply what ``provision`` desires and delete what it no longer does, and issue missing proxy
certificates. The fleet's reports (bound ports, acked versions) also trigger a reconcile, which
is how ``Programmed`` follows the proxies.

The compile work of a round (analysis, scopes, status, provision) runs in a worker thread
(:mod:`.offload`), so the loop keeps renewing the Lease and answering ``/healthz`` meanwhile.
Each round is handed the keys its events changed (:mod:`.cluster_view`), so the memo finds
what changed at the cost of the change.

Nothing here loses the last good snapshot: a failing API call is logged and retried at the
next round; the discovery server keeps what it last published.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import random
import signal
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

import trio
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from coxswain.compile.scope import SharedPool
from coxswain.shell.backoff import Backoff
from coxswain.shell.control import heap
from coxswain.shell.control.cluster_ca import (
    ProxyCertificates,
    load_or_create_ca,
    stale_proxy_secrets,
)
from coxswain.shell.control.cluster_view import Change, ClusterView
from coxswain.shell.control.gateway_api_release import GatewayApiRelease, read_release
from coxswain.shell.control.informers import (
    GATEWAY_API,
    GATEWAY_API_OPTIONAL,
    INFORMED,
    PROVISIONING,
    Informer,
    Watched,
)
from coxswain.shell.control.kube import ApiFailure, Kube, Resource, Unreachable
from coxswain.shell.control.leader import LeaderElection
from coxswain.shell.control.provisioner import Provisioner
from coxswain.shell.control.settling import Settling
from coxswain.shell.control.status_writer import StatusWriter
from coxswain.shell.dataplane.admin import serve_admin
from coxswain.shell.discovery.server import (
    MAX_STREAMS,
    STREAMS_PER_IDENTITY,
    granted_by,
    open_discovery_server,
)
from coxswain.shell.discovery.tls import ServerCertificate, ServerCredentials
from coxswain.shell.loop_lag import lag_histogram, probe_loop_lag
from coxswain.shell.offload import offload
from coxswain.shell.publisher import Publisher

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pyrsistent.typing import PMap

    from coxswain.compile import CompileConfig, Scope, Snapshot
    from coxswain.shell.discovery.ca import CertificateAuthority
    from coxswain.shell.discovery.fleet import NodeKey, NodeObservation
    from coxswain.shell.discovery.server import DiscoveryServer

__all__ = ["ControllerSettings", "run_controller", "run_until_terminated"]

log = logging.getLogger("coxswain.controller")

LEASE_NAME: Final = "coxswain-controller"
RETRY: Final = (0.5, 30.0)  # after a round with API failures: first and longest delay
RESYNC_EVERY: Final = 300.0  # a round without any change, as informers' resync period
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerSettings:
    """Everything ``coxswain controller`` was asked for."""

    compile: CompileConfig
    identity: str
    discovery_bind: str = "0.0.0.0"
    discovery_port: int = 18000
    discovery_streams_per_identity: int = STREAMS_PER_IDENTITY
    discovery_max_streams: int = MAX_STREAMS
    health_bind: str = "0.0.0.0"
    health_port: int | None = 9902
    debounce: tuple[float, float] = (0.05, 1.0)
    crd_probe_every: float = 30.0
    lease_seconds: int = 15


class _Health:
    """The health port's answers: live while running, ready once leading and serving."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.leading = Gauge(
            "coxswain_controller_leader", "1 when this controller leads", registry=self.registry
        )
        self.reconciles = Counter(
            "coxswain_controller_reconciles", "Reconcile rounds", registry=self.registry
        )
        self.seconds = Histogram(
            "coxswain_controller_reconcile_seconds",
            "Time of one reconcile round",
            registry=self.registry,
        )
        self.scopes = Counter(
            "coxswain_controller_scopes",
            "Scopes a reconcile round asked for: compiled again, or reused (nothing they read "
            "changed, or only endpoints, patched in)",
            ["outcome"],
            registry=self.registry,
        )
        self.reconciling = Gauge(
            "coxswain_controller_reconciling",
            "1 while a reconcile round runs",
            registry=self.registry,
        )
        self.published = Gauge(
            "coxswain_controller_published_scopes",
            "Scopes whose snapshot the last reconcile round handed to the discovery server "
            "(encoded, served to every subscriber from then on)",
            registry=self.registry,
        )
        self.status_writes = Counter(
            "coxswain_controller_status_writes",
            "Status subresources patched",
            registry=self.registry,
        )
        self.status_objects = Gauge(
            "coxswain_controller_status_objects",
            "Objects whose settled status the controller keeps (one per owned object that exists)",
            registry=self.registry,
        )
        self.refused = Counter(
            "coxswain_controller_refused_objects",
            "List items and watch events of the API not decoded (nested too deep, or not JSON); "
            "the last good state of each object is kept",
            ["resource"],
            registry=self.registry,
        )
        self.gateway_api = Gauge(
            "coxswain_controller_gateway_api_info",
            "The Gateway API CRDs installed (value 1): channel and bundle version",
            ["channel", "version"],
            registry=self.registry,
        )
        self.loop_lag = lag_histogram("controller", self.registry)
        self.serving = False

    def release(self, before: GatewayApiRelease, now: GatewayApiRelease) -> None:
        """The installed Gateway API release changed from ``before`` (absent at first)."""
        with contextlib.suppress(KeyError):
            self.gateway_api.remove(before.channel, before.version)
        self.gateway_api.labels(now.channel, now.version).set(1)

    async def ready(self) -> bool:
        return self.serving

    async def exposition(self) -> bytes:
        return generate_latest(self.registry)


async def run_until_terminated(kube: Kube, settings: ControllerSettings) -> None:
    """Run the controller until SIGTERM or SIGINT; then stop, handing the Lease back so that
    a standby leads at once (a rolling update fails over in seconds, not a lease duration)."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_controller, kube, settings)
            async for number in signals:
                log.info("%s: stopping", signal.Signals(number).name)
                nursery.cancel_scope.cancel()
                break


async def run_controller(
    kube: Kube,
    settings: ControllerSettings,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Run the controller until cancelled; ``task_status.started(port)`` with the discovery
    port once this controller leads and serves.

    Raises:
        LostLeadership: the Lease could not be renewed in time.
    """
    health = _Health()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(probe_loop_lag, health.loop_lag)
        if (health_port := settings.health_port) is not None:
            await nursery.start(
                lambda task_status: serve_admin(
                    health,
                    bind=settings.health_bind,
                    port=health_port,
                    task_status=task_status,
                )
            )
        namespace = settings.compile.namespace
        election = LeaderElection(
            kube,
            namespace,
            LEASE_NAME,
            settings.identity,
            lease_seconds=settings.lease_seconds,
            renew_every=settings.lease_seconds / 3,
            retry_every=min(2.0, settings.lease_seconds / 5),
        )
        await nursery.start(election.lead)
        health.leading.set(1)
        ca = await _until_done(lambda: load_or_create_ca(kube, namespace, now=_now()))
        reconciler = _Reconciler(kube, settings, ca, health)
        async with open_discovery_server(
            host=settings.discovery_bind,
            port=settings.discovery_port,
            credentials=ServerCertificate(lambda now: _server_credentials(ca, settings, now)),
            policy=granted_by(lambda: reconciler.publisher.grants),
            streams_per_identity=settings.discovery_streams_per_identity,
            max_streams=settings.discovery_max_streams,
            registry=health.registry,
        ) as server:
            log.info("discovery on %s:%d", settings.discovery_bind, server.port)
            await reconciler.run(server, task_status)
    raise AssertionError("unreachable")  # pragma: no cover - run() never returns


def _server_credentials(
    ca: CertificateAuthority, settings: ControllerSettings, now: datetime.datetime
) -> ServerCredentials:
    """The discovery server's certificate: the Service names proxies dial (the host of
    ``discovery_address`` and its shorter forms) and loopback. Issued again while the
    controller runs, before it expires (:class:`~.discovery.tls.ServerCertificate`)."""
    host = settings.compile.discovery_address.rpartition(":")[0]
    parts = host.split(".")
    names = [".".join(parts[:i]) for i in range(len(parts), 0, -1)] if host else []
    issued = ca.issue_server(hosts=[*dict.fromkeys([*names, "localhost", "127.0.0.1"])], now=now)
    return ServerCredentials(cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=ca.cert_pem)


class _Reconciler:
    """The informers and the reconcile loop of the leading controller."""

    def __init__(
        self, kube: Kube, settings: ControllerSettings, ca: CertificateAuthority, health: _Health
    ) -> None:
        self._kube = kube
        self._settings = settings
        self._health = health
        self.publisher = Publisher(settings.compile)
        self._status = StatusWriter(kube, settings.compile.gateway_controller)
        self._provisioner = Provisioner(kube)
        self._certificates = ProxyCertificates(self._provisioner, ca)
        self._informers: dict[str, Informer] = {}
        self._view = ClusterView()
        self._changes = Settling(*settings.debounce)
        self._gateway_api = False
        self._release = GatewayApiRelease()
        # snapshot version -> the Gateways it serves, with the generation it was compiled from
        self._served: dict[str, dict[str, int]] = {}

    def _poke(self) -> None:
        self._changes.poke()

    def event(self, resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        """``informers.Sink``: fold a watch event in, and poke the loop."""
        self._view.event(resource, key, body)
        self._changes.poke()

    async def page(self, resource: Resource, changes: list[Change]) -> None:
        """``informers.Sink``: fold a list page in (in a worker thread), and poke the loop."""
        await self._view.page(resource, changes)
        self._changes.poke()

    async def run(self, server: DiscoveryServer, task_status: trio.TaskStatus[int]) -> NoReturn:
        async with trio.open_nursery() as nursery:
            # The state the lists build and the first round's memo are millions of long-lived
            # objects: no full collection walks them while they are built (:mod:`.heap`).
            with heap.building():
                await self._start_served(nursery)
                nursery.start_soon(self._probe, nursery)
                nursery.start_soon(self._follow_fleet, server)
                for informer in list(self._informers.values()):
                    await informer.synced.wait()
                failed = await self._reconcile(server)
            self._health.serving = True
            task_status.started(server.port)
            delay = RETRY[0]
            while True:
                wait = delay if failed else RESYNC_EVERY
                await self._changes.settled(wait * random.uniform(0.8, 1.0))
                failed = await self._reconcile(server)
                delay = min(delay * 2, RETRY[1]) if failed else RETRY[0]
        raise AssertionError("unreachable")  # pragma: no cover

    async def _start_served(self, nursery: trio.Nursery) -> None:
        """Start an informer for each resource the cluster serves and none runs for yet; the
        optional Gateway API ones once full mode is on."""
        wanted = self._settings.compile.gateway_api
        served: dict[str, frozenset[str]] = {}  # per group version, asked once per probe
        for watched in (*INFORMED, *(PROVISIONING if wanted else ())):
            if watched.resource.plural not in self._informers and await self._is_served(
                watched.resource, served
            ):
                self._start(nursery, watched)
        if (
            wanted
            and not self._gateway_api
            and all([await self._is_served(w.resource, served) for w in GATEWAY_API])
        ):
            for watched in GATEWAY_API:
                self._start(nursery, watched)
            for watched in GATEWAY_API:
                await self._informers[watched.resource.plural].synced.wait()
            self._gateway_api = True
            log.info("the Gateway API is served: full mode")
            self._poke()
        if self._gateway_api:
            for watched in GATEWAY_API_OPTIONAL:
                if watched.resource.plural not in self._informers and await self._is_served(
                    watched.resource, served
                ):
                    self._start(nursery, watched)
            release = await read_release(self._kube)
            if release is not None and release != self._release:
                log.info(
                    "Gateway API CRDs: %s channel, version %s", release.channel, release.version
                )
                self._health.release(self._release, release)
                self._release = release
                self._poke()

    def _refused(self, resource: Resource) -> None:
        self._health.refused.labels(resource=resource.plural).inc()

    def _start(self, nursery: trio.Nursery, watched: Watched) -> None:
        informer = Informer(self._kube, watched, self, self._refused)
        self._informers[watched.resource.plural] = informer
        nursery.start_soon(informer.run)

    async def _probe(self, nursery: trio.Nursery) -> NoReturn:
        while True:
            await trio.sleep(self._settings.crd_probe_every)
            await self._start_served(nursery)

    async def _is_served(self, resource: Resource, served: dict[str, frozenset[str]]) -> bool:
        """Whether the API serves ``resource``, from its group version's discovery document;
        ``served`` keeps the documents' resource names asked already (none when unreachable)."""
        path = resource.group_path
        if path not in served:
            try:
                answer = await self._kube.request("GET", path)
                names = frozenset(r.get("name") for r in answer.get("resources") or [])
            except ApiFailure:
                names = frozenset()
            except Unreachable as err:
                log.warning("discovery of %s: %s", path, err)
                names = frozenset()
            served[path] = names
        return resource.plural in served[path]

    async def _follow_fleet(self, server: DiscoveryServer) -> NoReturn:
        while True:
            await server.wait_fleet(_other_than(server.fleet))
            self._poke()

    async def _reconcile(self, server: DiscoveryServer) -> bool:
        """One round; True when some API call failed (a retry round follows soon)."""
        with self._health.reconciling.track_inprogress(), heap.quiet():
            async with heap.paced():
                return await self._round(server)

    async def _round(self, server: DiscoveryServer) -> bool:
        started = trio.current_time()
        failures = self._status.failures + self._provisioner.failures
        config = replace(
            self._settings.compile,
            gateway_api=self._settings.compile.gateway_api and self._gateway_api,
            gateway_api_channel=self._release.channel,
        )
        if config == self.publisher.config:
            # the same object: each of the memo's scopes checks its config by identity first
            config = self.publisher.config
        self.publisher.config = config
        base, state, changed = self._view.take()
        memo = self.publisher.memo
        # the collector waits while a small change goes out (``heap.deferred``)
        with heap.deferred(len(changed)):
            await offload(memo.changed, base, state, changed)
            # one cluster-wide analysis for grants, status and provision
            model = await offload(memo.analyse, state, config)
            snapshots = await offload(self.publisher.compile, state, None, model)
            compiled, reused = self.publisher.outcomes
            self._health.scopes.labels(outcome="compiled").inc(compiled)
            self._health.scopes.labels(outcome="reused").inc(reused)
            generations = {g.meta.key.ref: g.meta.generation for g in state.gateways.values()}
            for snapshot in snapshots.values():
                # Versions are content digests: a new generation that compiles to the same
                # snapshot (a Gateway's addresses edited, say) is served by whichever proxy
                # acked it already.
                self._served[snapshot.version] = _served_generations(generations, snapshot)
            # Encoding costs what changed: every resource of every scope at the first round.
            await offload(server.publish_many, snapshots)
            self._health.published.set(len(snapshots))
        fleet = server.fleet
        now = _now()
        desired = await offload(memo.status, state, config, self._programmed(generations, fleet))
        written = await self._status.write(desired, self._view.statuses, now=now)
        self._health.status_writes.inc(written)
        self._health.status_objects.set(self._status.remembered)
        await self._provisioner.reconcile(
            await offload(memo.provision, state, config, self._shared_served(fleet)),
            autoscalers=config.gateway_api,
        )
        await self._certificates.issue(
            sorted(self.publisher.grants), self._view.certificates, now=now
        )
        for key in stale_proxy_secrets(self._view.certificates, set(self.publisher.grants), state):
            await self._provisioner.delete(key)
        self._forget_versions(snapshots, fleet)
        self._health.reconciles.inc()
        self._health.seconds.observe(trio.current_time() - started)
        heap.settle(len(changed))
        return self._status.failures + self._provisioner.failures > failures

    def _programmed(
        self, current: dict[str, int], fleet: PMap[NodeKey, NodeObservation]
    ) -> frozenset[tuple[str, int]]:
        """``(ns/name, port)`` of each Gateway port a connected proxy bound after acking a
        snapshot of the Gateway's ``current`` generation (docs/contracts.md, ``Programmed``)."""
        return frozenset(
            (gateway, port)
            for node in fleet.values()
            if node.connected and node.acked_version
            for gateway, generation in self._served.get(node.acked_version, {}).items()
            if current.get(gateway) == generation
            for port in node.bound_ports
        )

    def _shared_served(self, fleet: PMap[NodeKey, NodeObservation]) -> frozenset[str]:
        """The Gateways some shared proxy has acked a snapshot of."""
        return frozenset().union(
            *(
                frozenset(self._served.get(node.acked_version or "", {}))
                for node in fleet.values()
                if node.connected and isinstance(node.scope, SharedPool)
            )
        )

    def _forget_versions(
        self, snapshots: PMap[Scope, Snapshot], fleet: PMap[NodeKey, NodeObservation]
    ) -> None:
        """Keep the served-Gateway sets of current and acked versions only."""
        keep = {s.version for s in snapshots.values()} | {n.acked_version for n in fleet.values()}
        for version in [v for v in self._served if v not in keep]:
            del self._served[version]


def _other_than(
    before: PMap[NodeKey, NodeObservation],
) -> Callable[[PMap[NodeKey, NodeObservation]], bool]:
    return lambda fleet: fleet is not before


def _served_generations(generations: dict[str, int], snapshot: Snapshot) -> dict[str, int]:
    """``ns/name`` → generation of each Gateway a snapshot serves, as compiled."""
    return {
        health.gateway: generations[health.gateway]
        for health in snapshot.listener_health
        if health.gateway in generations
    }


async def _until_done(make: Callable[[], Awaitable[_T]]) -> _T:
    """Retry an API step with a jittered, growing delay until it succeeds."""
    backoff = Backoff(0.2, 30.0)
    while True:
        try:
            return await make()
        except (ApiFailure, Unreachable) as err:
            log.warning("%s; retrying in %.1f s", err, backoff.delay)
            await backoff.wait()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
