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
- **Connections** loop over requests (keep-alive, RFC 9112 §9.3): read a head, ``select``,
  answer or forward (:mod:`.upstream`), and log one JSON line. A ProtocolError from the codec
  (400, 413, 431, 501) is answered and the connection closed (RFC 9112 §9.6); no input ends
  anything but its own connection. A client idle between requests or slow to send a head is
  closed after ``header_timeout``, one that stops reading after ``timeouts.client_send``
  (:meth:`.Connection.bound_sends`); at ``max_connections`` the one idle longest is closed for
  room (:mod:`.capacity`).
- **Draining** (:meth:`Proxy.drain`, on SIGTERM): ``ready()`` turns False, every listener is
  closed, connections waiting for a request head are closed, a request in flight finishes and
  its connection then closes; the drain ends when no connection is left or at its timeout.
- **TLS** connections are wrapped with the front context of their port (certificate by SNI);
  after the handshake the listener selected by the SNI must admit the client certificate,
  else the connection is closed.
"""

from __future__ import annotations

import contextlib
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
    PAUSED,
    Data,
    EndOfMessage,
    HeadCodec,
    Limits,
    ProtocolError,
    RequestHead,
    RequestParser,
    codec_named,
)
from coxswain.route.forward import trusted_peer
from coxswain.route.plan import ListenerSpec, diff_listeners
from coxswain.shell.dataplane import capacity
from coxswain.shell.dataplane.access_log import AccessLog
from coxswain.shell.dataplane.capacity import Capacity
from coxswain.shell.dataplane.connection import Connection
from coxswain.shell.dataplane.connection_limits import DEFAULT_MAX_CONNECTIONS
from coxswain.shell.dataplane.downstream import Exchange, Http1Downstream
from coxswain.shell.dataplane.h2_connection import PREFACE, H2Session
from coxswain.shell.dataplane.h2_pool import H2Pool
from coxswain.shell.dataplane.listen import ListenError, open_reuseport_listeners
from coxswain.shell.dataplane.metrics import Metrics
from coxswain.shell.dataplane.mirror import Mirrors
from coxswain.shell.dataplane.pool import UpstreamPool
from coxswain.shell.dataplane.relay_h2 import H2Relay
from coxswain.shell.dataplane.served import Routed, Served, handshake_sni
from coxswain.shell.dataplane.streams import StreamServer, StreamSettings
from coxswain.shell.dataplane.tries import Answer, ClientProtocolError
from coxswain.shell.dataplane.upstream import Forwarder, Timeouts
from coxswain.shell.dataplane.wire import RECEIVE_SIZE, EventReader, Timer, Watchdog, own_answer

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.snapshot import Snapshot
    from coxswain.route.forward import Network

__all__ = ["HEADER_TIMEOUT", "Proxy", "ProxyConfig"]

HEADER_TIMEOUT: Final = 60.0
HANDSHAKE_TIMEOUT: Final = 10.0
BIND_RETRY_MIN: Final = 0.1
BIND_RETRY_MAX: Final = 5.0
SETTLE_INTERVAL: Final = 60.0

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


_HEAD_WAIT: Final = object()
"""What the connection's timer names while the connection waits for a request head."""


