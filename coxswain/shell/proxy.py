"""The whole ``coxswain proxy`` process: proxy, snapshot feed, admin port.

One nursery, three tasks started in readiness order: the proxy's connection nursery, the feed
of snapshots (:func:`file_feed`: ``--snapshot FILE``, its first load applies the snapshot and
binds the listeners; :func:`discovery_feed`: ``--discovery HOST:PORT``, the controller's gRPC
stream), then the admin port, so that ``/readyz`` can only answer 200 once everything before
it is in place.

:func:`run_until_terminated` is what the command line runs: the same, until SIGTERM or SIGINT,
which start a drain (:meth:`.Proxy.drain`, bounded by ``drain_timeout``) and then end the
process normally, so that it exits 0. SIGHUP re-reads a snapshot file (:mod:`.snapshot_file`);
fed by discovery, the process logs it and carries on.

**Configuration errors** end the process before it serves, and the command exits 2 with the
message (coxswain/cli/run.py): a snapshot file that cannot be used (:class:`.SnapshotLoadError`);
a port of the file's first snapshot, or the admin port, that cannot be listened on
(:class:`.ListenError`); discovery TLS files that are not a certificate, its key and a CA
(``ValueError`` from :func:`discovery_feed`); the discovery server refusing the proxy's
identity (:class:`.DiscoveryRefusedError`). A port of a later snapshot, or of any snapshot from
discovery, is tried again until it can be bound instead (the controller reports which ports
are bound): :meth:`.Proxy.apply`. :func:`check_snapshot_file` is the same check of a file,
made by the supervisor of ``--workers N`` before it starts any worker.

A **worker** of ``--workers N`` (``supervised``) talks to its supervisor (:mod:`.workers`)
through its standard streams and its exit status: once serving it writes one JSON line to
stdout, ``{"admin_port": N}``, its own admin port on 127.0.0.1 where the supervisor reads
readiness and metrics; it exits 2 on a configuration error, which the supervisor does not
retry; and it drains and exits when its stdin reaches end of file, which happens when the
supervisor is gone, even killed with SIGKILL: no worker outlives its supervisor.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import ssl
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from coxswain.http1 import codec_build
from coxswain.route.plan import listener_specs
from coxswain.shell.dataplane.listen import check_can_listen, start_admin
from coxswain.shell.dataplane.server import Proxy, ProxyConfig
from coxswain.shell.dataplane.snapshot_file import (
    POLL_INTERVAL,
    hangups,
    load_snapshot,
    watch_snapshot_file,
)
from coxswain.shell.discovery.client import stream_snapshots
from coxswain.shell.discovery.tls import CredentialFiles
from coxswain.shell.loop_lag import probe_loop_lag

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from coxswain.compile.scope import Scope
    from coxswain.compile.snapshot import Snapshot
    from coxswain.shell.discovery.tls import ClientCredentials

__all__ = [
    "DRAIN_TIMEOUT",
    "Feed",
    "ProxyAdmin",
    "check_snapshot_file",
    "discovery_feed",
    "file_feed",
    "run_until_terminated",
    "serve_feed",
    "serve_snapshot_file",
]

DRAIN_TIMEOUT = 10.0
WORKER_ADMIN_BIND = "127.0.0.1"

log = logging.getLogger("coxswain.proxy")


Feed = Callable[[Proxy, trio.TaskStatus[None]], Awaitable[None]]
"""Where snapshots come from: started with the proxy, it applies them until cancelled;
``task_status.started()`` once the first one is applied (a file) or the source is running
(discovery, whose first snapshot may come later: ``/readyz`` says when)."""


class ProxyAdmin:
    """The admin answers of the proxy in this process."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    async def ready(self) -> bool:
        return self.proxy.ready()

    async def exposition(self) -> bytes:
        return self.proxy.metrics.exposition()


def file_feed(path: str, scope: Scope, *, poll_interval: float = POLL_INTERVAL) -> Feed:
    """Snapshots from a file, re-read on SIGHUP and when replaced (:mod:`.snapshot_file`).
    Every port of the first one must be bound at once (:class:`.ListenError` otherwise)."""

    async def feed(proxy: Proxy, task_status: trio.TaskStatus[None]) -> None:
        await watch_snapshot_file(
            path,
            scope,
            lambda snapshot: proxy.apply(snapshot, must_bind=proxy.applies == 0),
            proxy.reject,
            interval=poll_interval,
            task_status=task_status,
        )

    return feed


def discovery_feed(
    address: str,
    scope: Scope,
    *,
    node_id: str,
    credentials: ClientCredentials | CredentialFiles | None,
) -> Feed:
    """Snapshots from the controller's discovery stream (docs/architecture.md, "Discovery,
    `serve` and the controller"). A snapshot of another scope is refused (Nack) and the served
    one stays; after each apply the ports bound are reported, which the controller turns into
    ``Programmed`` status. SIGHUP is logged: there is no file to re-read.

    Raises:
        ValueError: ``credentials`` are files that do not hold a certificate, its key and a CA.
    """
    if isinstance(credentials, CredentialFiles):
        _check_credential_files(credentials)

    async def feed(proxy: Proxy, task_status: trio.TaskStatus[None]) -> None:
        report, reports = trio.open_memory_channel[frozenset[int]](math.inf)

        async def on_snapshot(snapshot: Snapshot) -> None:
            if snapshot.scope != scope:
                message = f"the snapshot is for {snapshot.scope}, but this proxy serves {scope}"
                proxy.reject(message)
                raise ValueError(message)
            await proxy.apply(snapshot)
            report.send_nowait(
                frozenset(port for port, entry in proxy.listeners.items() if entry.bound)
                | proxy.streams.bound_ports()
            )

        with hangups() as signals:
            async with trio.open_nursery() as nursery:
                if signals is not None:
                    nursery.start_soon(_log_hangups, signals)
                await stream_snapshots(
                    address,
                    node_id=node_id,
                    scope=scope,
                    credentials=credentials,
                    on_snapshot=on_snapshot,
                    bound_ports=reports,
                    task_status=task_status,
                )

    return feed


