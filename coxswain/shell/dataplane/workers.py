"""The supervisor of ``coxswain proxy --workers N``: proxy processes sharing the ports.

``coxswain proxy --workers N`` (N > 1) runs :func:`supervise`: N worker processes, each the
ordinary single-process proxy started with the internal flag ``--worker-of-supervisor``, which
binds every listener with ``SO_REUSEPORT`` (:func:`.open_reuseport_listeners`) so that the
kernel spreads new connections over the workers. ``--workers 1`` runs the proxy in the process
itself, no supervisor. docs/architecture.md ("The proxy process and its workers") says why.

- **Before any worker starts** the command checks what it can (``coxswain proxy``'s handler in
  coxswain/cli/proxy.py): the snapshot file is readable, a snapshot, of the proxy's scope; every
  port it needs can be listened on (:func:`.check_can_listen`); the discovery TLS files hold a
  certificate, its key and a CA. :func:`supervise` then binds its own admin port
  (:class:`.ListenError` if it cannot). A failure is reported once and the command exits 2.
- **Start-up.** A worker reports on stdout, once serving, the port of its own admin server on
  127.0.0.1 (:mod:`coxswain.shell.proxy`).
- **A worker's exit status** tells a configuration error from a crash. ``CONFIGURATION_ERROR``
  (2, the command's own status for input it cannot use, coxswain/cli/run.py) is a problem the
  worker found and printed itself: a snapshot file that went bad or a port taken since the
  check, the discovery server refusing the proxy's identity. Starting it again cannot help,
  so the supervisor stops every worker and :func:`supervise` returns 2 at once. Any other end
  is a crash: the worker is started again after a backoff that doubles from 0.1 s to 5 s and
  resets once a worker has run for 30 s. A slot whose worker crashed ``STARTUP_ATTEMPTS``
  times in a row before reporting makes the supervisor give up and return that status (1 for
  a signal), so that the pod's container restarts with the error in its log rather than
  looping silently.
- **Identity.** Each worker gets its slot in ``COXSWAIN_WORKER_SLOT``; a worker fed by
  discovery subscribes as ``<node-id>-<slot>``, so the controller's fleet sees every stream.
- **SIGHUP** is forwarded to every worker, each of which re-reads its snapshot file as the
  single process does (:mod:`.snapshot_file`). A worker that has not reported yet gets it as
  soon as it reports: by then it handles SIGHUP, which would end it before.
- **SIGTERM or SIGINT** is forwarded to every worker (each drains, see :meth:`.Proxy.drain`);
  the supervisor waits for them, killing any still alive after the drain timeout plus a
  margin, and returns 0. Each worker's stdin is a pipe from the supervisor: if the supervisor
  dies, even by SIGKILL, every worker reads end of file and drains itself.
- **The admin port** is the supervisor's: ``/readyz`` is 200 while at least one worker is
  ready (the kernel only hands connections to workers with bound sockets, so one ready worker
  serves the pod); ``/metrics`` is the sum of every worker's metrics (:mod:`.metrics_sum`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import trio

from coxswain.http1 import (
    DEFAULT_CODEC,
    Data,
    EndOfMessage,
    ResponseHead,
    ResponseParser,
    codec_named,
    frame_request_head,
)
from coxswain.shell.dataplane.listen import start_admin
from coxswain.shell.dataplane.metrics_sum import sum_expositions
from coxswain.shell.dataplane.wire import EventReader

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

__all__ = ["CONFIGURATION_ERROR", "WORKER_SLOT_ENV", "supervise"]

BACKOFF_MIN: Final = 0.1
BACKOFF_MAX: Final = 5.0
HEALTHY_RUN: Final = 30.0
KILL_MARGIN: Final = 5.0
STARTUP_ATTEMPTS: Final = 3
ASK_TIMEOUT: Final = 5.0
REPORT_LIMIT: Final = 4096
CONFIGURATION_ERROR: Final = 2  # a worker's exit status for a configuration error
WORKER_SLOT_ENV: Final = (
    "COXSWAIN_WORKER_SLOT"  # each worker's slot; its discovery node id ends in it
)

log = logging.getLogger("coxswain.workers")


@dataclass(slots=True)
class _Worker:
    """One slot's current process and what it reported."""

    process: trio.Process
    admin_port: int | None = None
    reload_pending: bool = False  # a SIGHUP came before the worker reported

    def reported(self, admin_port: int | None) -> None:
        """The worker reported its admin port (None: it ended first)."""
        self.admin_port = admin_port
        if admin_port is not None and self.reload_pending:
            self.reload()

    def reload(self) -> None:
        """Forward SIGHUP, or hold it until the worker has reported: it handles SIGHUP by
        then, while before, SIGHUP would end it."""
        self.reload_pending = self.admin_port is None
        if not self.reload_pending:
            self.process.send_signal(signal.SIGHUP)


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
    crashes and forwarding SIGHUP; then forward the signal and wait for them all.

    Returns the exit status: 0 once stopped by a signal; ``CONFIGURATION_ERROR`` as soon as a
    worker exits with it; when a slot's workers kept crashing before they served, the status
    of the last (1 for a signal).

    Raises:
        ListenError: the admin port cannot be listened on (no worker was started).
    """
    stopping = trio.Event()
    fleet = _Fleet()
    failures: list[int] = []

    def stop_all() -> None:
        stopping.set()
        fleet.stopping = True
        for worker in fleet.workers.values():
            worker.process.send_signal(signal.SIGTERM)

    def fail(status: int, reason: str) -> None:
        log.error("%s: stopping every worker", reason)
        failures.append(status)
        stop_all()

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
            worker.reported(await _read_report(process))
            code = await process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    await pipe.aclose()
            del fleet.workers[slot]
            if stopping.is_set():
                log.info("worker %d (pid %d) stopped: %s", slot, process.pid, code)
                return
            if code == CONFIGURATION_ERROR:
                fail(
                    code,
                    f"worker {slot} (pid {process.pid}) exited {code}, a configuration error",
                )
                return
            if worker.admin_port is None:
                failed_starts += 1
                if failed_starts >= STARTUP_ATTEMPTS:
                    fail(
                        code if code > 0 else 1,
                        f"worker {slot} exited {failed_starts} times before serving "
                        f"(last status {code}): giving up",
                    )
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
            name = signal.Signals(number).name
            if number == signal.SIGHUP:
                log.info("%s: %d workers re-read their snapshot", name, len(fleet.workers))
                for worker in fleet.workers.values():
                    worker.reload()
                continue
            log.info("%s: stopping %d workers", name, len(fleet.workers))
            stop_all()
            return

    async def kill_late() -> None:
        await stopping.wait()
        await trio.sleep(drain_timeout + KILL_MARGIN)
        for worker in fleet.workers.values():
            log.warning("worker pid %d did not stop: killed", worker.process.pid)
            worker.process.kill()

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async with trio.open_nursery() as outer:
            outer.start_soon(on_signal, signals)
            outer.start_soon(kill_late)
            if admin_port is not None:
                await start_admin(outer, fleet, bind=admin_bind, port=admin_port)
            async with trio.open_nursery() as nursery:  # ends once every keep() has returned
                for slot in range(workers):
                    nursery.start_soon(keep, slot)
            outer.cancel_scope.cancel()
    return failures[0] if failures else 0
