"""The upstream half of a forwarded request: backend choice, connect, relay both bodies.

Rules (docs/architecture.md, "Data-plane rules"):

- **Backend.** Chosen at random by weight among the decision's backends (Gateway API
  ``backendRefs[].weight``); zero weights never chosen; an invalid choice is answered 500, as
  the Gateway API asks for a reference that cannot be resolved. Endpoints of the backend are
  taken round-robin; another endpoint is tried only when *connecting* failed, since nothing of
  the request has been sent then (a retry after bytes were sent could repeat a non-idempotent
  request, RFC 9110 §9.2.2).
- **Request.** The head carries ``forwarded_headers`` (hop-by-hop fields removed, RFC 9110
  §7.6.1; ``X-Forwarded-*``), then the rule's and the backend's header edits. The body is relayed
  piece by piece as the codec yields it, re-framed as it came (sized stays sized, chunked stays
  chunked, RFC 9112 §6, §7.1): never a whole body in memory, and ``send_all`` gives
  backpressure. ``Expect: 100-continue`` is answered by the proxy itself before it reads the
  body (RFC 9110 §10.1.1), so the field is not forwarded. Upstream connections are reused
  through :mod:`.pool` after complete keep-alive exchanges.
- **Response.** Interim 1xx responses are dropped. A sized response keeps its
  ``Content-Length`` (no re-chunking); chunked stays chunked; a close-delimited body is chunked
  for an HTTP/1.1 client, or close-delimited for an HTTP/1.0 one (RFC 9112 §6.3 rule 8).
  Hop-by-hop fields are removed and the response header edits applied.
- **Upgrade** (RFC 9110 §7.8, WebSocket). A request offering ``websocket`` is forwarded with
  ``Connection: upgrade`` and ``Upgrade: websocket``; on a 101 to websocket the proxy relays it
  and then copies bytes both ways until either side closes or both stay silent for the tunnel
  idle timeout (:mod:`.tunnel`; the route's timeout, if any, still bounds the whole
  exchange). Any other answer is an ordinary response and HTTP/1.1 carries on.
  Any other offer (``h2c`` among them) is forwarded without its upgrade
  (``route.forward.tunnelled_upgrade`` says why). A 101 nobody asked for, or to another
  protocol than websocket, is 502.
- **Backend TLS** (BackendTLSPolicy, GEP-1897). A backend carrying ``tls`` is reached over TLS,
  its certificate verified (:mod:`.upstream_tls`); a failed handshake is a failed connection
  (the next endpoint is tried, else 502). A backend whose policy cannot be honoured is invalid:
  answered 500 with the policy's problem, never sent plaintext. Plaintext backends pay one
  attribute test.
- **Mirrors** (``RequestMirror``) get a copy of the request, fire-and-forget (:mod:`.mirror`).
- **Retries** (Gateway API ``HTTPRouteRetry``). Under a rule's ``retry``, a request without a
  body (nothing of it is lost by sending it again) is tried up to ``attempts`` more times
  when a try fails before its response head: a connection error, a broken or malformed
  response, a backend timeout (``backendRequest``, then a bound of each try); or when the
  response's status is one of ``codes`` (that response is dropped). Each retry waits the
  backoff, doubled at each retry up to ten times it, and picks the next endpoint in turn.
  The last try's response is relayed whatever its status; when the last try failed too, the
  answer is its error, 503 for a broken connection. ``request`` bounds every try together.
  A request with a body, or an upgrade, is tried once.
- **Timeouts** (:class:`Timeouts`): connecting to one endpoint, each wait for the upstream's
  bytes, each wait for the client's body bytes, each wait for either peer to take bytes
  (:meth:`.Connection.bound_sends`), a silent tunnel; the route's ``request`` and
  ``backend_request`` timeouts (the smaller) bound the whole exchange, except under a retry
  policy (above). An Ingress path's ``proxy-connect-timeout``, ``proxy-read-timeout`` and
  ``proxy-send-timeout`` (``Decision.timeouts``) replace the proxy's own for its requests;
  the send bound holds while the request is sent, and the connection is pooled again with
  the proxy's own.
- **Errors.** Before the response head reached the client, a failure becomes an answer of the
  proxy: 502 when no endpoint accepted the connection or the upstream broke HTTP, 504 when the
  route's timeout expired, the upstream stalled (sending or taking bytes), or every endpoint
  timed out connecting, 408
  when the client's body stalled. After that, the client connection is closed, the only
  signal left (RFC 9112 §9.6).
"""

