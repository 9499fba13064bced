"""The proxy process: the served snapshot, its listeners, and every client connection.

Design (docs/architecture.md, "The proxy"):

- **One reference swap.** :class:`Served` bundles a snapshot with what is derived from it (the
  route table, the TLS contexts); :meth:`Proxy.apply` replaces ``Proxy.served`` in one
  assignment. Each request reads it once when its head arrives and keeps it, so requests in
  flight finish on the snapshot they started with and none sees half of two.
- **Listeners** follow the pure plan of ``route.plan.diff_listeners``: sockets that appear are
  bound, those that disappear are closed, unchanged ones are never re-bound. Each port is
  served in its own cancel scope; connections live in one nursery of their own, so closing a
  listener does not cut the connections it accepted. A port that cannot be bound is tried
  again with a growing pause, unless the caller asks ``must_bind`` (the first snapshot of a
  file: :class:`.ListenError`, a configuration error).
- **Connections** speak HTTP/2 (:mod:`.h2_connection`; ALPN ``h2``, or the prior-knowledge
  preface in cleartext) or HTTP/1.1 (:mod:`.http1_connection`, a loop over requests). A client
  that stops reading is cut after ``timeouts.client_send`` (:meth:`.Connection.bound_sends`);
  no input ends anything but its own connection.
- **Draining** (:meth:`Proxy.drain`, on SIGTERM): ``ready()`` turns False, every listener is
  closed, connections waiting for a request head are closed, a request in flight finishes and
  its connection then closes; the drain ends when no connection is left or at its timeout.
- **TLS** connections are wrapped with the front context of their port (certificate by SNI);
  after the handshake the listener selected by the SNI must admit the client certificate,
  else the connection is closed.
"""

from __future__ import annotations

import gc
import logging
import math
import random
import sys
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

import trio

from coxswain.http1 import (
    DEFAULT_CODEC,
    HeadCodec,
    RequestHead,
    codec_named,
)
from coxswain.route.forward import trusted_peer
from coxswain.route.grpc_status import own_label
from coxswain.route.plan import ListenerSpec, diff_listeners
from coxswain.shell.dataplane import capacity
from coxswain.shell.dataplane.access_log import AccessLog
from coxswain.shell.dataplane.capacity import Capacity
from coxswain.shell.dataplane.client_tls import handshake_peer
from coxswain.shell.dataplane.connection import Connection
from coxswain.shell.dataplane.connection_limits import DEFAULT_MAX_CONNECTIONS
from coxswain.shell.dataplane.h2_connection import PREFACE, H2Session
from coxswain.shell.dataplane.h2_pool import H2Pool
from coxswain.shell.dataplane.http1_connection import serve_http1
from coxswain.shell.dataplane.listen import ListenError, open_reuseport_listeners
from coxswain.shell.dataplane.metrics import Metrics
from coxswain.shell.dataplane.mirror import Mirrors
from coxswain.shell.dataplane.passthrough import pass_through, passed_rule
from coxswain.shell.dataplane.pool import UpstreamPool
from coxswain.shell.dataplane.rate_limits import RateLimits
from coxswain.shell.dataplane.relay_h2 import H2Relay
from coxswain.shell.dataplane.served import Routed, Served, handshake_sni
from coxswain.shell.dataplane.streams import StreamServer, StreamSettings
from coxswain.shell.dataplane.streams.peek import Peeked, Replay, read_client_hello
from coxswain.shell.dataplane.tls import peer_certificate
from coxswain.shell.dataplane.upstream import Forwarder, Timeouts
from coxswain.shell.dataplane.wire import RECEIVE_SIZE, Watchdog

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.snapshot import Snapshot
    from coxswain.route.forward import Network
    from coxswain.shell.dataplane.downstream import Exchange

__all__ = ["HEADER_TIMEOUT", "Proxy", "ProxyConfig"]

