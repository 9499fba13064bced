"""A client's HTTP/2 connection (RFC 9113): the proxy's own protocol machine
(:mod:`coxswain.http2.server`) under the proxy's loop.

How a connection gets here: a TLS client that chose ``h2`` by ALPN, or a cleartext one whose
first bytes are the connection preface (HTTP/2 with prior knowledge, RFC 9113 §3.3). The
``Upgrade: h2c`` dance of RFC 7540 is not offered (RFC 9113 §3.1 deprecates it).

Design:

- **One reader, many streams.** The connection's task reads bytes, hands them to the
  :class:`~coxswain.http2.server.ServerConnection`, and dispatches its events; each request
  is served by a worker task kept between streams (:mod:`.h2_workers`), routed and forwarded
  as an HTTP/1.1 request is (:mod:`coxswain.http2.request`, :mod:`.upstream`, :mod:`.h2_stream`).
  Frames go out through the connection's one writer (:mod:`.h2_writer`), those of many
  streams in one send, in the order they were made.
- **Settings**: at most :data:`MAX_CONCURRENT_STREAMS` streams at once, a header list of at
  most the HTTP/1.1 head limit, 64 KiB stream windows and a 1 MiB connection window: the body
  bytes one connection can make the proxy hold. A header block is at most 64 CONTINUATION
  frames, and HPACK decodes within the header list size (:mod:`coxswain.http2.server`).
- **Validation once.** The protocol machine checks frames only;
  :func:`~coxswain.http2.request.request_head` checks every field. A malformed request resets
  its stream (``PROTOCOL_ERROR``); a ``CONNECT`` is answered 501. Neither touches the other
  streams.
- **Abuse.** A stream reset by the client, a PING and a SETTINGS frame each spend a unit of the
  connection's :class:`~coxswain.http2.budget.Budget`; one overspent is closed with GOAWAY
  ``ENHANCE_YOUR_CALM``. A protocol error closes the connection with the GOAWAY the protocol
  machine chose (an HPACK bomb's is ``ENHANCE_YOUR_CALM``). All are counted
  (``coxswain_http2_goaways_total{reason}``).
- **Timeouts** as on HTTP/1.1: a connection without open streams is closed after
  ``header_timeout`` (and gives way at ``max_connections``, :mod:`.capacity`); each stream has
  its own :class:`~.wire.Timer` for its body, its backend and its client's window, and the
  route's timeout as its deadline. A client whose window stays shut for ``client_send`` is
  disconnected (GOAWAY ``ENHANCE_YOUR_CALM``, counted as ``stalled_window``), as an HTTP/1.1
  client that stops reading is.
- **Draining** (RFC 9113 §6.8): an idle connection gets GOAWAY and closes; one with streams in
  flight gets GOAWAY naming the highest possible stream first, so that the client opens no
  more, then after a PING round trip (at most :data:`DRAIN_PING_BOUND`) GOAWAY naming the last
  stream taken; those finish, then the connection closes.
- **gRPC.** On a GRPCRoute's rule, or for a gRPC call no rule matched, the proxy's own answers
  are gRPC statuses in Trailers-Only form (:mod:`coxswain.route.grpc_status`), and a timeout
  after the response began ends it with ``grpc-status`` trailers rather than a reset: a gRPC
  response ends with its status (gRPC over HTTP/2, PROTOCOL-HTTP2, "Responses").
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from typing import TYPE_CHECKING, Final, Protocol

import trio

from coxswain.http1 import DEFAULT_LIMITS
from coxswain.http2.budget import Budget
from coxswain.http2.events import (
    ConnectionTerminated,
    DataReceived,
    GoAwayReceived,
    PingAcked,
    PingReceived,
    RequestReceived,
    SettingsReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from coxswain.http2.frames import (
    ENHANCE_YOUR_CALM,
    INTERNAL_ERROR,
    MAX_WINDOW,
    NO_ERROR,
    PREFACE,
    PROTOCOL_ERROR,
)
from coxswain.http2.grpc_answer import grpc_trailers
from coxswain.http2.request import CONNECT_REFUSED, RequestHeads, trailer_fields
from coxswain.http2.server import ServerConnection
from coxswain.route.grpc_status import grpc_code
from coxswain.shell.dataplane.downstream import Exchange
from coxswain.shell.dataplane.external_auth import authorized
from coxswain.shell.dataplane.h2_answers import answer_request, in_grpc, own_answer
from coxswain.shell.dataplane.h2_sender import H2Sender
from coxswain.shell.dataplane.h2_stream import H2Body, H2Downstream
from coxswain.shell.dataplane.h2_workers import Workers
from coxswain.shell.dataplane.h2_writer import FrameWriter
from coxswain.shell.dataplane.tries import Answer, ClientProtocolError
from coxswain.shell.dataplane.wire import RECEIVE_SIZE, Timer

if TYPE_CHECKING:
    from coxswain.http1 import RequestHead
    from coxswain.http2.events import Event as H2Event
    from coxswain.route.plan import ListenerSpec
    from coxswain.shell.dataplane.capacity import Capacity
    from coxswain.shell.dataplane.h2_workers import Worker
    from coxswain.shell.dataplane.metrics import Metrics
    from coxswain.shell.dataplane.served import Routed, Served
    from coxswain.shell.dataplane.upstream import Forwarder, Timeouts

__all__ = ["PREFACE", "H2Session", "Proxy"]

MAX_CONCURRENT_STREAMS: Final = 128
STREAM_WINDOW: Final = 64 * 1024
CONNECTION_WINDOW: Final = 1024 * 1024
DRAIN_PING_BOUND: Final = 1.0
"""How long a draining connection waits for its PING's acknowledgement between its two
GOAWAY frames, at most (RFC 9113 §6.8)."""
_DRAIN_PING: Final = b"drain\x00\x00\x00"

log = logging.getLogger("coxswain.proxy")


class _Settings(Protocol):
    @property
    def header_timeout(self) -> float: ...

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def max_body_bytes(self) -> int | None: ...


class Proxy(Protocol):
    """What a connection uses of the proxy (:class:`.server.Proxy`)."""

    served: Served | None
    draining: bool
    drain_started: trio.Event
    metrics: Metrics

    @property
    def config(self) -> _Settings: ...

    @property
    def capacity(self) -> Capacity: ...

    @property
    def forwarder(self) -> Forwarder: ...

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


class _Stream:
    """A stream's request, and what its exchange made, for its end (:meth:`H2Session._end`)."""

    __slots__ = (
        "answer",
        "body",
        "downstream",
        "exchange",
        "head",
        "reset_by_client",
        "routed",
        "started",
        "stream_id",
        "timer",
    )

    def __init__(
        self,
        stream_id: int,
        head: RequestHead,
        body: H2Body,
        downstream: H2Downstream,
        timer: Timer,
    ) -> None:
        self.stream_id = stream_id
        self.head = head
        self.body = body
        self.downstream = downstream
        self.timer = timer
        self.reset_by_client = False
        self.routed: Routed | None = None
        self.exchange = Exchange()
        self.answer: Answer | None = None
        self.started = 0.0


