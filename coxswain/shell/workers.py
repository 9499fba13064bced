"""Several proxy processes sharing the listeners (ARCHITECTURE §6, issue 5 item 9).

``coxswain proxy --workers N`` (N > 1) runs :func:`supervise`: N worker processes, each the
ordinary single-process proxy started with the internal flag ``--worker-of-supervisor``, which
binds every listener with ``SO_REUSEPORT`` (:func:`open_reuseport_listeners`) so that the kernel
spreads new connections over the workers. ``--workers 1`` runs the proxy in the process itself,
no supervisor.

- **Start-up.** A worker reports on stdout, once serving, the port of its own admin server on
  127.0.0.1 (:mod:`.proxy_process`). A worker that exits before reporting failed to start (an
  unreadable snapshot, say); after ``STARTUP_ATTEMPTS`` such failures in a row the supervisor
  gives up: it stops the other workers and :func:`supervise` returns the worker's exit
  status (2 for an unusable snapshot, as the single process), so that the pod's
  container restarts with its error in the log rather than looping silently.
- **Identity.** Each worker gets its slot in ``COXSWAIN_WORKER_SLOT``; a worker fed by
  discovery subscribes as ``<node-id>-<slot>``, so the controller's fleet sees every stream.
- **Restarts.** A worker that exits after it started is started again, after a backoff that
  doubles from 0.1 s to 5 s and resets once a worker has run for 30 s.
- **Stopping.** SIGTERM or SIGINT to the supervisor is forwarded to every worker (each drains,
  see :meth:`.Proxy.drain`); the supervisor waits for them, killing any still alive after the
  drain timeout plus a margin. Each worker's stdin is a pipe from the supervisor: if the
  supervisor dies, even by SIGKILL, every worker reads end of file and drains itself.
- **The admin port** is the supervisor's: ``/readyz`` is 200 while at least one worker is
  ready (the kernel only hands connections to workers with bound sockets, so one ready worker
  serves the pod); ``/metrics`` is the sum of every worker's metrics (:mod:`.metrics_sum`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import trio

from coxswain.shell.admin import serve_admin
from coxswain.shell.http1 import (
    DEFAULT_CODEC,
    Data,
    EndOfMessage,
    ResponseHead,
    ResponseParser,
    codec_named,
    frame_request_head,
)
from coxswain.shell.metrics_sum import sum_expositions
from coxswain.shell.wire import EventReader

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

__all__ = ["WORKER_SLOT_ENV", "open_reuseport_listeners", "supervise"]

BACKOFF_MIN: Final = 0.1
BACKOFF_MAX: Final = 5.0
HEALTHY_RUN: Final = 30.0
KILL_MARGIN: Final = 5.0
STARTUP_ATTEMPTS: Final = 3
ASK_TIMEOUT: Final = 5.0
REPORT_LIMIT: Final = 4096
WORKER_SLOT_ENV: Final = (
    "COXSWAIN_WORKER_SLOT"  # each worker's slot; its discovery node id ends in it
)

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


@dataclass(slots=True)
class _Worker:
    """One slot's current process and what it reported."""

    process: trio.Process
    admin_port: int | None = None


@dataclass(slots=True)
class _Fleet:
    """The running workers, as the supervisor's admin port sees them."""

    workers: dict[int, _Worker] = field(default_factory=dict)
    stopping: bool = False

    async def ready(self) -> bool:
        if self.stopping:
            return False
        answers = await self._ask_all(b"/readyz")
        return any(status == 200 for status, _ in answers)

    async def exposition(self) -> bytes:
        answers = await self._ask_all(b"/metrics")
        return sum_expositions(body.decode("utf-8") for status, body in answers if status == 200)

    async def _ask_all(self, path: bytes) -> list[tuple[int, bytes]]:
        ports = [w.admin_port for w in self.workers.values() if w.admin_port is not None]
        answers: list[tuple[int, bytes]] = []

        async def ask(port: int) -> None:
            with trio.move_on_after(ASK_TIMEOUT):
                try:
                    answers.append(await _get(port, path))
                except (OSError, trio.BrokenResourceError, ValueError) as err:
                    log.warning("worker admin port %d: %s", port, err)

        async with trio.open_nursery() as nursery:
            for port in ports:
                nursery.start_soon(ask, port)
        return answers