HEADER_TIMEOUT: Final = 60.0
HANDSHAKE_TIMEOUT: Final = 10.0
BIND_RETRY_MIN: Final = 0.1
BIND_RETRY_MAX: Final = 5.0
SETTLE_INTERVAL: Final = 60.0
GC_THRESHOLDS: Final = (20_000, 20, 10)
"""The cyclic collector's thresholds while serving (:func:`gc.set_threshold`; CPython's are
700, 10, 10). A request's objects die by reference counting, but every young collection walks
the objects of each request in flight, whatever the threshold, so the cost is per collection:
at 700 allocations a gRPC call through an HTTP/2 backend paid about 6% of its instructions in
the collector, a small HTTP/2 request about 3.5% (docs/benchmarks.md, "gRPC against nginx" and
"HTTP/2 against nginx"). What waits longer is cyclic garbage, 20,000 young objects at most."""

log = logging.getLogger("coxswain.proxy")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    """How the proxy listens; routing comes from the snapshot."""

    bind: str = "127.0.0.1"
    ingress_http_port: int = 80
    ingress_https_port: int = 443
    header_timeout: float = HEADER_TIMEOUT  # for a request head, and idle between requests
    handshake_timeout: float = HANDSHAKE_TIMEOUT  # for a client's TLS handshake
    timeouts: Timeouts = field(default_factory=Timeouts)
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # client connections (.capacity)
    codec: str = DEFAULT_CODEC
    max_body_bytes: int | None = None  # a request body over it is answered 413
    reuse_port: bool = False  # bind with SO_REUSEPORT: one of several worker processes
    access_log: bool = False  # one JSON line per request on stderr (:mod:`.access_log`)
    # peers whose X-Real-IP, Forwarded and X-Forwarded-* are kept (route.forward, rule 3)
    trusted_proxies: tuple[Network, ...] = ()
    pass_server: bool = False  # keep the upstream's Server header (coxswain.route.relay)
    streams: StreamSettings = field(default_factory=StreamSettings)  # layer 4 (.streams)


@dataclass(slots=True)
class _Listener:
    spec: ListenerSpec
    scope: trio.CancelScope
    bound: bool = False
    closed: trio.Event = field(default_factory=trio.Event)


