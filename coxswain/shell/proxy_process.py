"""The whole ``coxswain proxy --snapshot FILE`` process: proxy, snapshot file, admin port.

One nursery, three tasks started in readiness order (STYLE §7): the proxy's connection
nursery, the snapshot file watcher (its first load applies the snapshot and binds the
listeners), then the admin port, so that ``/readyz`` can only answer 200 once everything
before it is in place.

:func:`run_until_terminated` is what the command line runs: the same, until SIGTERM or SIGINT,
which start a drain (:meth:`.Proxy.drain`, bounded by ``drain_timeout``) and then end the
process normally, so that it exits 0.

A **worker** of ``--workers N`` (``supervised``) talks to its supervisor (:mod:`.workers`)
through its standard streams: once serving it writes one JSON line to stdout,
``{"admin_port": N}``, its own admin port on 127.0.0.1 where the supervisor reads readiness
and metrics; and it drains and exits when its stdin reaches end of file, which happens when the
supervisor is gone, even killed with SIGKILL: no worker outlives its supervisor.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING

import trio

from coxswain.shell.admin import ProxyAdmin, serve_admin
from coxswain.shell.proxy import Proxy, ProxyConfig
from coxswain.shell.snapshot_file import POLL_INTERVAL, watch_snapshot_file

if TYPE_CHECKING:
    from coxswain.compile.scope import Scope

__all__ = ["DRAIN_TIMEOUT", "run_until_terminated", "serve_snapshot_file"]

DRAIN_TIMEOUT = 10.0
WORKER_ADMIN_BIND = "127.0.0.1"

log = logging.getLogger("coxswain.proxy")


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
    """Serve the snapshot at ``path`` until cancelled; never returns. The admin port is bound
    on ``admin_bind`` (default: the proxy's address); ``proxy.admin_port`` is the port bound.

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
            proxy.admin_port = await nursery.start(
                lambda task_status: serve_admin(
                    ProxyAdmin(proxy),
                    bind=admin_bind or config.bind,
                    port=admin_port,
                    task_status=task_status,
                )
            )
        log.info(
            "serving %s on %s, admin port %s",
            scope,
            sorted(proxy.listeners),
            proxy.admin_port if proxy.admin_port is not None else "off",
        )
        task_status.started(proxy)


async def run_until_terminated(
    path: str,
    scope: Scope,
    config: ProxyConfig,
    *,
    admin_port: int | None,
    drain_timeout: float = DRAIN_TIMEOUT,
    supervised: bool = False,
) -> None:
    """Serve as :func:`serve_snapshot_file` until SIGTERM or SIGINT (or, ``supervised``, the
    supervisor's end), then drain and return.

    Raises:
        SnapshotLoadError: the first load failed (nothing was served).
    """
    stop = trio.Event()
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            proxy: Proxy = await nursery.start(
                lambda task_status: serve_snapshot_file(
                    path,
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