class H2Session(H2Sender):
    """One client's HTTP/2 connection."""

    conn: ServerConnection
    stream: trio.abc.Stream

    def __init__(
        self,
        proxy: Proxy,
        stream: trio.abc.Stream,
        spec: ListenerSpec,
        *,
        client: str | None,
        sni: str | None,
        trusted: bool,
    ) -> None:
        self.stream = stream
        self.conn = ServerConnection(
            max_concurrent_streams=MAX_CONCURRENT_STREAMS,
            initial_window=STREAM_WINDOW,
            connection_window=CONNECTION_WINDOW,
            max_header_list_size=DEFAULT_LIMITS.max_head_bytes,
        )
        self.writer = FrameWriter(self.conn, stream)
        self._windows: dict[int, trio.Event] = {}
        self._ping_acked = trio.Event()
        self._goaway_sent = False
        self.proxy = proxy
        self.spec = spec
        self.client = client
        self._address = None if client is None else client.encode("latin-1")
        self.sni = sni
        self.trusted = trusted
        self._streams: dict[int, _Stream] = {}
        self._heads = RequestHeads()  # the last request's head, for the next identical one
        self._workers: Workers[_Stream] = Workers()
        self._budget = Budget(trio.current_time())
        self._receiving: trio.CancelScope | None = None
        self._idle_wait = False
        self._connection_scope = trio.CancelScope()
        self._stalled = False

    # --- what its streams use (h2_stream.Session) ----------------------------------------------

    def acknowledge(self, stream_id: int, flow: int) -> None:
        """Body bytes were taken: open the client's windows again by as much."""
        if flow:
            self.conn.acknowledge_received_data(flow, stream_id)

    def reset(self, stream_id: int, code: int = INTERNAL_ERROR) -> None:
        """Reset the stream; a closed one stays closed."""
        self.conn.reset_stream(stream_id, code)

    # --- the connection -----------------------------------------------------------------------

    async def run(self, received: bytes) -> None:
        """Serve the connection until it ends; ``received`` are bytes read before the
        protocol was known (the preface, at least in part). The writer outlives the reader and
        the streams, to send what they left (a GOAWAY, a last response)."""
        self.conn.initiate()
        writer = self.writer
        async with trio.open_nursery() as sending:
            sending.start_soon(writer.run)
            try:
                async with trio.open_nursery() as nursery:
                    self._connection_scope = nursery.cancel_scope
                    nursery.start_soon(self._drain)
                    await self._read(nursery, received)
                    nursery.cancel_scope.cancel()  # the client is gone, or was sent GOAWAY idle
                if self._stalled:
                    self._goodbye(ENHANCE_YOUR_CALM)
            finally:
                writer.close()

    async def _read(self, nursery: trio.Nursery, received: bytes) -> None:
        proxy = self.proxy
        data = received
        while True:
            if not data:
                if proxy.draining and not self._streams:
                    self._goodbye(NO_ERROR)
                    return
                received_now = await self._receive()
                if received_now is None:
                    self._goodbye(NO_ERROR)  # idle, drained, or made room
                    return
                if not received_now:
                    return  # the client closed
                data = received_now
            events = self.conn.receive_data(data)
            data = b""
            for event in events:
                if not self._dispatch(nursery, event):
                    proxy.metrics.http2_goaway("enhance_your_calm")
                    self._goodbye(ENHANCE_YOUR_CALM)
                    return
            if self.conn.terminated:
                return
            try:
                # the answers (acknowledgements, window updates) go out; a client whose socket
                # is full is not read further meanwhile; and frames that ask for no answer
                # must not hog the loop: this yields
                await self.flush()
            except trio.BrokenResourceError:
                return  # the connection broke: the client is gone

    async def _receive(self) -> bytes | None:
        """The next bytes (empty: the client closed); None when the connection stayed without
        a stream for ``header_timeout``, or was closed for a drain or for room. The wait is
        bounded so from the start, or from when its last stream ends (:meth:`_idle`), so that
        an idle connection is always bounded; a draining one closes then."""
        scope = trio.CancelScope()
        self._idle_wait = False
        if not self._streams:
            self._idle(scope)
        self._receiving = scope
        data = b""
        try:
            with scope:
                data = bytes(await self.stream.receive_some(RECEIVE_SIZE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""  # the connection broke, or was closed because it took no bytes
        finally:
            self._receiving = None
            if self._idle_wait:
                self.proxy.capacity.working(scope)
        return None if scope.cancelled_caught else data

    def _idle(self, scope: trio.CancelScope) -> None:
        """The wait for bytes in ``scope`` is idle (no stream open): bounded by
        ``header_timeout`` from now, and one the proxy may close to make room."""
        scope.deadline = trio.current_time() + self.proxy.config.header_timeout
        self.proxy.capacity.waiting(scope)
        self._idle_wait = True

    def _goodbye(self, code: int) -> None:
        """GOAWAY, sent by the writer, which outlives the reader (:meth:`run`)."""
        if self._goaway_sent and code == NO_ERROR:
            return  # the draining GOAWAY said it already
        self._goaway_sent = True
        self.conn.close_connection(code)
        self.send_soon()

    async def _drain(self) -> None:
        """On drain or reload, with streams in flight (RFC 9113 §6.8): GOAWAY naming the
        highest possible stream, so that the client opens no more, then, after one PING round
        trip (bounded by :data:`DRAIN_PING_BOUND`), GOAWAY naming the last stream the proxy
        took; requests the client sent meanwhile are served. The reader closes the connection
        once its streams have finished."""
        await self.proxy.drain_started.wait()
        if not self._streams or self._goaway_sent:
            return  # the reader, idle, says goodbye itself
        conn = self.conn
        conn.close_connection(NO_ERROR, MAX_WINDOW)
        conn.ping(_DRAIN_PING)
        with contextlib.suppress(trio.BrokenResourceError):
            await self.flush()
            with trio.move_on_after(DRAIN_PING_BOUND):
                await self._ping_acked.wait()
            if not self._goaway_sent:
                self._goaway_sent = True
                conn.close_connection(NO_ERROR)
                self.send_soon()

    def _dispatch(self, nursery: trio.Nursery, event: H2Event) -> bool:
        """Act on one event; False when the client has overspent its budget."""
        if isinstance(event, DataReceived):
            state = self._streams.get(event.stream_id)
            if state is not None:
                state.body.feed(event.data, event.flow)
            else:
                self.acknowledge(event.stream_id, event.flow)
        elif isinstance(event, RequestReceived):
            self._request(nursery, event)
        elif isinstance(event, StreamEnded):
            state = self._streams.get(event.stream_id)
            if state is not None:
                state.body.end()
        elif isinstance(event, TrailersReceived):
            self._trailers(event)
        elif isinstance(event, WindowUpdated):
            self.open_window(event.stream_id)
        elif isinstance(event, StreamReset):
            state = self._streams.get(event.stream_id)
            if state is not None:
                state.reset_by_client = True
                state.timer.scope.cancel()
            return self._budget.spend(trio.current_time())
        elif isinstance(event, SettingsReceived):
            self.open_window(0)
            return self._budget.spend(trio.current_time())
        elif isinstance(event, PingReceived):
            return self._budget.spend(trio.current_time())
        elif isinstance(event, PingAcked):
            self._ping_acked.set()
        elif isinstance(event, GoAwayReceived):
            log.debug("HTTP/2 connection from %s: GOAWAY %s", self.client, event.error_code)
        elif isinstance(event, ConnectionTerminated):
            reason = (
                "enhance_your_calm" if event.error_code == ENHANCE_YOUR_CALM else "protocol_error"
            )
            self.proxy.metrics.http2_goaway(reason)
            log.info("HTTP/2 connection from %s: %s", self.client, event.reason)
        return True

    def _trailers(self, event: TrailersReceived) -> None:
        state = self._streams.get(event.stream_id)
        if state is None:
            return
        trailers = trailer_fields(event.headers)
        if isinstance(trailers, str):
            self.reset(event.stream_id, PROTOCOL_ERROR)
            state.reset_by_client = True  # nothing more is sent on it
            state.timer.scope.cancel()
            return
        state.body.end(trailers)

    def _request(self, nursery: trio.Nursery, event: RequestReceived) -> None:
        stream_id = event.stream_id
        ended = event.ended
        head = self._heads.head(event.headers, ended=ended)
        if isinstance(head, str):
            if head == CONNECT_REFUSED:
                own_answer(self.conn, stream_id, 501, head, False)
                self.send_soon()
            else:
                log.info("HTTP/2 stream %d from %s malformed: %s", stream_id, self.client, head)
                self.reset(stream_id, PROTOCOL_ERROR)
            return
        proxy = self.proxy
        timeouts = proxy.config.timeouts
        worker = self._workers.idle()
        timer = Timer(proxy.forwarder.watchdog) if worker is None else worker.timer
        state = _Stream(
            stream_id,
            head,
            H2Body(
                self,
                stream_id,
                timer,
                ended=ended,
                read_timeout=timeouts.client_body,
                limit=proxy.config.max_body_bytes,
            ),
            H2Downstream(self, stream_id, timer, send_timeout=timeouts.client_send),
            timer,
        )
        self._streams[stream_id] = state
        if worker is None:
            worker = self._workers.new(timer, state)
            nursery.start_soon(self._work, worker, name="coxswain h2 streams")  # no name to format
        else:
            self._workers.hand(worker, state)

    async def _work(self, worker: Worker[_Stream]) -> None:
        """Serve streams one after another (:mod:`.h2_workers`) inside the worker's timer's
        scope, until one is cut (the scope caught a cancellation) or its deadline passed: the
        timer is then spent and replaced."""
        job: _Stream | None = self._workers.first(worker)
        while job is not None:
            timer = worker.timer
            try:
                with timer.scope:
                    while job is not None:
                        await self._exchange(job)
                        ended, job = job, None
                        self._end(ended)  # which forgets it, even when it raises
                        if timer.scope.cancel_called:
                            break  # cancelled after its exchange (a deadline): spent
                        job = await self._workers.park(worker)
                    else:
                        return  # enough workers are parked: this one ends
            finally:
                if job is not None and not timer.scope.cancelled_caught:
                    timer.disarm()  # an error, or the connection's end: forget the stream
                    self._finish(job.stream_id, job)
            if job is not None:  # cut
                self._end(job)
            worker.timer = Timer(self.proxy.forwarder.watchdog)
            job = await self._workers.park(worker)

    async def _exchange(self, state: _Stream) -> None:
        """Route and forward one stream's request, or answer it; fills ``state``."""
        head = state.head
        proxy = self.proxy
        state.started = time.perf_counter()
        served = proxy.served
        assert served is not None
        spec = self.spec
        routed = state.routed = served.route(
            spec.port, head, tls=spec.tls, sni=self.sni, client=self.client
        )
        if routed.decision.external_auth is not None:  # ``auth-url``: its answer decides
            routed, head = await authorized(
                proxy.forwarder,
                served,
                routed,
                head,
                scheme=b"https" if spec.tls else b"http",
                client=self.client,
            )
            state.routed, state.head = routed, head
        decision = routed.decision
        if decision.checks is not None and decision.checks.max_body:
            state.body.limit(decision.checks.max_body)  # proxy-body-size, counted as DATA come
        exchange = state.exchange
        answer: Answer | None = None
        if decision.status is not None:
            answer = Answer(decision.status, decision.reason)
        else:
            try:
                await proxy.forwarder.forward(
                    client=state.body,
                    downstream=state.downstream,
                    head=head,
                    routed=routed,
                    served=served,
                    proto=b"https" if spec.tls else b"http",
                    client_address=self._address,
                    trusted=self.trusted,
                    exchange=exchange,
                )
            except Answer as err:
                exchange.upstream = err.upstream or exchange.upstream
                if exchange.response_started:
                    self.reset(state.stream_id)
                else:
                    answer = err
            except ClientProtocolError as err:
                answer = Answer(err.error.status, err.error.reason)
            proxy.metrics.forwarded(time.perf_counter() - state.started)
        if answer is not None:
            answer_request(self.conn, state.stream_id, answer.status, answer.reason, decision, head)
            self.send_soon()
            exchange.status = answer.status
            state.answer = answer

    def _end(self, state: _Stream) -> None:
        """The stream's exchange ended, or its scope cut it: the answer to a cut, the
        access-log line, and the stream forgotten."""
        try:
            routed = state.routed
            assert routed is not None, "routed before its first checkpoint"
            head, exchange = state.head, state.exchange
            reason = None if state.answer is None else state.answer.reason
            if state.timer.scope.cancelled_caught and not state.reset_by_client:
                reason = self._cut(state, head, routed)
            elif state.reset_by_client:
                reason = "the client reset the stream"
            self.proxy.record(head, routed, self.spec, self.client, reason, exchange, state.started)
        finally:
            state.timer.disarm()
            self._finish(state.stream_id, state)

    def _cut(self, state: _Stream, head: RequestHead, routed: Routed) -> str:
        """A timeout ended the stream: answer 408 or 504 if no response byte went out, else
        reset it (as the HTTP/1.1 connection does, :mod:`.server`). A gRPC call is answered
        4 DEADLINE_EXCEEDED instead, in trailers when its response had begun: a gRPC response
        ends with its status either way (gRPC over HTTP/2, "Responses")."""
        timeouts = self.proxy.config.timeouts
        stalled = state.timer.stalled
        if stalled is state.body:
            status, reason = 408, f"the request body stalled for {timeouts.client_body:g} s"
        elif stalled is state.downstream:
            # a client that stops reading is disconnected, as on HTTP/1.1: the connection,
            # not only the stream, since its other streams could stall the same way
            self.proxy.metrics.http2_goaway("stalled_window")
            self._stalled = True
            self._connection_scope.cancel()
            return f"the client's window stayed shut for {timeouts.client_send:g} s"
        elif stalled is not None:
            status, reason = 504, f"the upstream sent nothing for {timeouts.read:g} s"
        elif routed.timeout < math.inf:
            status, reason = 504, f"the upstream did not answer within {routed.timeout:g} s"
        else:  # the only other deadline (coxswain.route.grpc_timeout)
            status, reason = 504, "the call's grpc-timeout passed"
        stream_id, exchange = state.stream_id, state.exchange
        code = grpc_code(status) if in_grpc(routed.decision, head) else None
        if exchange.response_started and code is not None:
            trailers = grpc_trailers(code, reason)
            self.conn.send_headers(stream_id, trailers, end_stream=True)
            self.send_soon()
        elif exchange.response_started:
            self.reset(stream_id)
            self.send_soon()
        else:
            own_answer(self.conn, stream_id, status, reason, head.method == b"HEAD", grpc=code)
            self.send_soon()
            exchange.status = status
        return reason

    def _finish(self, stream_id: int, state: _Stream) -> None:
        """The stream's task ended: forget it, give back the window of DATA nobody read, and
        stop a client still sending a body nobody will read (RFC 9113 §8.1: RST_STREAM with
        NO_ERROR after a complete response)."""
        del self._streams[stream_id]
        self._windows.pop(stream_id, None)
        unread = state.body.unread()
        if unread:
            self.acknowledge(stream_id, unread)
        if not state.body.ended and not state.reset_by_client:
            self.reset(stream_id, NO_ERROR)
        if not self._streams and self._receiving is not None:
            if self.proxy.draining:
                self._receiving.cancel()  # the reader says goodbye
            else:
                self._idle(self._receiving)
