"""The subprocesses a benchmark starts and how it waits on them: free ports on 127.0.0.1, a
``Fleet`` of processes with their logs (checked alive while the run waits, stopped on the way
out whatever ends the run), polling with a deadline, and plain HTTP GETs.

Shared by the benchmarks that run Coxswain as it runs in production, as subprocesses
(``proxy.py``, ``controller.py``). Kept apart from ``harness.py`` because the compile
benchmarks, which import that, measure their process's memory, and ``http.client`` alone adds
megabytes to it. Standard library only.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Self, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

T = TypeVar("T")

STOP_TIMEOUT_S = 5.0  # after the first signal, before SIGKILL


def free_port() -> int:
    """A TCP port nothing listens on right now on 127.0.0.1 (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Fleet:
    """The subprocesses a run starts, each logging to ``<folder>/<name>.log``, stopped
    together when the ``with`` block ends, newest first, whatever ended it.

    Each runs in a session of its own, so that Ctrl-C in the terminal reaches only the
    script, which then stops them in order; inside the block SIGTERM unwinds the script as
    Ctrl-C does. Stopping sends a first signal (SIGTERM unless told otherwise: nginx stops,
    Coxswain drains and its supervisor stops its workers), and SIGKILL to the whole process
    group for whatever is still alive ``STOP_TIMEOUT_S`` later (or as ``start`` was told).
    """

    def __init__(self, folder: Path, first_signal: signal.Signals = signal.SIGTERM) -> None:
        self.folder = folder
        self.first_signal = first_signal
        self._running: list[subprocess.Popen[bytes]] = []
        self._names: dict[int, str] = {}
        self._stops: dict[int, tuple[signal.Signals, float]] = {}
        self._previous: Any = None

    def __enter__(self) -> Self:
        self._previous = signal.signal(signal.SIGTERM, _unwind)
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            for process in reversed(list(self._running)):
                self.stop(process)
        finally:
            signal.signal(signal.SIGTERM, self._previous)

    def start(
        self,
        name: str,
        command: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stop: tuple[signal.Signals, float] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``command`` in ``cwd`` (with ``env`` added to this environment), its output
        to the log ``name.log`` (appended to, when a name comes back). ``stop``: the first
        signal that stops it and how long it then has, if not the fleet's."""
        with self.log(name).open("ab") as out:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=cwd,
                env=None if env is None else {**os.environ, **env},
            )
        self._running.append(process)
        self._names[process.pid] = name
        self._stops[process.pid] = stop or (self.first_signal, STOP_TIMEOUT_S)
        return process

    def log(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def tail(self, process: subprocess.Popen[bytes], size: int = 3000) -> str:
        """The end of ``process``'s log."""
        try:
            data = self.log(self._names[process.pid]).read_bytes()
        except OSError:
            return "(no log)"
        return data[-size:].decode(errors="replace")

    def tails(self) -> str:
        """The end of every running process's log."""
        return "\n".join(
            f"--- {self._names[process.pid]} ---\n{self.tail(process, 2000)}"
            for process in self._running
        )

    def check(self) -> None:
        """Stop the run, with the log's tail, if a process still meant to run has exited."""
        for process in self._running:
            if process.poll() is not None:
                raise SystemExit(
                    f"{self._names[process.pid]} exited with {process.returncode}:\n"
                    f"{self.tail(process)}"
                )

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        """Stop one process (its first signal, then SIGKILL once its time is up) and
        everything left in its process group."""
        first, grace = self._stops[process.pid]
        if process.poll() is None:
            process.send_signal(first)
            with suppress(subprocess.TimeoutExpired):
                process.wait(grace)
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # workers left behind, if any
        process.wait()
        if process in self._running:
            self._running.remove(process)


def _unwind(signum: int, frame: object) -> None:
    """SIGTERM (a CI time-out, ``kill``) unwinds the script as Ctrl-C does, so that every
    ``finally`` and ``Fleet`` block on the way out runs."""
    raise SystemExit(128 + signum)


def wait_until(
    check: Callable[[], T | None],
    what: str,
    *,
    timeout: float,
    every: float,
    fleet: Fleet | None = None,
) -> T:
    """Poll ``check`` every ``every`` seconds until it returns something truthy, and return
    that; stop the run after ``timeout`` seconds, or as soon as a process of ``fleet`` has
    exited (with its log's tail)."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if fleet is not None:
            fleet.check()
        if time.monotonic() > deadline:
            logs = fleet.tails() if fleet is not None else ""
            raise SystemExit(f"timed out after {timeout:g} s waiting for {what}\n{logs}")
        time.sleep(every)
    return value


def http_get(
    address: str, port: int, path: str, host: str | None = None, timeout: float = 10.0
) -> tuple[int, bytes]:
    """``GET path`` on a fresh connection (with ``Host: host`` when given): the status and
    the body. Raises OSError when the server cannot be reached or does not answer in time."""
    connection = http.client.HTTPConnection(address, port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Host": host} if host else {})
        response = connection.getresponse()
        return response.status, response.read()
    except http.client.HTTPException as error:
        raise OSError(f"GET {path} on {address}:{port}: {error!r}") from error
    finally:
        connection.close()
