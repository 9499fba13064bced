"""A client's HTTP/1.1 connection: requests in turn until it must end (RFC 9112).

The loop over requests (keep-alive, RFC 9112 §9.3): read a head, ``select``, answer or forward
(:mod:`.upstream`), and log one JSON line. A ProtocolError from the codec (400, 413, 431, 501)
is answered and the connection closed (RFC 9112 §9.6); no input ends anything but its own
connection. A client idle between requests or slow to send a head is closed after
``header_timeout``; at ``max_connections`` the one idle longest is closed for room
(:mod:`.capacity`). A forwarded request a timeout cuts is answered (408 or 504) and logged after
the connection's scope; a connection that closes while the client may still be sending lingers
(RFC 9112 §9.6). The HTTP/2 counterpart is :mod:`.h2_connection`; :mod:`.server` accepts the
connections and picks one of the two.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

import trio

from coxswain.http1 import (
    PAUSED,
    Data,
    EndOfMessage,
    HeadCodec,
    Limits,
    ProtocolError,
    RequestHead,
    RequestParser,
)
from coxswain.shell.dataplane.downstream import Exchange, Http1Downstream
from coxswain.shell.dataplane.external_auth import authorized
from coxswain.shell.dataplane.h2_connection import Proxy as ConnectionProxy
from coxswain.shell.dataplane.tries import Answer, ClientProtocolError
from coxswain.shell.dataplane.wire import RECEIVE_SIZE, EventReader, Timer, own_answer

if TYPE_CHECKING:
    from coxswain.route.plan import ListenerSpec
    from coxswain.shell.dataplane.access_log import AccessLog
    from coxswain.shell.dataplane.served import Routed
    from coxswain.shell.dataplane.upstream import Timeouts

__all__ = ["Proxy", "serve_http1"]

_HEAD_WAIT: Final = object()
"""What the connection's timer names while the connection waits for a request head."""


class _Settings(Protocol):
    @property
    def header_timeout(self) -> float: ...

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def max_body_bytes(self) -> int | None: ...


class Proxy(ConnectionProxy, Protocol):
    """What an HTTP/1.1 connection uses of the proxy (:class:`.server.Proxy`): what an HTTP/2
    one does, and the head codec, the body limit and the access log of protocol errors."""

    access: AccessLog

    @property
    def config(self) -> _Settings: ...

    @property
    def codec(self) -> HeadCodec: ...


@dataclass(slots=True)
class _InFlight:
    """A request being forwarded: what answering and logging it takes if a timeout cuts it."""

    head: RequestHead
    routed: Routed
    exchange: Exchange
    started: float


async def serve_http1(
    proxy: Proxy,
    conn: trio.abc.Stream,
    spec: ListenerSpec,
    client: str | None,
    sni: str | None,
    trusted: bool,
    received: bytes,
) -> None:
    """Serve one HTTP/1.1 connection until it must end; ``received`` are bytes read before the
    protocol was known (part of the first request, on cleartext)."""
    # One timer for the connection rather than a cancel scope per request or per wait
    # (a watch costs a fraction of a scope: bench/proxy.py parts): armed while waiting for a
    # request head (draining cancels it then), for each piece of a request body, and for
    # each wait on the upstream; its scope's deadline is a route's timeout. Any of them
    # firing ends the connection; a request cut short is answered and logged after the
    # scope (_cut).
    timer = Timer(proxy.forwarder.watchdog)
    limits = Limits(max_body_bytes=proxy.config.max_body_bytes)
    reader = EventReader(
        conn,
        RequestParser(proxy.codec, limits=limits),
        read_timeout=proxy.config.timeouts.client_body,
        timer=timer,
    )
    if received:
        reader.parser.receive_data(received)
    inflight: list[_InFlight] = []  # the forwarded request a timeout may cut, if any
    with timer.scope:
        try:
            await _exchanges(proxy, reader, conn, spec, client, sni, trusted, inflight)
        finally:
            proxy.capacity.working(timer.scope)
            timer.disarm()
    if timer.scope.cancelled_caught and inflight:
        await _cut(proxy, conn, spec, client, inflight[0], reader, timer.stalled)
    if reader.parser.mid_message:
        await _linger(proxy, conn)