from __future__ import annotations

import math
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import trio

from coxswain.compile.snapshot import BackendProtocol
from coxswain.http1 import (
    NEED_DATA,
    Data,
    EndOfMessage,
    HeadMemo,
    ProtocolError,
    RequestFramer,
    ResponseHead,
    ResponseParser,
    frame_chunk,
    frame_last_chunk,
)
from coxswain.route.cors import with_cors
from coxswain.route.forward import (
    apply_edits,
    forwarded_headers,
    switched_to_websocket,
    tunnelled_upgrade,
)
from coxswain.route.grpc_timeout import grpc_timeout
from coxswain.route.relay import relayed_fields
from coxswain.shell.dataplane.affinity import PinnedBackend
from coxswain.shell.dataplane.balance import RoundRobin, pick_backend
from coxswain.shell.dataplane.downstream import Exchange, Http1Downstream
from coxswain.shell.dataplane.pool import ConnectFailed, connect
from coxswain.shell.dataplane.tries import (
    NO_SCOPE,
    Answer,
    ClientProtocolError,
    Tries,
    another_try,
)
from coxswain.shell.dataplane.tunnel import Idle, tunnel
from coxswain.shell.dataplane.wire import EventReader, Timer, Watchdog, http_date

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Sequence

    from coxswain.compile.snapshot import Backend, Endpoint, HeaderEdits, Retry
    from coxswain.http1 import HeadCodec, RequestHead
    from coxswain.route import Decision
    from coxswain.route.forward import Fields
    from coxswain.shell.dataplane.downstream import BodySource, Downstream
    from coxswain.shell.dataplane.mirror import Mirrors, Tee
    from coxswain.shell.dataplane.pool import Upstream, UpstreamPool
    from coxswain.shell.dataplane.relay_h2 import H2Relay
    from coxswain.shell.dataplane.served import Routed, Served
    from coxswain.shell.dataplane.upstream_tls import Origination

__all__ = [
    "Answer",
    "Forwarder",
    "Timeouts",
]

_IDEMPOTENT: Final = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})
_SPARE_READERS: Final = 256
_H2C: Final = BackendProtocol.H2C
_BACKOFF_CAP: Final = 10  # the longest wait between retries, in backoffs


def _edit(served: Served, headers: Fields, *edits: HeaderEdits | None) -> Fields:
    """The headers with the edits applied: a new list when there are edits (callers that
    append to the result pass a list of their own).

    Raises:
        ValueError: an edit cannot be written in a header field.
    """
    for edit in edits:
        if edit is not None:
            headers = apply_edits(headers, served.edits(edit))
    return headers


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """How long the proxy waits on each side when the route sets no tighter bound.

    ``connect``: for one endpoint to accept a connection (then the next is tried).
    ``read``: between two reads of the upstream's response (nginx ``proxy_read_timeout``).
    ``client_body``: between two reads of the client's request body (nginx
    ``client_body_timeout``); a stalled body is answered 408 (RFC 9110 §15.5.9).
    ``send``: between two writes to the upstream (nginx ``proxy_send_timeout``); an upstream
    that stops taking the request is answered 504.
    ``client_send``: between two writes to the client (nginx ``send_timeout``); a client that
    stops reading the response is disconnected, and so is its upstream connection.
    ``tunnel_idle``: a WebSocket tunnel with no byte either way for this long is closed.
    ``mirror``: a whole mirrored exchange (:mod:`.mirror`); one still running is dropped.
    ``linger``: reading what a client still sends after an answer that closes its connection
    (``_linger`` in :mod:`.http1_connection`, RFC 9112 §9.6; nginx ``lingering_time``).
    All but ``connect``, ``mirror`` and ``linger`` are kept to within a tenth by
    :class:`~.wire.Watchdog`.
    """

    connect: float = 10.0
    read: float = 60.0
    client_body: float = 60.0
    send: float = 60.0
    client_send: float = 60.0
    tunnel_idle: float = 3600.0
    mirror: float = 30.0
    linger: float = 5.0


