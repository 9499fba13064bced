"""UDP listeners: datagram sessions keyed by the client's address (Gateway API v1 UDPRoute).

UDP has no connection, so the proxy makes sessions: the first datagram from a client address
picks the route and a backend endpoint (``route.streams``, by weight as for TCP), and opens a
socket connected to that endpoint; later datagrams of the address go the same way, and the
endpoint's answers go back to the address from the listener's socket. A session ends after
``idle_timeout`` seconds without a datagram either way. The table holds at most
``max_sessions`` sessions: a new client when it is full ends the least recently active one
(counted ``evicted``), so a flood of spoofed addresses costs bounded memory and sockets.
Sockets are plain non-blocking ones, each call made at once (:mod:`.sockets`): a loop
waits on readiness only when nothing is there, and yields once per datagram otherwise; a
datagram that finds a socket's send buffer full is dropped, as a router drops what it cannot
queue (RFC 768 promises no delivery).
Routing is decided when a session opens: a new snapshot leaves open sessions as they are,
except that a session whose route the new snapshot no longer serves on its port ends after
the drain period, as a TCP connection does (``StreamServer.holding``).
"""

from __future__ import annotations

import socket
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio

from coxswain.shell.dataplane.streams.binding import bind_retrying
from coxswain.shell.dataplane.streams.sockets import close, receive, receive_from
from coxswain.shell.dataplane.streams.splice import touch

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from coxswain.compile.snapshot import Backend, Endpoint, RouteRef
    from coxswain.route.streams import StreamDecision
    from coxswain.shell.dataplane.streams.metrics import StreamMetrics
    from coxswain.shell.dataplane.streams.served import StreamServed

__all__ = ["MAX_DATAGRAM", "UdpSettings", "serve_udp"]

MAX_DATAGRAM: Final = 65535


@dataclass(frozen=True, slots=True, kw_only=True)
class UdpSettings:
    """``idle_timeout`` in seconds (``--udp-idle-timeout``), ``max_sessions`` per listener
    (``--udp-max-sessions``)."""

    idle_timeout: float = 60.0
    max_sessions: int = 16_384


class SessionHost(Protocol):
    """What sessions need of the stream server: the served snapshot, the metrics, and the
    weighted choice of a backend's endpoints."""

    served: StreamServed | None
    metrics: StreamMetrics

    def endpoints(
        self, served: StreamServed, decision: StreamDecision
    ) -> tuple[Backend, list[Endpoint]] | None:
        """The chosen backend and its endpoints, None when there is no usable backend."""
        ...

    def holding(
        self, port: int, route: RouteRef, scope: trio.CancelScope
    ) -> AbstractContextManager[None]:
        """Drain the session (end ``scope``) if a snapshot removes its route."""
        ...


class _Session:
    __slots__ = (
        "address", "downstream", "ref", "route", "scope", "upstream", "upstream_socket",
    )  # fmt: skip

    def __init__(
        self, address: Any, ref: RouteRef, route: str, upstream_socket: socket.socket
    ) -> None:
        self.address = address
        self.ref = ref
        self.route = route
        self.upstream_socket = upstream_socket
        self.scope = trio.CancelScope()
        self.upstream = 0
        self.downstream = 0


async def serve_udp(
    server: SessionHost,
    port: int,
    bind: str,
    settings: UdpSettings,
    reuse_port: bool,
    bound: Callable[[], None],
    task_status: trio.TaskStatus[None],
) -> None:
    """Serve UDP on ``port`` of ``bind`` until cancelled; ``bound`` is called once bound. A
    port that cannot be bound is tried again every second (the caller goes on at once)."""
    listener, task_status = await bind_retrying(
        lambda: _bound(bind, port, reuse_port), f"UDP port {port}", task_status
    )
    try:
        bound()
        task_status.started()
        sessions: OrderedDict[Any, _Session] = OrderedDict()
        async with trio.open_nursery() as nursery:
            while True:
                try:
                    data, client = await receive_from(listener, MAX_DATAGRAM)
                except OSError:  # an error queued on the socket: the next datagram is fine
                    await trio.lowlevel.checkpoint()
                    continue
                session = sessions.get(client)
                if session is None:
                    session = _open(server, port, client, sessions, settings)
                    if session is not None:
                        nursery.start_soon(
                            _answers, server, port, listener, session, sessions, settings
                        )
                else:
                    sessions.move_to_end(client)
                if session is not None:
                    touch(session.scope, settings.idle_timeout)
                    session.upstream += len(data)
                    try:
                        session.upstream_socket.send(data)
                    except BlockingIOError:
                        pass  # dropped: the send buffer is full (the module docstring)
                    except OSError:
                        session.scope.cancel()
    finally:
        close(listener)


async def _bound(bind: str, port: int, reuse_port: bool) -> socket.socket:
    infos = await trio.socket.getaddrinfo(
        bind, port, type=socket.SOCK_DGRAM, flags=socket.AI_PASSIVE
    )
    family, kind, proto, _, address = infos[0]
    listener = socket.socket(family, kind, proto)
    try:
        listener.setblocking(False)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:  # the kernel keeps each client address on one worker
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind(address)
    except BaseException:
        listener.close()
        raise
    return listener


def _open(
    server: SessionHost,
    port: int,
    client: Any,
    sessions: OrderedDict[Any, _Session],
    settings: UdpSettings,
) -> _Session | None:
    """A new session for ``client``, or None (counted) when it cannot be routed."""
    served = server.served
    if served is None:
        return None
    decision = served.decide(port, None)
    if decision.action is None:
        server.metrics.session(port, "-", "no_route")
        return None
    chosen = server.endpoints(served, decision)
    if chosen is None:
        server.metrics.session(port, decision.label, "no_backend")
        return None
    endpoint: Endpoint = chosen[1][0]  # a PROXY header is for TLS and TCP connections only
    family = socket.AF_INET6 if ":" in endpoint.address else socket.AF_INET
    upstream = socket.socket(family, socket.SOCK_DGRAM)
    try:
        upstream.setblocking(False)
        upstream.connect((endpoint.address, endpoint.port))  # UDP: no handshake, no wait
    except OSError:
        upstream.close()
        server.metrics.session(port, decision.label, "no_backend")
        return None
    if len(sessions) >= settings.max_sessions:
        _, oldest = sessions.popitem(last=False)
        oldest.scope.cancel()
        server.metrics.session(port, oldest.route, "evicted")
    session = _Session(client, decision.action.route, decision.label, upstream)
    sessions[client] = session
    server.metrics.session(port, decision.label, "opened")
    server.metrics.udp_open.inc()
    return session


async def _answers(
    server: SessionHost,
    port: int,
    listener: socket.socket,
    session: _Session,
    sessions: OrderedDict[Any, _Session],
    settings: UdpSettings,
) -> None:
    """Carry the endpoint's datagrams back to the client until the session is idle."""
    upstream = session.upstream_socket
    try:
        with server.holding(port, session.ref, session.scope), session.scope:
            while True:
                try:
                    data = await receive(upstream, MAX_DATAGRAM)
                except OSError:  # an ICMP port unreachable, read as ECONNREFUSED
                    await trio.lowlevel.checkpoint()
                    continue
                touch(session.scope, settings.idle_timeout)
                session.downstream += len(data)
                try:
                    listener.sendto(data, session.address)
                except BlockingIOError:
                    pass  # dropped: the send buffer is full (the module docstring)
                except OSError:
                    break
    finally:
        close(upstream)
        if sessions.get(session.address) is session:
            del sessions[session.address]
        server.metrics.udp_open.dec()
        server.metrics.forwarded(port, session.route, session.upstream, session.downstream)