async def _exchanges(
    proxy: Proxy,
    reader: EventReader,
    conn: trio.abc.Stream,
    spec: ListenerSpec,
    client: str | None,
    sni: str | None,
    trusted: bool,
    inflight: list[_InFlight],
) -> None:
    """Requests and their answers, until the connection must end."""
    header_timeout = proxy.config.header_timeout
    downstream = Http1Downstream(conn)
    timer = reader.timer
    assert timer is not None
    room = proxy.capacity
    while not proxy.draining:
        timer.arm(_HEAD_WAIT, header_timeout)
        room.waiting(timer.scope)  # draining, or room for another, may close it
        event = await reader.next(math.inf)  # bounded by the timer instead
        room.working(timer.scope)
        timer.disarm()
        if proxy.draining or timer.stalled is not None:
            return  # drained, or timed out, just as the head arrived: the scope is
            # cancelled, so nothing more can be done on this connection
        if event is PAUSED:  # the upgrade was not tunnelled: carry on with HTTP/1.1
            reader.parser.resume()
            continue
        if type(event) is ProtocolError:
            await conn.send_all(own_answer(event.status, event.reason, close=True))
            proxy.access.write({"client": client, "status": event.status, "reason": event.reason})
            proxy.metrics.request(listener=spec.port, route=None, status=event.status)
            return
        if type(event) is not RequestHead:
            return  # ConnectionClosed
        if not await _request(
            proxy, reader, downstream, event, spec, client, sni, trusted, inflight
        ):
            return


async def _linger(proxy: Proxy, conn: trio.abc.Stream) -> None:
    """The connection closes after an answer while the client may still be sending (a
    request body not read, bytes that broke HTTP/1.1): half-close, and read and drop what
    arrives until the client closes, at most ``timeouts.linger`` seconds. Closing at once would
    make the client's TCP stack answer its next bytes with a reset, which can destroy
    the answer before the client reads it (RFC 9112 §9.6). A lingering connection gives
    way at the connection limit, and to a drain."""
    with trio.move_on_after(proxy.config.timeouts.linger) as scope:
        proxy.capacity.waiting(scope)
        try:
            if isinstance(conn, trio.abc.HalfCloseableStream):
                await conn.send_eof()
            while await conn.receive_some(RECEIVE_SIZE):
                await trio.lowlevel.checkpoint()  # a receive that finds bytes does not yield
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            proxy.capacity.working(scope)


async def _cut(
    proxy: Proxy,
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
        timeouts = proxy.config.timeouts
        if stalled is reader:
            status, reason = 408, f"the request body stalled for {timeouts.client_body:g} s"
        elif stalled is not None:
            status, reason = 504, f"the upstream sent nothing for {timeouts.read:g} s"
        else:
            limit = request.routed.timeout
            status, reason = 504, f"the upstream did not answer within {limit:g} s"
        answer = own_answer(status, reason, close=True, head_only=request.head.method == b"HEAD")
        # a client that stopped reading is cut by its send timeout (Connection)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await conn.send_all(answer)
        exchange.status = status
    proxy.record(request.head, request.routed, spec, client, reason, exchange, request.started)


async def _request(
    proxy: Proxy,
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
    forwarded it is in ``inflight``, for :func:`_cut` if a timeout ends the connection."""
    started = time.perf_counter()
    served = proxy.served
    assert served is not None
    routed = served.route(spec.port, head, tls=spec.tls, sni=sni, client=client)
    if routed.decision.external_auth is not None:  # ``auth-url``: its answer decides
        scheme = b"https" if spec.tls else b"http"
        routed, head = await authorized(
            proxy.forwarder, served, routed, head, scheme=scheme, client=client
        )
    decision = routed.decision
    keep_alive = head.keep_alive
    exchange = Exchange()
    answer: Answer | None = None
    if decision.status is not None:
        answer = Answer(decision.status, decision.reason)
    else:
        inflight.append(_InFlight(head, routed, exchange, started))
        try:
            await proxy.forwarder.forward(
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
            proxy.metrics.forwarded(time.perf_counter() - started)
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
    proxy.record(head, routed, spec, client, reason, exchange, started)
    return keep_alive


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
