"""Several proxy processes sharing the listeners (ARCHITECTURE §6, issue 5 item 9).

``coxswain proxy --workers N`` (N > 1) runs :func:`supervise`: N worker processes, each the
ordinary single-process proxy started with the internal flag ``--worker-of-supervisor``, which
binds every listener with ``SO_REUSEPORT`` (:func:`open_reuseport_listeners`) so that the kernel
spreads new connections over the workers. ``--workers 1`` (the default of the command; the
Helm chart sets it to the pod's CPU count) runs the proxy in the process itself, no supervisor.

- A worker that exits while the supervisor is not stopping is started again, after a backoff
  that doubles from 0.1 s to 5 s and resets once a worker has run for 30 s.
- SIGTERM or SIGINT to the supervisor is forwarded to every worker (each drains, see
  :meth:`.Proxy.drain`); the supervisor waits for them, killing any still alive after the
  drain timeout plus a margin, and then returns so that the process exits 0.
- **The admin port** is bound by every worker with ``SO_REUSEPORT`` as well: a probe reaches
  one worker, ``/readyz`` answers for that worker, and ``/metrics`` shows that worker's
  counters. Summing across workers needs a scrape per worker (or prometheus_client's
  multiprocess mode), which is not done yet.
"""

from __future__ import annotations

import logging
import signal
import socket
from typing import TYPE_CHECKING, Final

import trio

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["open_reuseport_listeners", "supervise"]

BACKOFF_MIN: Final = 0.1
BACKOFF_MAX: Final = 5.0
HEALTHY_RUN: Final = 30.0
KILL_MARGIN: Final = 5.0

log = logging.getLogger("coxswain.workers")


async def open_reuseport_listeners(
    port: int, *, host: str, backlog: int = 1024
) -> list[trio.SocketListener]:
    """TCP listeners on every address of ``host`` with SO_REUSEADDR and SO_REUSEPORT set.

    ``trio.open_tcp_listeners`` does not set SO_REUSEPORT, so the sockets are made here.
    """
    infos = await trio.socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    listeners: list[trio.SocketListener] = []
    try:
        for family, kind, proto, _, address in infos:
            sock = trio.socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                await sock.bind(address)
                sock.listen(backlog)
            except BaseException:
                sock.close()
                raise
            listeners.append(trio.SocketListener(sock))
    except BaseException:
        for listener in listeners:
            listener.socket.close()
        raise
    return listeners


async def supervise(command: Sequence[str], workers: int, *, drain_timeout: float) -> None:
    """Run ``workers`` copies of ``command`` until SIGTERM or SIGINT, restarting any that
    dies; then forward the signal and wait for them all."""
    stopping = trio.Event()
    running: dict[int, trio.Process] = {}

    async def keep(slot: int) -> None:
        backoff = BACKOFF_MIN
        while not stopping.is_set():
            started = trio.current_time()
            process = await trio.lowlevel.open_process(list(command))
            running[slot] = process
            log.info("worker %d started: pid %d", slot, process.pid)
            if stopping.is_set():  # the signal came while it was starting
                process.send_signal(signal.SIGTERM)
            code = await process.wait()
            del running[slot]
            if stopping.is_set():
                log.info("worker %d (pid %d) stopped: %s", slot, process.pid, code)
                return
            if trio.current_time() - started > HEALTHY_RUN:
                backoff = BACKOFF_MIN
            log.warning(
                "worker %d (pid %d) exited: %s; restarting in %s s",
                slot,
                process.pid,
                code,
                backoff,
            )
            with trio.move_on_after(backoff):
                await stopping.wait()
            backoff = min(backoff * 2, BACKOFF_MAX)

    async def kill_late(watchdog: trio.CancelScope) -> None:
        with watchdog:
            await stopping.wait()
            await trio.sleep(drain_timeout + KILL_MARGIN)
            for process in running.values():
                log.warning("worker pid %d did not stop: killed", process.pid)
                process.kill()

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as outer:
            watchdog = trio.CancelScope()
            outer.start_soon(kill_late, watchdog)
            async with trio.open_nursery() as nursery:  # ends once every keep() has returned
                for slot in range(workers):
                    nursery.start_soon(keep, slot)
                async for number in signals:
                    log.info("%s: stopping %d workers", signal.Signals(number).name, len(running))
                    stopping.set()
                    for process in running.values():
                        process.send_signal(signal.SIGTERM)
                    break
            watchdog.cancel()