@dataclass(slots=True, kw_only=True)
class Forwarder:
    """What every forwarded request shares: endpoint turns, the pool, timeouts, mirrors.

    With a ``pool``, upstream connections are reused (:mod:`.pool`); without, each exchange
    opens one and sends ``Connection: close``. The ``watchdog`` times the waits for either
    peer (:class:`~.wire.Watchdog`).
    """

    codec: HeadCodec
    rng: random.Random
    watchdog: Watchdog
    timeouts: Timeouts = Timeouts()
    round_robin: RoundRobin = field(default_factory=RoundRobin)
    pool: UpstreamPool | None = None
    h2: H2Relay | None = None  # HTTP/2 backends (:mod:`.relay_h2`)
    mirrors: Mirrors | None = None
    pass_server: bool = False  # keep the upstream's Server (coxswain.route.relay, rule 3)
    count_retry: Callable[[str], None] | None = None  # by reason: status, connection
    # response readers left clean by a complete keep-alive exchange, for the next exchange
    # (cheaper than building a parser and its reader: ``bench/proxy.py parts``)
    _readers: list[tuple[EventReader, ResponseParser]] = field(default_factory=list)
    # the last response head parsed, shared by the readers: the next identical one is not
    # parsed again (coxswain.http1.parser.HeadMemo)
    _heads: HeadMemo = field(default_factory=HeadMemo)
    _framer: RequestFramer = field(default_factory=RequestFramer)  # the last request head

    async def forward(
        self,
        *,
        client: BodySource,
        downstream: Downstream,
        head: RequestHead,
        routed: Routed,
        served: Served,
        proto: bytes,
        client_address: bytes | None,
        exchange: Exchange,
        trusted: bool = False,
    ) -> None:
        """Forward one request whose head was read; fills ``exchange`` as it goes.

        ``trusted``: the client is a trusted proxy (``route.forward``, rule 3).

        Raises:
            Answer: a failure before the response head reached the client.
            ClientProtocolError: the request body broke HTTP/1.1.
        """
        decision = routed.decision
        backend = pick_backend(routed.backends, routed.weights, self.rng)
        if backend is None or not backend.valid:
            problem = None if backend is None or backend.tls is None else backend.tls.problem
            raise Answer(500, problem or "the chosen backend is invalid")
        key = backend.endpoints_key
        endpoints = served.endpoints.get(key, ())
        if not endpoints:
            raise Answer(503, f"backend {key} has no ready endpoints")
        origination = None
        if backend.tls is not None:
            try:
                origination = served.originations.get(backend.tls)
            except ssl.SSLError as err:
                raise Answer(502, f"TLS to backend {key} cannot be set up: {err}") from err
        action = decision.action
        timeout = routed.timeout
        if routed.host is None:
            raise Answer(500, f"the forwarded Host {decision.host!r} is not Latin-1")
        if routed.target is None:
            raise Answer(500, f"the forwarded path {decision.path!r} is not Latin-1")
        base = forwarded_headers(
            head.headers,
            host=routed.host,
            proto=proto,
            client=client_address,
            named=head.connection,
            authority=None if decision.authority is None else decision.authority.encode("latin-1"),
            trusted=trusted,
        )
        headers = base
        try:  # most rules and backends edit nothing: no call then
            if action is not None and action.request_headers is not None:
                headers = base = _edit(served, base, action.request_headers)
            if backend.request_headers is not None:
                headers = _edit(served, base, backend.request_headers)
        except ValueError as err:
            raise Answer(500, f"the request cannot be forwarded as configured: {err}") from err
        upgrade = None if head.upgrade is None else tunnelled_upgrade(head.upgrade)
        h2 = backend.protocol is _H2C
        if h2:
            upgrade = None  # over HTTP/2 it would need RFC 8441's CONNECT: forwarded as plain
        retry = action.retry if action is not None else None
        per_try = math.inf
        if retry is not None:
            if head.chunked or head.content_length or upgrade is not None:
                retry = None  # a body streams through once; a tunnel is never tried again
            elif action is not None:  # the request timeout bounds every try together
                timeout = action.request_timeout or math.inf
                per_try = action.backend_timeout or math.inf
        if h2:  # a gRPC call's deadline bounds it as a route's timeout does, the smaller wins
            timeout = min(timeout, grpc_timeout(head.headers))
        tee = None
        if action is not None and action.mirrors and self.mirrors is not None and not upgrade:
            tee = self.mirrors.fire(
                action.mirrors,
                served,
                head,
                host=routed.host,
                target=routed.target,
                base=base,
                order=self.round_robin.order,
            )
        # The client connection's timer bounds the exchange: each wait for either peer, and
        # the route's timeout as its scope's deadline. When it fires, the cancellation ends
        # the connection and its owner answers 408/504 outside the scope (.http1_connection).
        timer = client.timer
        assert timer is not None, "the client's reader carries its connection's timer"
        # a sticky session's endpoints come in their failover order (.affinity)
        pinned = isinstance(backend, PinnedBackend)
        ordered = endpoints if pinned else self.round_robin.order(key, endpoints)
        if timeout < math.inf:
            timer.scope.deadline = trio.current_time() + timeout
        try:
            if h2:
                assert self.h2 is not None, "a proxy serving HTTP/2 backends has their relay"
                await self.h2.relay(
                    self,
                    backend=backend,
                    client=client,
                    decision=decision,
                    downstream=downstream,
                    endpoints=ordered,
                    exchange=exchange,
                    head=head,
                    headers=headers,
                    host=routed.host,
                    per_try=per_try,
                    retry=retry,
                    served=served,
                    target=routed.target,
                    tee=tee,
                    timer=timer,
                    tls=origination,
                )
                return
            await self._relay(
                client=client,
                downstream=downstream,
                head=head,
                upgrade=upgrade,
                headers=headers,  # the mirrors' heads were framed from ``base`` already
                served=served,
                decision=decision,
                target=routed.target,
                backend=backend,
                endpoints=ordered,
                exchange=exchange,
                tee=tee,
                timer=timer,
                retry=retry,
                per_try=per_try,
                tls=origination,
            )
        finally:
            timer.disarm()  # when the exchange ended otherwise while a reader waited
            if timeout < math.inf or per_try < math.inf:
                timer.scope.deadline = math.inf
            if tee is not None:
                tee.abort()  # a no-op once the body was sent whole

    async def _relay(
        self,
        *,
        client: BodySource,
        downstream: Downstream,
        head: RequestHead,
        upgrade: bytes | None,
        headers: Fields,
        served: Served,
        decision: Decision,
        target: bytes,
        backend: Backend,
        endpoints: Sequence[Endpoint],
        exchange: Exchange,
        tee: Tee | None,
        timer: Timer,
        retry: Retry | None = None,
        per_try: float = math.inf,
        tls: Origination | None = None,
    ) -> None:
        """Send the request and relay the answer, trying again under ``retry`` (a request
        without a body only): after a connection error, a ``per_try`` timeout before the
        response head, or a response whose status the rule retries. ``tls``: the backend is
        reached over TLS (:mod:`.upstream_tls`)."""
        pool = self.pool
        if head.chunked:
            headers.append((b"transfer-encoding", b"chunked"))
        if upgrade is not None:  # RFC 9110 §7.8: asked again of the upstream, hop by hop
            headers.extend([(b"connection", b"upgrade"), (b"upgrade", upgrade)])
        elif pool is None:
            headers.append((b"connection", b"close"))
        try:  # every field came from the parser or passed Served.edits: only the line is checked
            request_head = self._framer.frame(head.method, target, headers)
        except ValueError as err:  # a rewrite or header edit of the snapshot made it unsendable
            raise Answer(500, f"the request cannot be forwarded as configured: {err}") from err
        has_body = head.chunked or bool(head.content_length)
        # a reused connection the upstream closed meanwhile may be retried once on a new one
        # when repeating the request is safe (RFC 9112 §9.3.1): idempotent, no body sent; under
        # a retry policy that retry is one of its own (the upstream may have had the request)
        may_retry = not has_body and head.method in _IDEMPOTENT
        body_read = False
        idle_ok = True
        tries = (
            None if retry is None else Tries(retry, per_try, back_off=self.back_off, timer=timer)
        )
        connect_within, read_timeout = self.timeouts.connect, self.timeouts.read
        send_timeout = 0.0  # the connection's own bound, self.timeouts.send
        if decision.timeouts is not None:  # an Ingress path's (route.decision)
            connect_within = decision.timeouts[0] or connect_within
            read_timeout = decision.timeouts[1] or read_timeout
            send_timeout = decision.timeouts[2]
        while True:
            upstream: Upstream | None = None
            reusable = False
            failure: Answer | None = None
            response: ResponseHead | None = None
            try:
                with NO_SCOPE if tries is None else tries.begin() as scope:
                    try:
                        upstream, endpoint, reused = await connect(
                            endpoints,
                            pool if idle_ok else None,
                            within=connect_within,
                            tls=tls,
                        )
                    except ConnectFailed as err:
                        failure = Answer(504 if err.timed_out else 502, str(err))
                    else:
                        if send_timeout:  # for this request only: reset once it is sent
                            upstream.bound_sends(self.watchdog, send_timeout)
                        elif not reused:
                            upstream.bound_sends(self.watchdog, self.timeouts.send)
                        exchange.upstream = f"{endpoint[0]}:{endpoint[1]}"
                        try:
                            await upstream.send_all(request_head)
                            if not body_read:  # a retry: the (empty) body was read already
                                if head.expect_continue:
                                    await downstream.send_continue()
                                if has_body or tee is not None:
                                    await _send_body(
                                        client, upstream, chunked=head.chunked, tee=tee
                                    )
                                else:  # no body: the parser has the request's end already
                                    client.skip_end()
                                body_read = True
                            if send_timeout:  # pooled again with the proxy's own bound
                                upstream.bound_sends(self.watchdog, self.timeouts.send)
                            reader, parser = self._response_reader(upstream, timer)
                            reader.read_timeout = read_timeout
                            parser.expect_response(head.method)
                            response = await _final_head(reader, upgrading=upgrade is not None)
                        except (trio.BrokenResourceError, trio.ClosedResourceError, Answer) as err:
                            if upstream.stalled:  # it stopped taking the request (§15.6.5)
                                failure = Answer(504, f"the upstream {err}", exchange.upstream)
                            elif reused and may_retry and retry is None:
                                idle_ok = False  # the retry opens a new connection
                                continue
                            elif isinstance(err, Answer):
                                failure = err
                            else:
                                failure = Answer(
                                    502,
                                    f"the upstream connection broke: {err}",
                                    exchange.upstream,
                                )
                if (failure is not None or tries is not None) and await another_try(
                    tries, failure, response, scope, exchange.upstream
                ):  # most exchanges are relayed without that call
                    continue
                assert response is not None
                assert upstream is not None
                if response.status == 101:
                    if not switched_to_websocket(response.headers):
                        raise Answer(
                            502, "the upstream switched to another protocol", exchange.upstream
                        )
                    exchange.status = 101
                    exchange.response_started = True
                    exchange.keep_alive = False
                    idle = Idle(self.watchdog, self.timeouts.tunnel_idle)
                    # only an HTTP/1.1 client offers an upgrade (tunnelled_upgrade)
                    assert isinstance(client, EventReader)
                    assert isinstance(downstream, Http1Downstream)
                    stream = downstream.stream
                    await tunnel(client, stream, reader, upstream, response, idle=idle)
                    return
                headers = _response_fields(
                    response, served, backend, decision, pass_server=self.pass_server
                )
                if isinstance(backend, PinnedBackend):  # the cookie of the endpoint that served
                    headers = backend.served_fields(exchange.upstream, headers)
                reusable = await downstream.respond(reader, head, response, headers, exchange)
                # reused only clean: bytes after the response (a body on a HEAD answer, say)
                # would be read as the start of the next exchange's response
                reusable = reusable and parser.next_event() is NEED_DATA and not parser.buffered
            finally:
                if upstream is not None:
                    if reusable and pool is not None:
                        pool.give(endpoint, upstream)
                        if len(self._readers) < _SPARE_READERS:
                            reader.timer = None
                            self._readers.append((reader, parser))
                    else:
                        await trio.aclose_forcefully(upstream)
            return

    async def back_off(self, retry: Retry, retried: int, reason: str) -> int:
        """Wait before retry number ``retried + 1`` and count it; that number. The wait starts
        at the rule's backoff and doubles, up to ten times it (HTTPRouteRetry: never less than
        the backoff)."""
        if self.count_retry is not None:
            self.count_retry(reason)
        await trio.sleep(min(retry.backoff * 2**retried, retry.backoff * _BACKOFF_CAP))
        return retried + 1

    def response_fields(
        self, response: ResponseHead, served: Served, backend: Backend, decision: Decision
    ) -> Fields:
        """The response's fields as the client gets them (:func:`_response_fields`).

        Raises:
            Answer: a header edit of the snapshot cannot be sent (500).
        """
        return _response_fields(response, served, backend, decision, pass_server=self.pass_server)

    def _response_reader(
        self, upstream: Upstream, timer: Timer
    ) -> tuple[EventReader, ResponseParser]:
        """A reader for the upstream's response and its parser: a spare pair, the parser
        waiting for a head with nothing buffered, or a new one."""
        if self._readers:
            reader, parser = self._readers.pop()
            reader.stream = upstream
            reader.timer = timer
            return reader, parser
        parser = ResponseParser(self.codec, memo=self._heads)
        reader = EventReader(upstream, parser, read_timeout=self.timeouts.read, timer=timer)
        return reader, parser


