"""A TCP connection as a trio stream, without trio's per-call wrappers: the proxy's sockets.

``trio.SocketStream`` wraps every call in a conflict detector and a generator context manager
that translates errors, and ``trio.socket`` adds a cancellation check and a scheduling yield
around every system call; they stood out in the proxy's profiles (docs/benchmarks.md,
"Proxy"), and the step that replaced them with this class and the per-read cancel scopes with
one per exchange took user CPU per small request from 204 to 184 µs in its A/B (same document,
"After the request-path rework"). :class:`Connection` owns the standard-library socket (taken
over from trio's with ``detach``) and calls it directly, waiting with
``trio.lowlevel.wait_readable``/``wait_writable`` only when the kernel says it would block.

Differences from ``trio.SocketStream``, on purpose:

- A call does not check for cancellation before its system call; one that completes without
  waiting still yields to the scheduler once afterwards (without noticing a cancellation, as
  trio's socket calls do). That yield matters: under load a connection's bytes are often
  already there, and a task that never waited would serve request after request, or a whole
  large body, while the other connections starve. Measured without it: p99 over a second for
  1 MB bodies at 64 connections (``bench/proxy.py`` at ed40f6c), and *more* CPU per small
  request (149 µs against 104 µs of user time in the A/B of docs/benchmarks.md, "After the
  request-path rework": the loop ran with fewer ready tasks per turn). Removing only the
  send's yield, or only the receive's, was no better (132 against 98 µs per request; p99 up in
  8 rounds of 10: same document, "Measuring on this machine"): after a send the yield gives the
  peer time to answer, so 97% of receives find their bytes at once.
- A receive that finds nothing yields once and tries again before it waits: an upstream
  usually answers within the turn the other connections take, and the retry saves the
  readiness wait's registration and epoll round trip. Measured by the same A/B (1 worker,
  wrk -c32, 4 alternated rounds): 7,310 req/s against 6,620 and 108 µs of user time per
  request against 115; a second retry made it worse (6,110 req/s).
- No conflict detection: each connection is used by one task at a time by construction (the
  only concurrent use, a WebSocket tunnel, sends and receives from two tasks, which is allowed).

Errors follow the trio stream contract: ``ClosedResourceError`` after our own close,
``BrokenResourceError`` for a connection the peer broke (reset, broken pipe).
"""

from __future__ import annotations

import errno
import socket as stdlib_socket
from typing import Final

import trio

__all__ = ["Connection"]

_DEFAULT_RECEIVE: Final = 64 * 1024


class Connection(trio.abc.HalfCloseableStream):
    """One connected TCP socket (see the module docstring)."""

    __slots__ = ("_closed", "socket")

    def __init__(self, sock: stdlib_socket.socket) -> None:
        sock.setblocking(False)
        self.socket = sock
        self._closed = False

    @classmethod
    def take(cls, stream: trio.SocketStream) -> Connection:
        """Take over the socket of ``stream``, whose options (``TCP_NODELAY``) it keeps;
        ``stream`` must not be used afterwards."""
        return cls(stdlib_socket.socket(fileno=stream.socket.detach()))

    def _broken(self, err: OSError) -> trio.BrokenResourceError | trio.ClosedResourceError:
        if self._closed or err.errno == errno.EBADF:
            return trio.ClosedResourceError("the connection was closed")
        return trio.BrokenResourceError(f"the connection broke: {err}")

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Send every byte of ``data``, waiting while the kernel's buffer is full."""
        sock = self.socket
        if self._closed:
            raise trio.ClosedResourceError("the connection was closed")
        view = memoryview(data)
        waited = False
        while view:
            try:
                sent = sock.send(view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(sock)
                waited = True
                continue
            except OSError as err:
                raise self._broken(err) from err
            view = view[sent:]
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()  # let the others run: see above

    async def wait_send_all_might_not_block(self) -> None:
        """Wait until the socket accepts bytes."""
        if self._closed:
            raise trio.ClosedResourceError("the connection was closed")
        await trio.lowlevel.wait_writable(self.socket)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """The bytes available (at most ``max_bytes``), waiting for some; ``b""`` at the end."""
        sock = self.socket
        size = _DEFAULT_RECEIVE if max_bytes is None else max_bytes
        waited = yielded = False
        while True:
            if self._closed:
                raise trio.ClosedResourceError("the connection was closed")
            try:
                data = sock.recv(size)
            except BlockingIOError:
                if not yielded:  # one turn of the others first: the peer may answer meanwhile
                    yielded = True
                    await trio.lowlevel.cancel_shielded_checkpoint()
                    continue
                await trio.lowlevel.wait_readable(sock)
                waited = True
                continue
            except OSError as err:
                raise self._broken(err) from err
            if not waited:
                await trio.lowlevel.cancel_shielded_checkpoint()  # let the others run: see above
            return data

    async def send_eof(self) -> None:
        """Shut down the sending half (the peer reads the end of the stream)."""
        if self._closed:
            raise trio.ClosedResourceError("the connection was closed")
        await trio.lowlevel.checkpoint()
        try:
            self.socket.shutdown(stdlib_socket.SHUT_WR)
        except OSError as err:
            raise self._broken(err) from err

    def close(self) -> None:
        """Close the socket now; a task waiting on it gets ``ClosedResourceError``."""
        if not self._closed:
            self._closed = True
            trio.lowlevel.notify_closing(self.socket)
            self.socket.close()

    async def aclose(self) -> None:
        """Close the socket (a checkpoint, as the stream contract asks)."""
        self.close()
        await trio.lowlevel.checkpoint()
