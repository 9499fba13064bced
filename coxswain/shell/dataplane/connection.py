"""A TCP connection as a trio stream, without trio's per-call wrappers: the proxy's sockets.

``trio.SocketStream`` wraps every call in a conflict detector and a generator context manager
that translates errors, and ``trio.socket`` adds a cancellation check and a scheduling yield
around every system call; they stood out in the proxy's profiles, and replacing them with this
class (and the per-read cancel scopes with one per exchange) cut the CPU per small request
(docs/benchmarks.md, "Measurements behind the design"). :class:`Connection` owns the
standard-library socket (taken over from trio's with ``detach``) and calls it directly, waiting
with ``trio.lowlevel.wait_readable``/``wait_writable`` only when the kernel says it would block.

Differences from ``trio.SocketStream``, on purpose:

- **Sends go out in batches.** ``send_all`` queues its bytes and yields; just before trio next
  waits for I/O, that is once every task runnable in this turn of the scheduler has had its
  step, :class:`SendBatch` sends what every connection queued, one ``send`` each. The bytes for
  many peers then leave together: a peer (a client, an upstream) woken by the first finds the
  next ones without being put to sleep and woken again, and on a virtual machine each wakeup of
  a sleeping process is an inter-processor interrupt charged to the sender. Against sending at
  once it saves CPU per request and lowers p99 (docs/benchmarks.md, "Measurements behind the
  design"). What the kernel does not take at once, ``send_all`` sends itself, waiting while
  the buffer is full, as before. ``send_all`` returns once every byte was handed to the
  kernel, as the stream contract asks.
- **``send_all`` always yields; a receive that finds bytes does not.** ``send_all`` yields
  while its bytes wait for the batch, even when the kernel then takes them at once, and
  without noticing a cancellation (as trio's socket calls do). That yield keeps connections
  fair: under load a connection's bytes are often already there, and a task that never yielded
  would serve request after request, or a whole large body, while the others starve (without
  any yield, p99 for 1 MB bodies at 64 connections went over a second). Every loop of the
  proxy that receives also sends (a request and its answer, a body relayed piece by piece, a
  tunnel) or yields itself where it sends nothing (a head that takes more than one receive, a
  dropped body, skipped 1xx responses, a mirror's unwanted answer), so a receive that finds
  bytes returns them without a yield of its own. Before the batch that yield still paid; with
  the batch it only doubled the scheduler's work, in instructions per request and in
  throughput under load (docs/benchmarks.md, "Measurements behind the design").
- A receive that finds nothing yields once and tries again before it waits: an upstream
  usually answers within the turn the other connections take, and the retry saves the
  readiness wait's registration and epoll round trip; a second retry made it slower (same
  section).
- **A send that waits is bounded** (:meth:`Connection.bound_sends`): while the kernel's buffer
  stays full, the connection is on the proxy's watchdog (:class:`~.wire.Watchdog`), one
  dictionary store per wait and nothing when the kernel takes the bytes at once; a peer that
  takes no byte for the send timeout gets its connection closed, and the sender
  :class:`SendStalled` (nginx's ``send_timeout`` and ``proxy_send_timeout`` measure the same:
  the time between two writes, not the whole response).
- Conflict detection for sends only: a second task calling ``send_all`` while one is in
  progress gets ``BusyResourceError`` (their bytes would interleave, or the batch would send
  only one task's); receives are used by one task at a time by construction (a WebSocket
  tunnel sends from one task and receives from another, which is allowed).

Errors follow the trio stream contract: ``ClosedResourceError`` after our own close,
``BrokenResourceError`` for a connection the peer broke (reset, broken pipe).
"""

from __future__ import annotations

import errno
import math
import socket as stdlib_socket
from typing import TYPE_CHECKING, Final

import trio

if TYPE_CHECKING:
    from coxswain.shell.dataplane.wire import Watchdog

__all__ = ["Connection", "SendBatch", "SendStalled"]

_DEFAULT_RECEIVE: Final = 64 * 1024


class SendBatch(trio.abc.Instrument):
    """The connections whose bytes wait to be sent, sent when trio is about to wait for I/O
    (see the module docstring). One per trio run, installed by the first connection."""

    def __init__(self) -> None:
        self.queued: list[Connection] = []

    @classmethod
    def current(cls) -> SendBatch:
        """The running trio run's batch, installed as an instrument of the run on first use."""
        try:
            return _BATCH.get()
        except LookupError:
            batch = cls()
            _BATCH.set(batch)
            trio.lowlevel.add_instrument(batch)
            return batch

    def before_io_wait(self, timeout: float) -> None:
        """trio's hook, called after every turn of its scheduler: send what was queued."""
        queued = self.queued
        if queued:
            self.queued = []
            for connection in queued:
                connection.flush()


