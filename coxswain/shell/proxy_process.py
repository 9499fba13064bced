"""The whole ``coxswain proxy --snapshot FILE`` process: proxy, snapshot file, admin port.

One nursery, three tasks started in readiness order (STYLE §7): the proxy's connection
nursery, the snapshot file watcher (its first load applies the snapshot and binds the
listeners), then the admin port, so that ``/readyz`` can only answer 200 once everything
before it is in place.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from coxswain.shell.admin import serve_admin
from coxswain.shell.proxy import Proxy, ProxyConfig
from coxswain.shell.snapshot_file import POLL_INTERVAL, watch_snapshot_file

if TYPE_CHECKING:
    from coxswain.compile.scope import Scope

__all__ = ["serve_snapshot_file"]

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
                    proxy, bind=config.bind, port=admin_port, task_status=task_status
                )
            )
        log.info(
            "serving %s on %s, admin port %s",
            scope,
            sorted(proxy.listeners),
            admin_port if admin_port is not None else "off",
        )
        task_status.started(proxy)