@dataclass(slots=True)
class Proxy:
    """The running proxy: serve with :meth:`serve`, change snapshots with :meth:`apply`."""

    config: ProxyConfig
    served: Served | None = None
    applies: int = 0
    rejections: int = 0
    listeners: dict[int, _Listener] = field(default_factory=dict)
    pool: UpstreamPool = field(default_factory=UpstreamPool)
    rng: random.Random = field(default_factory=random.Random)
    metrics: Metrics = field(default_factory=Metrics)
    access: AccessLog = field(default_factory=lambda: AccessLog(None))
    rate_limits: RateLimits = field(default_factory=RateLimits)  # outlive snapshots
    draining: bool = False
    drain_started: trio.Event = field(default_factory=trio.Event)  # set with draining
    admin_port: int | None = None  # the admin port bound for this proxy, if any
    _open: int = 0
    _quiet: trio.Event = field(default_factory=trio.Event)
    _capacity: Capacity = field(default_factory=lambda: Capacity(DEFAULT_MAX_CONNECTIONS))
    _codec: HeadCodec | None = None
    _forwarder: Forwarder | None = None
    _nursery: trio.Nursery | None = None
    _applied: trio.Event = field(default_factory=trio.Event)
    _settled_at: float = -math.inf
    _streams: StreamServer | None = None

    @property
    def streams(self) -> StreamServer:
        """The layer-4 listeners (:mod:`.streams`); set once :meth:`serve` has started."""
        assert self._streams is not None, "the proxy is not serving"
        return self._streams

    @property
    def capacity(self) -> Capacity:
        """The client connections' places (:mod:`.capacity`)."""
        return self._capacity

    @property
    def forwarder(self) -> Forwarder:
        """What every forwarded request shares; set once :meth:`serve` has started."""
        assert self._forwarder is not None, "the proxy is not serving"
        return self._forwarder

    @property
    def codec(self) -> HeadCodec:
        if self._codec is None:
            self._codec = codec_named(self.config.codec)  # type: ignore[arg-type]
        return self._codec

    def ready(self) -> bool:
        """A snapshot is applied and every listener it needs is bound."""
        served = self.served
        if served is None or self.draining:
            return False
        return self.streams.ready() and all(
            (entry := self.listeners.get(port)) is not None and entry.bound for port in served.specs
        )

    async def wait_applies(self, count: int, *, rejections: int = 0) -> None:
        """Wait until ``count`` snapshots have been applied and ``rejections`` refused, in all."""
        while self.applies < count or self.rejections < rejections:
            await self._applied.wait()

    def reject(self, message: str) -> None:
        """A snapshot could not be used: log it; the served one stays."""
        log.error("%s", message)
        self.rejections += 1
        self.metrics.refused()
        self._applied.set()
        self._applied = trio.Event()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the listeners and connections until cancelled; never returns."""
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if self.config.access_log:
                    self.access = AccessLog(sys.stderr)
                    nursery.start_soon(self.access.run)
                timeouts = self.config.timeouts
                self._capacity = Capacity(
                    capacity.connection_budget(self.config.max_connections),
                    shed=self.metrics.shed.inc,
                )
                watchdog = Watchdog.for_timeouts(
                    self.config.header_timeout,
                    timeouts.read,
                    timeouts.client_body,
                    timeouts.send,
                    timeouts.client_send,
                    timeouts.tunnel_idle,
                )
                nursery.start_soon(watchdog.run)
                h2_pool = H2Pool(
                    nursery,
                    watchdog,
                    send_timeout=timeouts.send,
                    read_timeout=timeouts.read,
                    record=self.metrics.upstream_http2,
                )
                self.metrics.watch_upstream_http2(h2_pool.open_count, h2_pool.stream_count)
                self._streams = StreamServer(
                    replace(
                        self.config.streams,
                        bind=self.config.bind,
                        reuse_port=self.config.reuse_port,
                    ),
                    self.metrics.registry,
                    self.rng,
                )
                await nursery.start(self._streams.run)
                self._forwarder = Forwarder(
                    codec=self.codec,
                    watchdog=watchdog,
                    rng=self.rng,
                    timeouts=self.config.timeouts,
                    pool=self.pool,
                    pass_server=self.config.pass_server,
                    count_retry=self.metrics.retried,
                    h2=H2Relay(
                        h2_pool,
                        connect_timeout=timeouts.connect,
                        send_timeout=timeouts.send,
                    ),
                    mirrors=Mirrors(
                        nursery,
                        self.rng,
                        connect_timeout=timeouts.connect,
                        timeout=timeouts.mirror,
                        record=self.metrics.mirrored,
                        h2=h2_pool,
                        watchdog=watchdog,
                        send_timeout=timeouts.send,
                    ),
                )
                task_status.started()
                await trio.sleep_forever()
        finally:
            self.pool.close_all()

    async def drain(self, grace: float) -> bool:
        """Stop accepting, close idle connections, and wait up to ``grace`` seconds for the
        requests in flight to finish; whether every connection ended in time."""
        self.draining = True
        self.drain_started.set()
        for entry in self.listeners.values():
            entry.scope.cancel()
        for scope in self._capacity.idle:
            scope.cancel()
        log.info("draining %d connections (at most %s s)", self._open, grace)
        with trio.move_on_after(grace):
            while self._open:
                self._quiet = trio.Event()
                await self._quiet.wait()
            return True
        log.warning("drain timeout: %d connections cut", self._open)
        return False

    async def apply(self, snapshot: Snapshot, *, must_bind: bool = False) -> None:
        """Serve ``snapshot`` from now on: one reference swap, then the listener plan.

        Raises:
            ListenError: ``must_bind`` and a port of the plan cannot be bound now (without
                ``must_bind`` the port is tried again in the background and ``ready()`` is
                False meanwhile).
        """
        if self.draining:
            log.info("not applying snapshot %s: draining", snapshot.version)
            return
        served = Served(
            snapshot,
            ingress_http_port=self.config.ingress_http_port,
            ingress_https_port=self.config.ingress_https_port,
            rate_limits=self.rate_limits,
            previous=self.served,
        )
        current = {port: entry.spec for port, entry in self.listeners.items()}
        plan = diff_listeners(current, served.specs)
        self.served = served  # the swap: the next request reads the new snapshot
        closing = [self.listeners.pop(port) for port in plan.close]
        for entry in closing:
            entry.scope.cancel()
        for entry in closing:  # a port changing kind is re-bound only once it is free
            await entry.closed.wait()
        assert self._nursery is not None, "apply() before serve() started"
        for spec in plan.open:
            await self._nursery.start(self._serve_port, spec, must_bind)
        await self.streams.apply(snapshot)
        log.info(
            "applied snapshot %s: opened %s, closed %s, kept %s",
            snapshot.version,
            [s.port for s in plan.open],
            list(plan.close),
            list(plan.keep),
        )
        self.applies += 1
        self.metrics.applied(snapshot.version)
        self._settle_heap()
        self._applied.set()
        self._applied = trio.Event()

    def _settle_heap(self) -> None:
        """After an apply: freeze what is alive, so that the cyclic collector stops walking
        the snapshot's objects at every full collection (tens of milliseconds each with a
        10,000-route table loaded: docs/benchmarks.md, "Measurements behind the design").

        Frozen objects that later become cyclic garbage (the previous snapshot, requests that
        were in flight) are never collected while frozen; at most every ``SETTLE_INTERVAL``
        the apply first unfreezes and runs one full collection to reclaim them. Not at every
        apply: a full collection per apply is tens of milliseconds, and applies can come in
        bursts.
        """
        now = trio.current_time()
        if now - self._settled_at >= SETTLE_INTERVAL:
            gc.unfreeze()
            gc.collect()
            self._settled_at = now
        gc.freeze()

    async def _serve_port(
        self,
        spec: ListenerSpec,
        must_bind: bool,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        entry = _Listener(spec, trio.CancelScope())
        self.listeners[spec.port] = entry
        try:
            await self._listen(entry, must_bind, task_status)
        finally:
            entry.closed.set()

    async def _listen(
        self, entry: _Listener, must_bind: bool, task_status: trio.TaskStatus[None]
    ) -> None:
        spec = entry.spec
        with entry.scope:
            waiting = False

            def wait_in_background(error: ListenError) -> None:
                nonlocal waiting
                if must_bind:
                    raise error
                waiting = True
                task_status.started()  # not ready(): /readyz answers 503 until bound

            sockets = await self._bind(spec.port, wait_in_background)
            entry.bound = True
            if not waiting:
                task_status.started()
            assert self._nursery is not None

            async def handle(stream: trio.SocketStream) -> None:
                await self._connection(stream, spec)

            await capacity.serve(handle, sockets, self._capacity, self._nursery)

    async def _bind(
        self, port: int, first_failure: Callable[[ListenError], None]
    ) -> list[trio.SocketListener]:
        """The port's sockets, trying again with a growing pause while binding fails (the port
        may be held by a process that is stopping, or the Service of a new listener is not yet
        routed); ``first_failure`` lets the caller carry on with the rest of the snapshot, or
        raise."""
        pause = BIND_RETRY_MIN
        while True:
            try:
                return (
                    await open_reuseport_listeners(port, host=self.config.bind)
                    if self.config.reuse_port
                    else await trio.open_tcp_listeners(port, host=self.config.bind)
                )
            except OSError as err:
                error = ListenError(self.config.bind, port, err)
            if pause == BIND_RETRY_MIN:
                first_failure(error)
            log.error("%s; trying again in %g s", error, pause)
            await trio.sleep(pause)
            pause = min(pause * 2, BIND_RETRY_MAX)

    async def _connection(self, accepted: trio.SocketStream, spec: ListenerSpec) -> None:
        assert self._forwarder is not None
        stream = Connection.take(accepted).bound_sends(
            self._forwarder.watchdog, self.config.timeouts.client_send
        )
        client: str | None
        try:
            peer = stream.socket.getpeername()
            client = str(peer[0])
        except OSError:
            client = None
        sni: str | None = None
        conn: trio.abc.Stream = stream
        self.metrics.open_connections.inc()
        self._open += 1
        try:
            if spec.tls:
                served = self.served
                if served is None:
                    return
                source: trio.abc.Stream = stream
                passing = served.passing(spec.port)
                if passing is not None:  # ingress-nginx's ssl-passthrough (.passthrough)
                    peeked = await self._client_hello(stream)
                    if peeked is None:
                        return
                    rule = passed_rule(passing, peeked.sni)
                    if rule is not None:
                        await pass_through(
                            stream,
                            peeked.first,
                            rule,
                            served.endpoints,
                            self.rng,
                            connect_within=self.config.timeouts.connect,
                            idle_timeout=self.config.timeouts.tunnel_idle,
                        )
                        return
                    source = Replay(stream, peeked.first)
                tls = trio.SSLStream(
                    source, served.front(spec.port), server_side=True, https_compatible=True
                )
                handshake_sni.set(None)
                handshook = False
                with trio.move_on_after(self.config.handshake_timeout) as handshake:
                    self._capacity.waiting(handshake)  # no request yet: may give way for room
                    try:
                        await tls.do_handshake()
                    finally:
                        self._capacity.working(handshake)
                    handshook = True
                if not handshook:
                    return
                sni = handshake_sni.get()
                peer = peer_certificate(tls)
                if not served.admits(spec.port, sni, *peer):
                    return
                handshake_peer.set(peer)  # ingress-nginx's auth-tls-* read it (.client_tls)
                conn = tls
                received = b""
                http2 = tls.selected_alpn_protocol() == "h2"
            else:
                first = await self._first_bytes(stream)
                if not first:
                    return  # closed, or silent for header_timeout
                received = first
                http2 = first.startswith(PREFACE[: len(first)])
            trusted = trusted_peer(client, self.config.trusted_proxies)
            if http2:
                session = H2Session(self, conn, spec, client=client, sni=sni, trusted=trusted)
                await session.run(received)
            else:
                await serve_http1(self, conn, spec, client, sni, trusted, received)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:  # one connection's bug must not end the others
            log.exception("connection from %s on port %d failed", client, spec.port)
        finally:
            self.metrics.open_connections.dec()
            self._open -= 1
            if not self._open:
                self._quiet.set()
            await trio.aclose_forcefully(conn)

    async def _client_hello(self, stream: trio.abc.ReceiveStream) -> Peeked | None:
        """A TLS connection's ClientHello, read within the handshake timeout (the connection
        may give way for room meanwhile, as in a handshake); None without one."""
        with trio.CancelScope() as scope:
            self._capacity.waiting(scope)
            try:
                peeked = await read_client_hello(stream.receive_some, self.config.handshake_timeout)
            finally:
                self._capacity.working(scope)
        return None if scope.cancelled_caught or isinstance(peeked, str) else peeked

    async def _first_bytes(self, stream: trio.abc.ReceiveStream) -> bytes:
        """A cleartext connection's first bytes, enough to tell the HTTP/2 connection preface
        (prior knowledge, RFC 9113 §3.3) from an HTTP/1.1 request; empty when the client
        closed or stayed silent for ``header_timeout`` (or gave way for room)."""
        data = b""
        with trio.move_on_after(self.config.header_timeout) as scope:
            self._capacity.waiting(scope)
            try:
                data = bytes(await stream.receive_some(RECEIVE_SIZE))
                while data and len(data) < len(PREFACE) and PREFACE.startswith(data):
                    more = await stream.receive_some(RECEIVE_SIZE)
                    if not more:
                        break
                    data += more
            finally:
                self._capacity.working(scope)
        return b"" if scope.cancelled_caught else data

    def record(
        self,
        head: RequestHead,
        routed: Routed,
        spec: ListenerSpec,
        client: str | None,
        reason: str | None,
        exchange: Exchange,
        started: float,
    ) -> None:
        """The access-log line and the request counter of one answered request, with the
        client's protocol and a gRPC call's status: the backend's, or the proxy's own answer's
        to an HTTP/2 client (:func:`coxswain.route.grpc_status.own_label`)."""
        protocol = "h2" if head.http_version == b"2" else "http/1.1"
        grpc = exchange.grpc_status
        if not grpc and protocol == "h2" and not exchange.response_started and exchange.status:
            grpc = own_label(routed.decision, exchange.status, head.headers)
        if self.access.stream is not None:
            self.access.request(
                method=head.method,
                host=head.host,
                path=head.target,
                route=routed.label,
                client=client,
                reason=reason,
                status=exchange.status,
                protocol=protocol,
                grpc_status=grpc,
                upstream=exchange.upstream or None,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        self.metrics.request(
            listener=spec.port,
            route=routed.metric,
            status=exchange.status,
            protocol=protocol,
            grpc_status=grpc,
        )
