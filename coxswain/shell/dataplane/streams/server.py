"""The stream listeners: accepting, routing and forwarding layer-4 connections.

One :class:`StreamServer` per proxy, beside the HTTP one (:mod:`..server`), applied the same
snapshots. Rules (Gateway API v1 TLSRoute, TCPRoute, UDPRoute; docs/architecture.md,
"Layer 4"):
1. Sockets: every ready layer-4 listener's local port is bound (TCP for TLS and TCP, UDP for
   UDP); a port whose protocol changed is re-bound; a port no longer served is closed.
2. TLS Passthrough: the ClientHello is read (at most 16 KiB, within ``hello_timeout``;
   :mod:`coxswain.route.client_hello`), its SNI picks the route (``route.streams``), and the
   bytes read are the first the backend gets: the client completes its handshake with the
   backend, whose own certificate it sees. A connection that sends no ClientHello in time, or
   something else, is closed and counted. TLS Terminate: the same ClientHello picks the
   listener, whose certificate the proxy completes the handshake with; the plaintext is
   forwarded. TCP: the connection is forwarded as it comes.
3. A backend is chosen by weight among the route's (an invalid one, or one without ready
   endpoints, refuses the connection: its share of connections is refused, as the spec
   requires of requests); its endpoints are tried in turn, each within ``connect_timeout``.
4. Routing is decided once, when the connection (or UDP session) starts: a new snapshot
   changes nothing for established connections and sessions, but one whose route (or port)
   the new snapshot no longer serves is closed after ``drain`` seconds.
5. Both directions are spliced (:mod:`.splice`): backpressure, half-close, idle timeout.
   Connections are plain non-blocking sockets (:mod:`.sockets`), accepted by one loop per
   listening socket into the server's nursery, up to ``ACCEPT_BATCH`` per wake-up: one task
   per connection (a silent one delays none of its batch), both directions
   driven from one wait (:mod:`.pump`); only a TLS stream the proxy terminates is a trio
   stream, and its two directions take two tasks (:func:`.splice.splice`).
6. At most ``max_connections`` TLS and TCP connections are open at once; a connection past
   it is closed at once (``over_capacity``), so a flood of silent clients costs bounded
   descriptors and leaves the HTTP listeners theirs.
7. A backend whose Service asks for it (``Backend.proxy_protocol``) gets a PROXY protocol v2
   header before the first byte (:mod:`coxswain.route.proxy_protocol`); for TLS Passthrough it
   precedes the ClientHello, for Terminate the plaintext.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Final

import trio

from coxswain.route.proxy_protocol import proxy_header
from coxswain.shell.dataplane.balance import pick_backend
from coxswain.shell.dataplane.listen import open_reuseport_listeners
from coxswain.shell.dataplane.streams.binding import bind_retrying
from coxswain.shell.dataplane.streams.metrics import StreamMetrics
from coxswain.shell.dataplane.streams.peek import Replay, connect_first, read_client_hello
from coxswain.shell.dataplane.streams.pump import Reactor, splice_sockets
from coxswain.shell.dataplane.streams.served import StreamServed
from coxswain.shell.dataplane.streams.sockets import (
    accept,
    close,
    receive,
    release,
    send_all,
)
from coxswain.shell.dataplane.streams.sockets import listening as made_listening
from coxswain.shell.dataplane.streams.splice import splice
from coxswain.shell.dataplane.streams.udp import UdpSettings, serve_udp

if TYPE_CHECKING:
    import random
    import ssl

    from prometheus_client import CollectorRegistry

    from coxswain.compile.snapshot import Backend, Endpoint, RouteRef, Snapshot
    from coxswain.route.streams import StreamDecision

__all__ = ["StreamServer", "StreamSettings"]

log = logging.getLogger("coxswain.streams")

# connections taken per wake-up of an accept loop (rule 5): a burst costs a run-loop turn
# per batch, not per connection, and a wake-up stays short (nginx's multi_accept takes all)
ACCEPT_BATCH: Final = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamSettings:
    """The bounds of layer-4 forwarding, in seconds and counts."""

    bind: str = "127.0.0.1"
    reuse_port: bool = False  # one of several worker processes (SO_REUSEPORT)
    hello_timeout: float = 10.0  # for a complete ClientHello, and a Terminate handshake
    connect_timeout: float = 5.0  # per endpoint
    idle_timeout: float = 600.0  # nothing either way (nginx stream proxy_timeout: 10 min)
    drain: float = 30.0  # a connection whose route was removed, before it is closed
    max_connections: int = 16_384  # TLS and TCP connections open at once, per process
    udp: UdpSettings = field(default_factory=UdpSettings)


@dataclass(slots=True)
class _Socket:
    protocol: str
    scope: trio.CancelScope
    bound: bool = False
    closed: trio.Event = field(default_factory=trio.Event)

    def mark_bound(self) -> None:
        self.bound = True


@dataclass(slots=True)
class _Live:
    """An established connection or UDP session: where it came and what it is forwarded
    for."""

    port: int
    route: RouteRef
    scope: trio.CancelScope


class _Holding:
    """The block of :meth:`StreamServer.holding`: a plain context manager, made once per
    connection (a generator's costs more)."""

    __slots__ = ("live", "registry")

    def __init__(self, registry: dict[int, _Live], live: _Live) -> None:
        self.registry = registry
        self.live = live

    def __enter__(self) -> None:
        self.registry[id(self.live)] = self.live

    def __exit__(self, *_: object) -> None:
        del self.registry[id(self.live)]


class StreamServer:
    """The layer-4 listeners of one proxy; run :meth:`run`, then :meth:`apply` snapshots."""

    def __init__(
        self, settings: StreamSettings, registry: CollectorRegistry, rng: random.Random
    ) -> None:
        self.settings = settings
        self.metrics = StreamMetrics(registry)
        self.rng = rng
        self.served: StreamServed | None = None
        self.sockets: dict[int, _Socket] = {}
        self._live: dict[int, _Live] = {}
        self._connections = 0
        self._nursery: trio.Nursery | None = None
        self._reactor: Reactor | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the listeners and connections until cancelled."""
        async with trio.open_nursery() as nursery:
            self._reactor = Reactor()
            nursery.start_soon(self._reactor.run)
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def bound_ports(self) -> frozenset[int]:
        return frozenset(port for port, entry in self.sockets.items() if entry.bound)

    def ready(self) -> bool:
        """Every layer-4 port of the served snapshot is bound."""
        served = self.served
        return served is None or all(
            (entry := self.sockets.get(port)) is not None and entry.bound for port in served.ports
        )

    async def apply(self, snapshot: Snapshot) -> None:
        """Serve ``snapshot`` from now on (rules 1 and 4)."""
        assert self._nursery is not None, "apply() before run() started"
        served = StreamServed(snapshot)
        self.served = served
        wanted = served.protocols()
        closing = [
            self.sockets.pop(port)
            for port, entry in list(self.sockets.items())
            if wanted.get(port) != entry.protocol
        ]
        for entry in closing:
            entry.scope.cancel()
        for entry in closing:
            await entry.closed.wait()
        for port, protocol in sorted(wanted.items()):
            if port not in self.sockets:
                await self._nursery.start(self._listen, port, protocol)
        removed = [live for live in self._live.values() if not served.serves(live.port, live.route)]
        if removed:
            self._nursery.start_soon(self._drain, removed)

    def holding(self, port: int, route: RouteRef, scope: trio.CancelScope) -> _Holding:
        """While the block runs, a connection or session of ``route`` on ``port``, which
        ``scope`` ends, is drained when a snapshot removes its route (rule 4)."""
        return _Holding(self._live, _Live(port, route, scope))

    async def _drain(self, removed: list[_Live]) -> None:
        await trio.sleep(self.settings.drain)
        served = self.served
        for live in removed:
            if served is None or not served.serves(live.port, live.route):
                live.scope.cancel()

    async def _listen(
        self, port: int, protocol: str, *, task_status: trio.TaskStatus[None]
    ) -> None:
        entry = _Socket(protocol, trio.CancelScope())
        self.sockets[port] = entry
        try:
            with entry.scope:
                if protocol == "UDP":
                    await serve_udp(
                        self,
                        port,
                        self.settings.bind,
                        self.settings.udp,
                        self.settings.reuse_port,
                        entry.mark_bound,
                        task_status,
                    )
                    return
                listeners, task_status = await bind_retrying(
                    lambda: self._open(port), f"TCP port {port}", task_status
                )
                listening = [
                    made_listening(socket.socket(fileno=lis.socket.detach())) for lis in listeners
                ]
                entry.bound = True
                task_status.started()
                try:
                    async with trio.open_nursery() as accepting:
                        for sock in listening:
                            accepting.start_soon(self._accept, sock, port, protocol)
                finally:
                    for sock in listening:
                        close(sock)
        finally:
            entry.closed.set()

    async def _open(self, port: int) -> list[trio.SocketListener]:
        bind = self.settings.bind
        if self.settings.reuse_port:
            return await open_reuseport_listeners(port, host=bind)
        return await trio.open_tcp_listeners(port, host=bind)

    async def _accept(self, listening: socket.socket, port: int, protocol: str) -> None:
        """Accept connections on one listening socket, each handled in a task of its own."""
        assert self._nursery is not None
        while True:
            # yields once per batch, whether or not it waited; each connection its own task
            for conn in await accept(listening, ACCEPT_BATCH):
                self._nursery.start_soon(self._handle, conn, port, protocol)

    async def _handle(self, conn: socket.socket, port: int, protocol: str) -> None:
        if self._connections >= self.settings.max_connections:
            self.metrics.connection(port, protocol, "-", "over_capacity")
            close(conn)
            return
        self._connections += 1
        try:
            await self._connection(conn, port, protocol)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as err:
            log.info("port %d: connection ended: %r", port, err)
        finally:
            self._connections -= 1
            release(conn)  # this task alone used it, and it waits on nothing now

    async def _connection(self, conn: socket.socket, port: int, protocol: str) -> None:
        first = b""
        sni: str | None = None
        if protocol == "TLS":
            hello = await self._client_hello(conn, port)
            if hello is None:
                return
            first, sni = hello
        served = self.served
        if served is None:
            return
        decision = served.decide(port, sni)
        route = decision.label
        if decision.action is None:
            log.info("port %d: %s", port, decision.reason)
            self.metrics.connection(port, protocol, route, "no_route")
            return
        chosen = self.endpoints(served, decision)
        if chosen is None:
            self.metrics.connection(port, protocol, route, "no_backend")
            return
        target, endpoints = chosen
        client: socket.socket | trio.abc.Stream = conn
        context = None
        if protocol == "TLS" and decision.table is not None:
            context = served.terminating(port, decision.table)
        if context is not None:
            terminated = await self._terminate(conn, first, context, port, route)
            if terminated is None:
                return
            client, first = terminated, b""
        backend = await self._connect(endpoints)
        if backend is None:
            self.metrics.connection(port, protocol, route, "connect_failed")
            return
        self.metrics.connection(port, protocol, route, "forwarded")
        if target.proxy_protocol:
            first = _proxy_header(conn) + first
        await self._forward(client, backend, first, port, decision)

    async def _client_hello(
        self, conn: socket.socket, port: int
    ) -> tuple[bytes, str | None] | None:
        """The bytes of the ClientHello and its SNI, or None (counted) when there is none."""
        peeked = await read_client_hello(partial(receive, conn), self.settings.hello_timeout)
        if isinstance(peeked, str):
            self.metrics.connection(port, "TLS", "-", peeked)
            return None
        return peeked.first, peeked.sni

    def endpoints(
        self, served: StreamServed, decision: StreamDecision
    ) -> tuple[Backend, list[Endpoint]] | None:
        """The backend chosen by weight and its ready endpoints, from a random one on (rule
        3); None when it is invalid or has none."""
        backend = pick_backend(decision.backends, decision.weights, self.rng)
        if backend is None or not backend.valid:
            return None
        endpoints = served.endpoints.get(backend.endpoints_key, ())
        if not endpoints:
            return None
        if len(endpoints) == 1:
            return backend, [endpoints[0]]
        start = self.rng.randrange(len(endpoints))
        return backend, [*endpoints[start:], *endpoints[:start]]

    async def _terminate(
        self,
        conn: socket.socket,
        first: bytes,
        context: ssl.SSLContext,
        port: int,
        route: str,
    ) -> trio.SSLStream[Replay] | None:
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(conn))
        tls = trio.SSLStream(Replay(stream, first), context, server_side=True)
        with trio.move_on_after(self.settings.hello_timeout):
            try:
                await tls.do_handshake()
            except trio.BrokenResourceError:
                pass
            else:
                return tls
        self.metrics.connection(port, "TLS", route, "handshake_failed")
        return None

    async def _connect(self, endpoints: list[Endpoint]) -> socket.socket | None:
        """A connection to the first endpoint that accepts one (rule 3)."""
        return await connect_first(endpoints, self.settings.connect_timeout)

    async def _forward(
        self,
        client: socket.socket | trio.abc.Stream,
        backend: socket.socket,
        first: bytes,
        port: int,
        decision: StreamDecision,
    ) -> None:
        assert decision.action is not None
        scope = trio.CancelScope()  # rule 4 ends it; for plain sockets, the idle timeout too
        idle = self.settings.idle_timeout
        try:
            with self.holding(port, decision.action.route, scope):
                try:
                    if isinstance(client, socket.socket):
                        assert self._reactor is not None
                        done = await splice_sockets(
                            client,
                            backend,
                            first=first,
                            scope=scope,
                            idle_timeout=idle,
                            reactor=self._reactor,
                        )
                    else:
                        with scope:
                            if first:
                                await send_all(backend, first)
                            stream = trio.socket.from_stdlib_socket(backend)
                            done = await splice(
                                client, trio.SocketStream(stream), idle_timeout=idle
                            )
                    self.metrics.forwarded(
                        port, decision.label, done.upstream + len(first), done.downstream
                    )
                except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
        finally:
            release(backend)  # the tasks that used it are done; the client's: the handler's


def _proxy_header(conn: socket.socket) -> bytes:
    """The PROXY protocol v2 header of a client connection: the client's address and the
    listening address it reached (rule 7)."""
    try:
        client = conn.getpeername()
        local = conn.getsockname()
    except OSError:
        return proxy_header(("", 0), ("", 0))  # the LOCAL command: no address
    return proxy_header((str(client[0]), int(client[1])), (str(local[0]), int(local[1])))