@dataclass(slots=True)
class _InFlight:
    """A request being forwarded: what answering and logging it takes if a timeout cuts it."""

    head: RequestHead
    routed: Routed
    exchange: Exchange
    started: float


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
    draining: bool = False
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
                        H2Pool(
                            nursery,
                            watchdog,
                            send_timeout=timeouts.send,
                            read_timeout=timeouts.read,
                        ),
                        connect_timeout=timeouts.connect,
                        send_timeout=timeouts.send,
                    ),
                    mirrors=Mirrors(
                        nursery,
                        self.rng,
                        connect_timeout=timeouts.connect,
                        timeout=timeouts.mirror,
                        record=self.metrics.mirrored,
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
                tls = trio.SSLStream(
                    stream, served.front(spec.port), server_side=True, https_compatible=True
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
                if not served.admits(spec.port, sni, tls.getpeercert(binary_form=True)):
                    return
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
                await self._requests(conn, spec, client, sni, trusted, received)
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

    async def _requests(
        self,
        conn: trio.abc.Stream,
        spec: ListenerSpec,
        client: str | None,
        sni: str | None,
        trusted: bool,
        received: bytes,
    ) -> None:
        assert self._forwarder is not None
        # One timer for the connection rather than a cancel scope per request or per wait
        # (a watch costs a fraction of a scope: bench/proxy.py parts): armed while waiting for a
        # request head (draining cancels it then), for each piece of a request body, and for
        # each wait on the upstream; its scope's deadline is a route's timeout. Any of them
        # firing ends the connection; a request cut short is answered and logged after the
        # scope (_cut).
        timer = Timer(self._forwarder.watchdog)
        limits = Limits(max_body_bytes=self.config.max_body_bytes)
        reader = EventReader(
            conn,
            RequestParser(self.codec, limits=limits),
            read_timeout=self.config.timeouts.client_body,
            timer=timer,
        )
        if received:
            reader.parser.receive_data(received)
        inflight: list[_InFlight] = []  # the forwarded request a timeout may cut, if any
        with timer.scope:
            try:
                await self._exchanges(reader, conn, spec, client, sni, trusted, inflight)
            finally:
                self._capacity.working(timer.scope)
                timer.disarm()
        if timer.scope.cancelled_caught and inflight:
            await self._cut(conn, spec, client, inflight[0], reader, timer.stalled)
        if reader.parser.mid_message:
            await self._linger(conn)

    async def _exchanges(
        self,
        reader: EventReader,
        conn: trio.abc.Stream,
        spec: ListenerSpec,
        client: str | None,
        sni: str | None,
        trusted: bool,
        inflight: list[_InFlight],
    ) -> None:
        """Requests and their answers, until the connection must end."""
        header_timeout = self.config.header_timeout
        downstream = Http1Downstream(conn)
        timer = reader.timer
        assert timer is not None
        room = self._capacity
        while not self.draining:
            timer.arm(_HEAD_WAIT, header_timeout)
            room.waiting(timer.scope)  # draining, or room for another, may close it
            event = await reader.next(math.inf)  # bounded by the timer instead
            room.working(timer.scope)
            timer.disarm()
            if self.draining or timer.stalled is not None:
                return  # drained, or timed out, just as the head arrived: the scope is
                # cancelled, so nothing more can be done on this connection
            if event is PAUSED:  # the upgrade was not tunnelled: carry on with HTTP/1.1
                reader.parser.resume()
                continue
            if type(event) is ProtocolError:
                await conn.send_all(own_answer(event.status, event.reason, close=True))
                self.access.write(
                    {"client": client, "status": event.status, "reason": event.reason}
                )
                self.metrics.request(listener=spec.port, route=None, status=event.status)
                return
            if type(event) is not RequestHead:
                return  # ConnectionClosed
            if not await self._request(
                reader, downstream, event, spec, client, sni, trusted, inflight
            ):
                return

    async def _linger(self, conn: trio.abc.Stream) -> None:
        """The connection closes after an answer while the client may still be sending (a
        request body not read, bytes that broke HTTP/1.1): half-close, and read and drop what
        arrives until the client closes, at most ``timeouts.linger`` seconds. Closing at once would
        make the client's TCP stack answer its next bytes with a reset, which can destroy
        the answer before the client reads it (RFC 9112 §9.6). A lingering connection gives
        way at the connection limit, and to a drain."""
        with trio.move_on_after(self.config.timeouts.linger) as scope:
            self._capacity.waiting(scope)
            try:
                if isinstance(conn, trio.abc.HalfCloseableStream):
                    await conn.send_eof()
                while await conn.receive_some(RECEIVE_SIZE):
                    await trio.lowlevel.checkpoint()  # a receive that finds bytes does not yield
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            finally:
                self._capacity.working(scope)

    async def _cut(
        self,
        conn: trio.abc.Stream,
        spec: ListenerSpec,
        client: str | None,
        request: _InFlight,
        reader: EventReader,
        stalled: object | None,
    ) -> None:
        """A forwarded request's timeout fired: answer it, if no response byte went out yet
        (408 for a stalled body, RFC 9110 §15.5.9; 504 for the upstream, §15.6.5), and log it.
        The connection closes after (RFC 9112 §9.6)."""
        exchange = request.exchange
        reason = None
        if not exchange.response_started:
            timeouts = self.config.timeouts
            if stalled is reader:
                status, reason = 408, f"the request body stalled for {timeouts.client_body:g} s"
            elif stalled is not None:
                status, reason = 504, f"the upstream sent nothing for {timeouts.read:g} s"
            else:
                limit = request.routed.timeout
                status, reason = 504, f"the upstream did not answer within {limit:g} s"
            answer = own_answer(
                status, reason, close=True, head_only=request.head.method == b"HEAD"
            )
            # a client that stopped reading is cut by its send timeout (Connection)
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await conn.send_all(answer)
            exchange.status = status
        self.record(request.head, request.routed, spec, client, reason, exchange, request.started)

    async def _request(
        self,
        reader: EventReader,
        downstream: Http1Downstream,
        head: RequestHead,
        spec: ListenerSpec,
        client: str | None,
        sni: str | None,
        trusted: bool,
        inflight: list[_InFlight],
    ) -> bool:
        """Answer one request; whether the connection may carry another. While a request is
        forwarded it is in ``inflight``, for :meth:`_cut` if a timeout ends the connection."""
        started = time.perf_counter()
        served = self.served
        assert served is not None
        routed = served.route(spec.port, head, tls=spec.tls, sni=sni)
        decision = routed.decision
        keep_alive = head.keep_alive
        exchange = Exchange()
        answer: Answer | None = None
        if decision.status is not None:
            answer = Answer(decision.status, decision.reason)
        else:
            assert self._forwarder is not None
            inflight.append(_InFlight(head, routed, exchange, started))
            try:
                await self._forwarder.forward(
                    client=reader,
                    downstream=downstream,
                    head=head,
                    routed=routed,
                    served=served,
                    proto=b"https" if spec.tls else b"http",
                    client_address=None if client is None else client.encode("latin-1"),
                    trusted=trusted,
                    exchange=exchange,
                )
                keep_alive = keep_alive and exchange.keep_alive
            except Answer as err:
                answer = err
                exchange.upstream = err.upstream or exchange.upstream
                # the body may be half read: the connection cannot carry another request
                keep_alive = False
            except ClientProtocolError as err:
                await downstream.stream.send_all(
                    own_answer(err.error.status, err.error.reason, close=True)
                )
                exchange.status = err.error.status
                keep_alive = False
            finally:
                self.metrics.forwarded(time.perf_counter() - started)
            inflight.clear()  # not reached when a timeout cancels the connection
        if answer is not None:
            if decision.status is not None and keep_alive:
                keep_alive = not head.expect_continue and await _drain(reader)
            await downstream.stream.send_all(
                own_answer(
                    answer.status,
                    answer.reason,
                    close=not keep_alive,
                    location=decision.redirect if decision.status is not None else None,
                    fields=decision.response_fields if decision.status is not None else (),
                    head_only=head.method == b"HEAD",
                )
            )
            exchange.status = answer.status
        reason = None if answer is None else answer.reason
        self.record(head, routed, spec, client, reason, exchange, started)
        return keep_alive

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
        """The access-log line and the request counter of one answered request."""
        if self.access.stream is not None:
            self.access.request(
                method=head.method,
                host=head.host,
                path=head.target,
                route=routed.label,
                client=client,
                reason=reason,
                status=exchange.status,
                upstream=exchange.upstream or None,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        self.metrics.request(listener=spec.port, route=routed.metric, status=exchange.status)


async def _drain(reader: EventReader, limit: int = 64 * 1024) -> bool:
    """Read and drop a request body the proxy answers without; False if it is too long or
    a wait for it exceeds the reader's timeout (then the answer is sent with
    ``Connection: close``). The waits are bounded here, not by the connection's timer: a
    stall ends the body, not the connection, which still gets its answer."""
    seen = 0
    while True:
        event = None
        with trio.move_on_after(reader.read_timeout):
            event = await reader.next(math.inf)
        if type(event) is EndOfMessage:
            return True
        if type(event) is not Data:
            return False  # a stall (no event), an error, or the connection closed
        seen += len(event.data)
        if seen > limit:
            return False
        await trio.lowlevel.checkpoint()  # nothing is sent here: tiny chunks must not hog
