"""The whole ``coxswain proxy --snapshot FILE`` process: proxy, snapshot file, admin port.

One nursery, three tasks started in readiness order (STYLE §7): the proxy's connection
nursery, the snapshot file watcher (its first load applies the snapshot and binds the
listeners), then the admin port, so that ``/readyz`` can only answer 200 once everything
before it is in place.

:func:`run_until_terminated` is what the command line runs: the same, until SIGTERM or SIGINT,
which start a drain (:meth:`.Proxy.drain`, bounded by ``drain_timeout``) and then end the
process normally, so that it exits 0.
"""

from __future__ import annotations

import logging
import signal
from typing import TYPE_CHECKING

import trio

from coxswain.shell.admin import serve_admin
from coxswain.shell.proxy import Proxy, ProxyConfig
from coxswain.shell.snapshot_file import POLL_INTERVAL, watch_snapshot_file

if TYPE_CHECKING:
    from coxswain.compile.scope import Scope

__all__ = ["DRAIN_TIMEOUT", "run_until_terminated", "serve_snapshot_file"]

DRAIN_TIMEOUT = 10.0

log = logging.getLogger("coxswain.proxy")


async def serve_snapshot_file(
    path: str,
    scope: Scope,
    config: ProxyConfig,
    *,
    admin_port: int | None,
    poll_interval: float = POLL_INTERVAL,
    task_status: trio.TaskStatus[Proxy] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the snapshot at ``path`` until cancelled; never returns.

    Raises:
        SnapshotLoadError: the first load failed (nothing was served).
    """
    proxy = Proxy(config)
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.serve)
        await nursery.start(
            lambda task_status: watch_snapshot_file(
                path,
                scope,
                proxy.apply,
                proxy.reject,
                interval=poll_interval,
                task_status=task_status,
            )
        )
        if admin_port is not None:
            await nursery.start(
                lambda task_status: serve_admin(
                    proxy,
                    bind=config.bind,
                    port=admin_port,
                    reuse_port=config.reuse_port,
                    task_status=task_status,
                )
            )
        log.info(
            "serving %s on %s, admin port %s",
            scope,
            sorted(proxy.listeners),
            admin_port if admin_port is not None else "off",
        )
        task_status.started(proxy)


async def run_until_terminated(
    path: str,
    scope: Scope,
    config: ProxyConfig,
    *,
    admin_port: int | None,
    drain_timeout: float = DRAIN_TIMEOUT,
) -> None:
    """Serve as :func:`serve_snapshot_file` until SIGTERM or SIGINT, then drain and return.

    Raises:
        SnapshotLoadError: the first load failed (nothing was served).
    """
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            proxy: Proxy = await nursery.start(
                lambda task_status: serve_snapshot_file(
                    path, scope, config, admin_port=admin_port, task_status=task_status
                )
            )
            async for number in signals:
                log.info("%s: draining", signal.Signals(number).name)
                break
            await proxy.drain(drain_timeout)
            nursery.cancel_scope.cancel()