def _check_credential_files(files: CredentialFiles) -> None:
    """Load the files as TLS does (gRPC would otherwise fail every connection, forever).

    Raises:
        ValueError: a file is not PEM of its kind, or the key is not the certificate's.
    """
    cert, key, ca = files.paths
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=ca)
    except ssl.SSLError as err:
        raise ValueError(f"{ca}: not a PEM CA certificate ({err})") from err
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as err:
        raise ValueError(
            f"{cert}, {key}: not a PEM certificate and its private key ({err})"
        ) from err


async def _log_hangups(signals: AsyncIterator[int]) -> None:
    async for _ in signals:
        log.info("SIGHUP: the snapshots come from discovery, there is nothing to re-read")


def check_snapshot_file(path: str, scope: Scope, config: ProxyConfig) -> None:
    """Check that ``path`` is a snapshot of ``scope`` and that every port it needs can be
    listened on; blocking. The supervisor of ``--workers N`` calls it before it starts any
    worker, so that such an error is reported once.

    Raises:
        SnapshotLoadError: the file cannot be used.
        ListenError: a port cannot be listened on.
    """
    specs = listener_specs(
        load_snapshot(path, scope),
        ingress_http_port=config.ingress_http_port,
        ingress_https_port=config.ingress_https_port,
    )
    check_can_listen(config.bind, sorted(specs))


async def serve_snapshot_file(
    path: str,
    scope: Scope,
    config: ProxyConfig,
    *,
    admin_port: int | None,
    admin_bind: str | None = None,
    poll_interval: float = POLL_INTERVAL,
    task_status: trio.TaskStatus[Proxy] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the snapshot at ``path`` until cancelled (:func:`serve_feed`).

    Raises:
        SnapshotLoadError: the first load failed (nothing was served).
        ListenError: a port of the first snapshot, or the admin port, cannot be listened on.
    """
    await serve_feed(
        file_feed(path, scope, poll_interval=poll_interval),
        scope,
        config,
        admin_port=admin_port,
        admin_bind=admin_bind,
        task_status=task_status,
    )


async def serve_feed(
    feed: Feed,
    scope: Scope,
    config: ProxyConfig,
    *,
    admin_port: int | None,
    admin_bind: str | None = None,
    task_status: trio.TaskStatus[Proxy] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the snapshots of ``feed`` until cancelled; never returns. The admin port is bound
    on ``admin_bind`` (default: the proxy's address); ``proxy.admin_port`` is the port bound.

    Raises:
        ListenError: the admin port cannot be listened on.
    """
    proxy = Proxy(config)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(probe_loop_lag, proxy.metrics.loop_lag)
        await nursery.start(proxy.serve)
        await nursery.start(feed, proxy)
        if admin_port is not None:
            proxy.admin_port = await start_admin(
                nursery, ProxyAdmin(proxy), bind=admin_bind or config.bind, port=admin_port
            )
        log.info(
            "serving %s on %s, admin port %s, HTTP/1.1 codec %s (%s)",
            scope,
            sorted(proxy.listeners),
            proxy.admin_port if proxy.admin_port is not None else "off",
            config.codec,
            codec_build(),
        )
        task_status.started(proxy)


async def run_until_terminated(
    feed: Feed,
    scope: Scope,
    config: ProxyConfig,
    *,
    admin_port: int | None,
    drain_timeout: float = DRAIN_TIMEOUT,
    supervised: bool = False,
) -> None:
    """Serve as :func:`serve_feed` until SIGTERM or SIGINT (or, ``supervised``, the
    supervisor's end), then drain and return.

    Raises:
        SnapshotLoadError: the first load of a snapshot file failed (nothing was served).
        ListenError: a port of a file's first snapshot, or the admin port, cannot be listened
            on.
        DiscoveryRefusedError: the discovery server refused this proxy's subscription.
    """
    stop = trio.Event()
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            proxy: Proxy = await nursery.start(
                lambda task_status: serve_feed(
                    feed,
                    scope,
                    config,
                    admin_port=0 if supervised else admin_port,
                    admin_bind=WORKER_ADMIN_BIND if supervised else None,
                    task_status=task_status,
                )
            )

            async def on_signal() -> None:
                async for number in signals:
                    log.info("%s: draining", signal.Signals(number).name)
                    stop.set()
                    return

            nursery.start_soon(on_signal)
            if supervised:
                sys.stdout.write(json.dumps({"admin_port": proxy.admin_port}) + "\n")
                sys.stdout.flush()
                nursery.start_soon(_until_supervisor_gone, stop)
            await stop.wait()
            await proxy.drain(drain_timeout)
            nursery.cancel_scope.cancel()


async def _until_supervisor_gone(stop: trio.Event) -> None:
    """Set ``stop`` at end of file on stdin: the supervisor holds the other end of the pipe."""
    stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    async with stdin:
        while await stdin.receive_some(4096):
            pass
    log.warning("the supervisor is gone: draining")
    stop.set()