async def _get(port: int, path: bytes) -> tuple[int, bytes]:
    """GET ``path`` from a worker's admin port: its status and body."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(
            frame_request_head(
                method=b"GET",
                target=path,
                headers=((b"host", b"127.0.0.1"), (b"connection", b"close")),
            )
        )
        parser = ResponseParser(codec_named(DEFAULT_CODEC))
        parser.expect_response(b"GET")
        reader = EventReader(stream, parser)
        status = 0
        body = bytearray()
        while True:
            event = await reader.next()
            if type(event) is ResponseHead:
                status = event.status
            elif type(event) is Data:
                body += event.data
            elif type(event) is EndOfMessage:
                return status, bytes(body)
            else:
                raise ValueError(f"unexpected {event!r}")


async def _read_report(process: trio.Process) -> int | None:
    """The admin port a worker reports on stdout once serving; None if it ended first."""
    assert process.stdout is not None
    line = b""
    while b"\n" not in line and len(line) < REPORT_LIMIT:
        data = await process.stdout.receive_some(REPORT_LIMIT)
        if not data:
            return None
        line += data
    try:
        port = json.loads(line.split(b"\n", 1)[0])["admin_port"]
    except (ValueError, KeyError, TypeError):
        log.error("a worker reported %r, not its admin port", line[:200])
        return None
    return port if isinstance(port, int) else None


async def supervise(
    command: Sequence[str],
    workers: int,
    *,
    drain_timeout: float,
    admin_bind: str,
    admin_port: int | None,
) -> int:
    """Run ``workers`` copies of ``command`` until SIGTERM or SIGINT, restarting any that
    dies; then forward the signal and wait for them all. Returns the exit status: 0, or
    when workers kept failing to start, the status of the last failure (1 for a signal)."""
    stopping = trio.Event()
    fleet = _Fleet()
    gave_up: list[tuple[str, int]] = []

    def stop_all() -> None:
        stopping.set()
        fleet.stopping = True
        for worker in fleet.workers.values():
            worker.process.send_signal(signal.SIGTERM)

    async def keep(slot: int) -> None:
        backoff = BACKOFF_MIN
        failed_starts = 0
        while not stopping.is_set():
            started = trio.current_time()
            process = await trio.lowlevel.open_process(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, WORKER_SLOT_ENV: str(slot)},
            )
            worker = fleet.workers[slot] = _Worker(process)
            log.info("worker %d started: pid %d", slot, process.pid)
            if stopping.is_set():  # the signal came while it was starting
                process.send_signal(signal.SIGTERM)
            worker.admin_port = await _read_report(process)
            code = await process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    await pipe.aclose()
            del fleet.workers[slot]
            if stopping.is_set():
                log.info("worker %d (pid %d) stopped: %s", slot, process.pid, code)
                return
            if worker.admin_port is None:
                failed_starts += 1
                if failed_starts >= STARTUP_ATTEMPTS:
                    gave_up.append(
                        (f"worker {slot} exited {failed_starts} times before serving", code)
                    )
                    stop_all()
                    return
            else:
                failed_starts = 0
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

    async def on_signal(signals: AsyncIterator[int]) -> None:
        async for number in signals:
            log.info("%s: stopping %d workers", signal.Signals(number).name, len(fleet.workers))
            stop_all()
            return

    async def kill_late() -> None:
        await stopping.wait()
        await trio.sleep(drain_timeout + KILL_MARGIN)
        for worker in fleet.workers.values():
            log.warning("worker pid %d did not stop: killed", worker.process.pid)
            worker.process.kill()

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as outer:
            outer.start_soon(on_signal, signals)
            outer.start_soon(kill_late)
            if admin_port is not None:
                await outer.start(
                    lambda task_status: serve_admin(
                        fleet, bind=admin_bind, port=admin_port, task_status=task_status
                    )
                )
            async with trio.open_nursery() as nursery:  # ends once every keep() has returned
                for slot in range(workers):
                    nursery.start_soon(keep, slot)
            outer.cancel_scope.cancel()
    for reason, code in gave_up:
        log.error("giving up: %s (last status %s)", reason, code)
    return next((code if code > 0 else 1 for _, code in gave_up), 0)
