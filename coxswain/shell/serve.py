"""``coxswain serve``: the standalone control plane and a shared proxy in one process.

The cluster is a folder of manifests (:mod:`.manifest_folder`): each time it changes, every
scope is compiled again (:class:`.Publisher`), the shared pool's snapshot is applied to the proxy in
this process, and, with ``--discovery-port``, every scope's snapshot is published to the
discovery server so that proxies elsewhere (more shared ones, dedicated ones) follow the same
folder. Discovery is mutual TLS with the CA of ``--issue-certs DIR`` (:mod:`.cert_folder`),
which also receives a certificate for every proxy identity the manifests grant a scope; only
``--insecure-discovery`` serves it in plaintext.

Order (docs/architecture.md): the discovery server starts first (so its port is known when the first
state is published), then the proxy with the folder as its feed, then the admin port; SIGTERM
or SIGINT drain the proxy (:func:`.run_until_terminated`) and close the server last.

Compiling runs in a worker thread (:mod:`.offload`), through the publisher's memo: only the
files that changed are read and decoded again (:mod:`.folder_state`), every other object stays
the object it was, so the memo reuses what was compiled from it, and the in-process proxy keeps
serving meanwhile.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import trio

from coxswain.compile.scope import SharedPool
from coxswain.shell.discovery.server import granted_by, open_discovery_server
from coxswain.shell.offload import offload
from coxswain.shell.proxy import run_until_terminated
from coxswain.shell.publisher import Publisher
from coxswain.shell.standalone.cert_folder import RENEW_CHECK_INTERVAL, CertificateFolder
from coxswain.shell.standalone.manifest_folder import POLL_INTERVAL, watch_manifests

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile import ClusterState, CompileConfig, Scope, Snapshot
    from coxswain.compile.model.manifests import SourcedBody
    from coxswain.shell.dataplane.server import Proxy, ProxyConfig
    from coxswain.shell.discovery.server import DiscoveryServer
    from coxswain.shell.proxy import Feed

__all__ = ["DiscoverySettings", "ServeSettings", "run_serve"]

log = logging.getLogger("coxswain.serve")


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoverySettings:
    """Where to serve discovery, and with which CA folder (None: plaintext)."""

    host: str
    port: int
    certificates: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """Everything ``coxswain serve`` was asked for."""

    manifests: tuple[str, ...]
    compile: CompileConfig
    proxy: ProxyConfig
    admin_port: int | None
    drain_timeout: float
    discovery: DiscoverySettings | None
    poll_interval: float = POLL_INTERVAL


async def run_serve(settings: ServeSettings) -> None:
    """Serve the folder until SIGTERM or SIGINT, then drain and return.

    Raises:
        LoadError: the first read of the manifests failed.
        OSError, ValueError: the certificate folder cannot be used.
    """
    publisher = Publisher(settings.compile)
    certificates = None
    discovery = settings.discovery
    if discovery is not None and discovery.certificates is not None:
        certificates = CertificateFolder.open(discovery.certificates, now=_now())
    async with contextlib.AsyncExitStack() as stack:
        server = None
        if discovery is not None:
            server = await stack.enter_async_context(
                open_discovery_server(
                    host=discovery.host,
                    port=discovery.port,
                    credentials=certificates.server_certificate(_server_hosts(discovery.host))
                    if certificates is not None
                    else None,
                    policy=granted_by(lambda: publisher.grants),
                    insecure=certificates is None,
                )
            )
            log.info(
                "discovery on %s:%d (%s)",
                discovery.host,
                server.port,
                "plaintext" if certificates is None else f"mutual TLS, CA in {certificates.root}",
            )
        async with trio.open_nursery() as nursery:
            if certificates is not None:
                nursery.start_soon(_renew_proxy_certificates, certificates, publisher)
            await run_until_terminated(
                _folder_feed(settings, publisher, server, certificates),
                SharedPool(),
                settings.proxy,
                admin_port=settings.admin_port,
                drain_timeout=settings.drain_timeout,
            )
            nursery.cancel_scope.cancel()


def _folder_feed(
    settings: ServeSettings,
    publisher: Publisher,
    server: DiscoveryServer | None,
    certificates: CertificateFolder | None,
) -> Feed:
    """The proxy's feed: the folder, compiled for every scope at each change."""

    async def on_state(proxy: Proxy, state: ClusterState, bodies: list[SourcedBody]) -> None:
        snapshots = await offload(publisher.compile, state, bodies)
        if certificates is not None:
            _issue_proxy_certificates(certificates, publisher)
        if server is not None:  # the first publish encodes every resource: seconds at scale
            await offload(_publish, server, snapshots)
        shared = snapshots[SharedPool()]
        await proxy.apply(shared)
        log.info(
            "serving %s: %d scope(s), shared pool on ports %s",
            shared.version[:19],
            len(snapshots),
            sorted(proxy.listeners),
        )

    async def feed(proxy: Proxy, task_status: trio.TaskStatus[None]) -> None:
        await watch_manifests(
            settings.manifests,
            lambda state, bodies: on_state(proxy, state, bodies),
            interval=settings.poll_interval,
            changed=publisher.memo.changed,
            task_status=task_status,
        )

    return feed


def _publish(server: DiscoveryServer, snapshots: Mapping[Scope, Snapshot]) -> None:
    for scope, snapshot in snapshots.items():
        server.publish(scope, snapshot)


def _issue_proxy_certificates(certificates: CertificateFolder, publisher: Publisher) -> None:
    """A certificate for every identity the manifests grant a scope, unless it has a good one.

    Raises:
        OSError: the certificate folder cannot be written.
    """
    for folder in certificates.issue_proxies(publisher.grants, now=_now()):
        log.info("proxy certificate written to %s", folder)


async def _renew_proxy_certificates(
    certificates: CertificateFolder, publisher: Publisher, interval: float = RENEW_CHECK_INTERVAL
) -> NoReturn:
    """Certificates fall due with time, not only when the manifests change: check every
    ``interval`` seconds (a folder that cannot be written now is tried again next time)."""
    while True:
        await trio.sleep(interval)
        try:
            _issue_proxy_certificates(certificates, publisher)
        except OSError as err:
            log.warning("renewing proxy certificates in %s failed: %s", certificates.root, err)


def _server_hosts(bind: str) -> list[str]:
    """The names the discovery server's certificate answers to: the bound address (unless a
    wildcard), this host's name, and loopback."""
    hosts = [] if bind in ("0.0.0.0", "::") else [bind]
    return list(dict.fromkeys([*hosts, "localhost", "127.0.0.1", socket.gethostname()]))


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
