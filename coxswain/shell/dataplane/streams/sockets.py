"""Non-blocking standard-library sockets driven by trio's readiness waits, for TLS and TCP
listeners' connections.

A trio socket wraps every call in two checkpoints (one before, one after) and a stream adds
a conflict detector and a cancel scope to close; a layer-4 connection makes a dozen such
calls, and their cost is most of what a short connection costs (docs/benchmarks.md, "Layer 4
against nginx's stream module"). Here a call is made at once and the task waits
(``trio.lowlevel.wait_readable`` / ``wait_writable``) only when it would block. The receiving
calls yield exactly once each way: by waiting, or by a checkpoint when the bytes were there
at once, so a loop around them yields on every iteration with nothing more. A socket is closed
with :func:`close`, which wakes any task still waiting on it (``notify_closing``).
"""

from __future__ import annotations

import errno
import os
import socket
from typing import TYPE_CHECKING, Any, Final, TypeVar

import trio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "accept",
    "close",
    "finish_connect",
    "listening",
    "receive",
    "receive_from",
    "release",
    "send_all",
    "start_connect",
]

_Got = TypeVar("_Got")

# accept() errors that say the process or the machine is out of something, not that the
# listening socket is broken: wait and accept again (as trio.serve_listeners does).
_OUT_OF_RESOURCES: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_PAUSE: Final = 0.1  # seconds, trio.serve_listeners' sleep after such an error
# accept() errors about the one connection being accepted (reset before it was taken, refused
# by a firewall, a network gone): that connection is lost, the next is fine (as trio's
# SocketListener ignores them).
_CONNECTION_LOST: Final = frozenset(
    getattr(errno, name)
    for name in (
        "EPERM", "ECONNABORTED", "EPROTO", "ENETDOWN", "ENOPROTOOPT", "EHOSTDOWN", "ENONET",
        "EHOSTUNREACH", "EOPNOTSUPP", "ENETUNREACH", "ENOSR", "ESOCKTNOSUPPORT",
        "EPROTONOSUPPORT", "ETIMEDOUT", "ECONNRESET",
    )
    if hasattr(errno, name)
)  # fmt: skip


def _tune(sock: socket.socket) -> socket.socket:
    """A connected TCP socket made non-blocking, without Nagle's delay (as trio.SocketStream)."""
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def listening(sock: socket.socket) -> socket.socket:
    """A listening socket made ready for :func:`accept`: non-blocking, and ``TCP_NODELAY``
    set once here, which the connections it accepts inherit (Linux ``tcp(7)``), so an
    accepted socket costs one call less."""
    sock.setblocking(False)
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


async def accept(listening: socket.socket, most: int = 1) -> list[socket.socket]:
    """The connections waiting on a socket made :func:`listening`, at least one and at most
    ``most``, non-blocking themselves. One yield per batch, as the receiving calls make one
    per call (the module docstring): under a burst of new connections the accept loop takes
    several per run-loop turn instead of a turn each, and the bound keeps one wake-up short."""
    taken: list[socket.socket] = []
    waited = False
    while len(taken) < most:
        try:
            conn, _ = listening.accept()
        except BlockingIOError:
            if taken:
                break
            await trio.lowlevel.wait_readable(listening)
            waited = True
        except OSError as err:
            if taken:
                break  # the next call meets it again, with nothing in hand
            if err.errno in _CONNECTION_LOST:
                await trio.lowlevel.checkpoint()
            elif err.errno in _OUT_OF_RESOURCES:
                await trio.sleep(_ACCEPT_PAUSE)
            else:
                raise
            waited = True
        else:
            conn.setblocking(False)  # TCP_NODELAY it has from the listening socket
            taken.append(conn)
    if not waited:
        await trio.lowlevel.checkpoint()
    return taken


def start_connect(address: str, port: int) -> tuple[socket.socket, bool]:
    """A non-blocking TCP socket connecting to an IP ``address`` (no name lookup), and
    whether it is connected already: a peer on this machine has often answered within the
    call, and the caller then needs neither a wait nor a time bound around one. Raises
    ``OSError`` when the connection failed at once."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        code = sock.connect_ex((address, port))  # an error number: no exception to build
        if code == errno.EINPROGRESS:
            try:
                sock.getpeername()
            except OSError:
                return sock, False
        elif code:
            raise OSError(code, os.strerror(code))
        return _tune(sock), True
    except BaseException:
        sock.close()
        raise


async def finish_connect(sock: socket.socket) -> socket.socket:
    """Wait until the connection :func:`start_connect` began is made; closes ``sock`` and
    raises ``OSError`` when it failed (or ``Cancelled`` when the caller's bound ran out)."""
    try:
        await trio.lowlevel.wait_writable(sock)
        if code := sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            raise OSError(code, os.strerror(code))
        return _tune(sock)
    except BaseException:
        close(sock)
        raise


async def receive(sock: socket.socket, size: int) -> bytes:
    """At most ``size`` bytes, waiting until some come; b"" at the end of the stream."""
    return await _readable(sock, sock.recv, size)


async def receive_from(sock: socket.socket, size: int) -> tuple[bytes, Any]:
    """A datagram of at most ``size`` bytes and its sender's address."""
    return await _readable(sock, sock.recvfrom, size)


async def _readable(sock: socket.socket, call: Callable[[int], _Got], size: int) -> _Got:
    """``call(size)`` once it does not block; one yield either way (the module docstring)."""
    try:
        got = call(size)
    except BlockingIOError:
        pass
    else:
        await trio.lowlevel.checkpoint()
        return got
    while True:
        await trio.lowlevel.wait_readable(sock)
        try:
            return call(size)
        except BlockingIOError:
            pass


async def send_all(sock: socket.socket, data: bytes) -> None:
    """Send all of ``data``, waiting while the socket's buffer is full (backpressure)."""
    view = memoryview(data)
    while view:
        try:
            sent = sock.send(view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
        else:
            view = view[sent:]


def release(sock: socket.socket) -> None:
    """Close a connection's socket that its one task is done with: no task can be waiting on
    it, so trio has no registration of it to drop (a descriptor leaves an epoll set as it is
    closed), and the exception :func:`close` makes for waiters is not needed."""
    sock.close()


def close(sock: socket.socket) -> None:
    """Close ``sock``; a task still waiting on it gets ``trio.ClosedResourceError``."""
    if sock.fileno() >= 0:
        trio.lowlevel.notify_closing(sock)
        sock.close()