_BATCH: Final[trio.lowlevel.RunVar[SendBatch]] = trio.lowlevel.RunVar("coxswain.send_batch")


class SendStalled(trio.BrokenResourceError):
    """The peer took no byte for the connection's send timeout; the connection was closed."""


class Connection(trio.abc.HalfCloseableStream):
    """One connected TCP socket (see the module docstring)."""

    __slots__ = (
        "_batch",
        "_closed",
        "_failed",
        "_queued",
        "_rest",
        "_sending",
        "_stalled",
        "send_timeout",
        "socket",
        "watchdog",
    )

    def __init__(self, sock: stdlib_socket.socket) -> None:
        sock.setblocking(False)
        self.socket = sock
        self._closed = False
        self._batch = SendBatch.current()
        self._queued: bytes | bytearray | memoryview | None = None  # for the batch to send
        self._rest: memoryview | None = None  # what the kernel did not take from the batch
        self._failed: Exception | None = None  # how the batch's send failed
        self._sending = False  # a send_all is in progress (one task at a time)
        self.watchdog: Watchdog | None = None  # bounds a send that waits (bound_sends)
        self.send_timeout = math.inf
        self._stalled = False  # the watchdog closed the connection: a send waited too long

    def bound_sends(self, watchdog: Watchdog, timeout: float) -> Connection:
        """From now on a send that waits more than ``timeout`` seconds for the kernel to take
        a byte closes the connection (:class:`SendStalled`); ``math.inf``: never."""
        self.watchdog = None if timeout == math.inf else watchdog
        self.send_timeout = timeout
        return self

    @property
    def stalled(self) -> bool:
        """The connection was closed because a send waited past its timeout."""
        return self._stalled

    def expire(self) -> None:
        """A send waited past the send timeout (the watchdog calls this): close, so that
        the waiting sender wakes and raises :class:`SendStalled`."""
        self._stalled = True
        self.close()

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
        """Send every byte of ``data``: queued for the batch, then what the kernel did not
        take at once, waiting while its buffer is full.

        Raises:
            trio.BusyResourceError: another task is sending on this connection (its bytes and
                these would interleave).
        """
        if self._closed:
            raise trio.ClosedResourceError("the connection was closed")
        if self._sending:
            raise trio.BusyResourceError("another task is sending on this connection")
        if not data:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        self._sending = True
        try:
            self._queued = data
            self._batch.queued.append(self)
            await trio.lowlevel.cancel_shielded_checkpoint()  # the batch sends meanwhile
            if self._queued is not None:  # trio ran this task again before waiting for I/O
                self.flush()
            failed, view = self._failed, self._rest
            self._failed = self._rest = None  # nothing of the caller's buffer is kept
            if self._closed:
                raise trio.ClosedResourceError("the connection was closed")
            if failed is not None:
                if isinstance(failed, OSError):
                    raise self._broken(failed) from failed
                raise failed
            if view is None:
                return
            sock = self.socket
            watchdog = self.watchdog
            try:
                while view:
                    if watchdog is not None:  # the time between two writes is bounded
                        watchdog.watch(self, self.send_timeout)
                    await trio.lowlevel.wait_writable(sock)  # the kernel's buffer was full
                    try:
                        sent = sock.send(view)
                    except BlockingIOError:
                        continue
                    except OSError as err:
                        raise self._broken(err) from err
                    view = view[sent:]
            except trio.ClosedResourceError:
                if self._stalled:
                    raise SendStalled(f"took no bytes for {self.send_timeout:g} s") from None
                raise
            finally:
                if watchdog is not None:
                    watchdog.unwatch(self)
        finally:
            self._sending = False

    def flush(self) -> None:
        """Send the queued bytes, as many as the kernel takes now (the batch calls this).
        Never raises: what fails is kept for the sending task to raise, since trio removes an
        instrument whose hook raises."""
        data = self._queued
        if data is None:
            return  # sent already: the task did not wait for the batch
        self._queued = None
        if self._closed:
            return
        try:
            sent = self.socket.send(data)
        except BlockingIOError:
            sent = 0
        except Exception as err:  # noqa: BLE001 - OSError: it broke; else a bad argument
            self._failed = err
            return
        if sent < len(data):
            self._rest = memoryview(data)[sent:]

    async def wait_send_all_might_not_block(self) -> None:
        """Wait until the socket accepts bytes."""
        if self._closed:
            raise trio.ClosedResourceError("the connection was closed")
        await trio.lowlevel.wait_writable(self.socket)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """The bytes available (at most ``max_bytes``), waiting for some; ``b""`` at the end."""
        sock = self.socket
        size = _DEFAULT_RECEIVE if max_bytes is None else max_bytes
        yielded = False
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
                continue
            except OSError as err:
                raise self._broken(err) from err
            return data  # no yield of its own: the caller's next send yields (see above)

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