async def _send_body(
    client: BodySource, upstream: trio.abc.SendStream, *, chunked: bool, tee: Tee | None
) -> None:
    while True:
        event = await client.next()
        if type(event) is Data:
            if tee is not None:
                tee.data(event.data)
            await upstream.send_all(frame_chunk(event.data) if chunked else event.data)
        elif type(event) is EndOfMessage:
            if chunked:
                await upstream.send_all(frame_last_chunk(event.trailers))
            if tee is not None:
                tee.end(event.trailers)
            return
        elif type(event) is ProtocolError:
            raise ClientProtocolError(event)
        else:  # pragma: no cover - the request parser yields only these inside a body
            raise ClientProtocolError(ProtocolError(400, f"unexpected {event!r} in a body"))


async def _final_head(reader: EventReader, *, upgrading: bool) -> ResponseHead:
    while True:
        event = await reader.next()
        if type(event) is ResponseHead:
            if event.status < 200 and event.status != 101:
                # interim responses: the proxy answered Expect itself. Nothing is sent for
                # them, so this loop yields itself (a receive that finds bytes does not,
                # .connection): an upstream flooding 1xx must not starve the others
                await trio.lowlevel.checkpoint()
                continue
            if event.status == 101 and not upgrading:
                raise Answer(502, "the upstream switched protocols unasked")
            return event
        if type(event) is ProtocolError:
            raise Answer(502, event.reason)
        raise Answer(502, f"the upstream sent {event!r} instead of a response")


def _response_fields(
    response: ResponseHead,
    served: Served,
    backend: Backend,
    decision: Decision,
    *,
    pass_server: bool,
) -> Fields:
    """The response's fields as the client gets them (:mod:`coxswain.route.relay`), with the
    CORS fields and the rule's and backend's edits.

    Raises:
        Answer: a header edit of the snapshot cannot be sent (500).
    """
    headers = relayed_fields(
        response.headers, response.connection, http_date(), pass_server=pass_server
    )
    if decision.response_fields:  # a CORS request's (coxswain.route.cors, rule 2)
        headers = with_cors(headers, decision.response_fields)
    edits = None if decision.action is None else decision.action.response_headers
    if edits is None and backend.response_headers is None:
        return headers  # most rules and backends edit nothing: no call then
    try:
        return _edit(served, headers, edits, backend.response_headers)
    except ValueError as err:  # a header edit of the snapshot cannot be sent
        raise Answer(500, f"the response cannot be relayed as configured: {err}") from err
