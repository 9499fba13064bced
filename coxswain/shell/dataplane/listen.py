"""Listening on the proxy's ports, and the configuration error of a port that cannot be had.

A port the proxy cannot listen on when it starts (another process holds it, or it is below
1024 without the privilege) is a mistake in the configuration, not a passing failure:
:class:`ListenError` says which address and port and why, and the command exits 2 with it
(docs/architecture.md, "The proxy process and its workers"). A port that a later snapshot
adds, or that discovery's snapshots need, is tried again instead (:meth:`.Proxy.apply`).

- :func:`open_reuseport_listeners` binds with ``SO_REUSEPORT``, so that the workers of
  ``coxswain proxy --workers N`` share every port and the kernel spreads new connections over
  them (:mod:`.workers`).
- :func:`check_can_listen` is the supervisor's test before it starts any worker: each port is
  bound without ``SO_REUSEPORT`` and released, so that a port held by any other listening
  socket, even one that set ``SO_REUSEPORT`` itself, is reported once, by the supervisor.
- :func:`start_admin` starts the admin port, a :class:`ListenError` if it cannot be had.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import trio

from coxswain.shell.dataplane.admin import serve_admin

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coxswain.shell.dataplane.admin import AdminSource

__all__ = ["ListenError", "check_can_listen", "open_reuseport_listeners", "start_admin"]


class ListenError(Exception):
    """A port cannot be listened on; the message names the address, the port and the reason."""

    def __init__(self, host: str, port: int, error: OSError, *, what: str = "") -> None:
        super().__init__(f"cannot listen on {host}:{port}{what}: {error}")


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
                _set_options(sock, family, reuse_port=True)
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


def check_can_listen(host: str, ports: Iterable[int]) -> None:
    """Bind each port on every address of ``host`` and release it at once. Blocking (the
    name lookup): run it before serving, or in a thread.

    Raises:
        ListenError: the first port that cannot be bound.
    """
    for port in ports:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
            for family, kind, proto, _, address in infos:
                with socket.socket(family, kind, proto) as probe:
                    _set_options(probe, family, reuse_port=False)
                    probe.bind(address)
        except OSError as err:
            raise ListenError(host, port, err) from err


def _set_options(
    sock: socket.socket | trio.socket.SocketType, family: int, *, reuse_port: bool
) -> None:
    # SO_REUSEADDR as trio.open_tcp_listeners sets it: a port whose last connections are in
    # TIME_WAIT can be bound again at once
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)


async def start_admin(nursery: trio.Nursery, source: AdminSource, *, bind: str, port: int) -> int:
    """Start the admin port (:func:`.serve_admin`) in ``nursery``; the port bound.

    Raises:
        ListenError: the port cannot be listened on.
    """
    try:
        bound: int = await nursery.start(
            lambda task_status: serve_admin(source, bind=bind, port=port, task_status=task_status)
        )
    except OSError as err:
        raise ListenError(bind, port, err, what=" (the admin port)") from err
    return bound
