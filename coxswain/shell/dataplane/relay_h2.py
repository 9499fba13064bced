"""Forwarding to a backend that speaks HTTP/2 (``protocol: h2c``; with ``tls``, h2 by ALPN).

The forwarder (:mod:`.upstream`) chooses the backend, orders its endpoints, builds the
forwarded head and sets the exchange's deadline as for any backend; then this relay takes
over from its HTTP/1.1 one:

- **Request.** The head goes out as HEADERS on a stream of a shared connection
  (:mod:`.h2_pool`; :func:`coxswain.http2.backend.request_fields`); the body is read from the
  same :class:`~.downstream.BodySource` and sent as DATA within the backend's windows, its
  trailers as a trailer section. The body is sent by a task of its own while the response is
  relayed, so that streaming both ways works (a gRPC bidirectional call answers each message
  before the client sends the next); each side waits on its own timer, both within the
  exchange's scope. A response that ends before the request body is complete ends the
  exchange; the stream is then reset (RFC 9113 §8.1). A small body an HTTP/2 client sent
  whole before its exchange began (a gRPC unary call's) needs no task: it goes out in the
  same write as the HEADERS when the backend's windows take it (:class:`_Whole`).
- **Response.** Its head (:func:`coxswain.http2.backend.response_head`) and body go to the
  same :class:`~.downstream.Downstream`, the body read from the stream
  (:class:`~.h2_stream.H2Body`): DATA as it comes, trailers at the end (an HTTP/2 client gets
  them as trailers, an HTTP/1.1 client in the last chunk when it asked, :mod:`.downstream`).
  Interim 1xx responses are dropped. A response the backend resets midway is reset towards
  an HTTP/2 client, and closes an HTTP/1.1 client's connection.
- **Retries, timeouts and errors** as for HTTP/1.1 (:mod:`.upstream`, :mod:`.tries`): a
  request without a body is tried again under the rule's ``retry``; one with a body
  streams through once. A request without a body whose stream the backend refused
  unprocessed (GOAWAY past it, ``REFUSED_STREAM``, RFC 9113 §8.7) is sent again on another
  connection, up to :data:`_REFUSALS` times; one with a body is answered 502, its body
  being partly read already. A client that goes away resets the stream (``CANCEL``)
  towards the backend.
- **Not carried:** WebSocket upgrades (HTTP/2 would need RFC 8441's extended CONNECT): such a
  request is forwarded as plain.
- **Mirrors** speak their own backend's protocol (:mod:`.mirror`), HTTP/2 ones on this
  relay's connections.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Final, Protocol

import trio

from coxswain.http1 import Data
from coxswain.http2.backend import request_fields, response_head
from coxswain.http2.frames import PROTOCOL_ERROR
from coxswain.shell.dataplane.h2_stream import H2Body, send_data, send_end
from coxswain.shell.dataplane.h2_upstream import StreamFailed
from coxswain.shell.dataplane.pool import ConnectFailed
from coxswain.shell.dataplane.tries import (
    NO_SCOPE,
    Answer,
    ClientProtocolError,
    Tries,
    another_try,
    body_event,
)
from coxswain.shell.dataplane.wire import Timer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.snapshot import Backend, Endpoint, Retry
    from coxswain.http1 import Headers, RequestHead, ResponseHead
    from coxswain.route import Decision
    from coxswain.route.forward import Fields
    from coxswain.shell.dataplane.downstream import BodySource, Downstream, Exchange
    from coxswain.shell.dataplane.h2_pool import H2Pool
    from coxswain.shell.dataplane.h2_upstream import UpstreamStream
    from coxswain.shell.dataplane.mirror import Tee
    from coxswain.shell.dataplane.served import Served
    from coxswain.shell.dataplane.upstream_tls import Origination

__all__ = ["Forwarder", "H2Relay"]

_BROKEN: Final = (trio.BrokenResourceError, trio.ClosedResourceError, StreamFailed)
_REFUSALS: Final = 3  # a request without a body sent again after its stream was refused
_WHOLE_BYTES: Final = 16384  # a body sent with its HEADERS at most (one frame, RFC 9113 §4.2)


class Forwarder(Protocol):
    """What the relay uses of its forwarder (:class:`.upstream.Forwarder`)."""

    async def back_off(self, retry: Retry, retried: int, reason: str) -> int:
        """Wait before the next try of a rule's ``retry``; its number."""

    def response_fields(
        self, response: ResponseHead, served: Served, backend: Backend, decision: Decision
    ) -> Fields:
        """The response's fields as the client gets them."""


class H2Relay:
    """What every exchange with an HTTP/2 backend shares: the connections, and the timeouts
    of a connect and of each wait for the backend's windows (:class:`.upstream.Timeouts`)."""

    __slots__ = ("connect_timeout", "pool", "send_timeout")

    def __init__(self, pool: H2Pool, *, connect_timeout: float, send_timeout: float) -> None:
        self.pool = pool
        self.connect_timeout = connect_timeout
        self.send_timeout = send_timeout

    async def relay(
        self,
        forwarder: Forwarder,
        *,
        backend: Backend,
        client: BodySource,
        decision: Decision,
        downstream: Downstream,
        endpoints: Sequence[Endpoint],
        exchange: Exchange,
        head: RequestHead,
        headers: Fields,
        host: bytes,
        per_try: float,
        retry: Retry | None,
        served: Served,
        target: bytes,
        tee: Tee | None,
        timer: Timer,
        tls: Origination | None,
    ) -> None:
        """Send the request and relay the answer (the module's rules); ``timer`` is the
        client's, its scope the exchange's.

        Raises:
            Answer: a failure before the response head reached the client.
            ClientProtocolError: the request body broke HTTP.
        """
        fields = request_fields(
            method=head.method,
            scheme=b"http" if tls is None else b"https",
            authority=host,
            path=target,
            headers=headers,
        )
        has_body = head.chunked or bool(head.content_length)
        if not has_body:
            client.skip_end()
            if tee is not None:
                tee.end()
        whole = _Whole.take(client, head, tee) if has_body else None
        tries = (
            None
            if retry is None
            else Tries(retry, per_try, back_off=forwarder.back_off, timer=timer)
        )
        refusals = 0
        while True:
            stream: UpstreamStream | None = None
            failure: Answer | None = None
            response: ResponseHead | None = None
            try:
                with NO_SCOPE if tries is None else tries.begin() as scope:
                    try:
                        stream = await self.pool.open_stream(
                            endpoints,
                            fields,
                            end_stream=not has_body,
                            within=self.connect_timeout,
                            tls=tls,
                            then=None if whole is None else whole.send_now,
                            deadline=timer.scope.deadline
                            if scope is None
                            else min(timer.scope.deadline, scope.deadline),
                        )
                    except ConnectFailed as err:
                        failure = Answer(504 if err.timed_out else 502, str(err))
                    except StreamFailed as err:
                        failure = Answer(502, err.reason)
                    else:
                        exchange.upstream = stream.connection.name
                        if whole is not None:  # went with the HEADERS, or goes now; once
                            if not stream.sent_end:
                                await whole.finish(stream, timer, self.send_timeout)
                            await _respond(
                                forwarder,
                                stream,
                                downstream,
                                head,
                                served,
                                decision,
                                backend,
                                exchange,
                                timer,
                            )
                            return
                        if has_body:  # streamed through once, never tried again
                            await self._with_body(
                                forwarder,
                                stream,
                                client=client,
                                downstream=downstream,
                                head=head,
                                served=served,
                                decision=decision,
                                backend=backend,
                                exchange=exchange,
                                tee=tee,
                                timer=timer,
                            )
                            return
                        try:
                            response = await _final_head(stream, head, timer)
                        except Answer as err:
                            failure = err
                        except StreamFailed as err:  # refused unprocessed: safe elsewhere
                            if refusals < _REFUSALS:
                                refusals += 1
                                continue
                            failure = Answer(502, err.reason, exchange.upstream)
                if await another_try(tries, failure, response, scope, exchange.upstream):
                    continue
                assert response is not None
                assert stream is not None
                relayed = forwarder.response_fields(response, served, backend, decision)
                await downstream.respond(stream.body, head, response, relayed, exchange)
                return
            finally:
                if stream is not None:
                    exchange.grpc_status = stream.grpc_status
                    self._done(stream)

    async def _with_body(
        self,
        forwarder: Forwarder,
        stream: UpstreamStream,
        *,
        client: BodySource,
        downstream: Downstream,
        head: RequestHead,
        served: Served,
        decision: Decision,
        backend: Backend,
        exchange: Exchange,
        tee: Tee | None,
        timer: Timer,
    ) -> None:
        """The body sent by a task of its own while the response is relayed."""
        respond = partial(
            _respond, forwarder, stream, downstream, head, served, decision, backend, exchange
        )
        sender = _BodySender(stream, client, tee, timer, self.send_timeout)
        failure: Answer | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender.run, downstream, head, nursery.cancel_scope)
            try:
                await respond(timer)
            except Answer as err:  # raised as it came once the nursery is closed, not
                failure = err  # wrapped in an exception group with the sender's end
            nursery.cancel_scope.cancel()  # the response is complete: the body is not needed
        if sender.error is not None:
            raise sender.error
        if failure is not None:
            raise failure

    def _done(self, stream: UpstreamStream) -> None:
        """The exchange is over: the stream leaves its connection, reset when still open;
        the reset goes out through the connection's writer, which runs in the connection's own
        nursery, so that a client that went away (a cancelled exchange) still has its stream
        cancelled towards the backend."""
        connection = stream.connection
        if connection.forget(stream):
            connection.send_soon()


async def _respond(
    forwarder: Forwarder,
    stream: UpstreamStream,
    downstream: Downstream,
    head: RequestHead,
    served: Served,
    decision: Decision,
    backend: Backend,
    exchange: Exchange,
    timer: Timer,
) -> None:
    """The response of a request with a body, relayed; ``timer`` the exchange's.

    Raises:
        Answer: the stream broke or was refused before the head (502: the body is read, so
            the request is not sent again), or the head is malformed.
    """
    try:  # the stream's own wait, not _final_head's: a coroutine less to pass through
        fields, ended = await stream.head(timer)
    except StreamFailed as err:
        raise Answer(502, err.reason, stream.connection.name) from err
    response = _checked_head(stream, fields, ended, head)
    relayed = forwarder.response_fields(response, served, backend, decision)
    await downstream.respond(stream.body, head, response, relayed, exchange)


async def _final_head(stream: UpstreamStream, head: RequestHead, timer: Timer) -> ResponseHead:
    """The response head, checked.

    Raises:
        StreamFailed: the backend refused the stream without processing it.
        Answer: the stream broke first (502), or the head is malformed (502, the stream
            reset).
    """
    try:
        fields, ended = await stream.head(timer)
    except StreamFailed as err:
        if err.refused:
            raise
        raise Answer(502, err.reason, stream.connection.name) from err
    return _checked_head(stream, fields, ended, head)


def _checked_head(
    stream: UpstreamStream,
    fields: Sequence[tuple[bytes, bytes]],
    ended: bool,
    head: RequestHead,
) -> ResponseHead:
    """The response head from its header list.

    Raises:
        Answer: the head is malformed (502, the stream reset).
    """
    response = response_head(fields, ended=ended, head_request=head.method == b"HEAD")
    if isinstance(response, str):
        stream.connection.reset(stream.stream_id, PROTOCOL_ERROR)
        raise Answer(502, f"the upstream sent a malformed head: {response}", stream.connection.name)
    return response


class _Whole:
    """A request body that was all here when its exchange began, as a gRPC unary call's
    usually is (the client sent HEADERS and DATA together): it goes out in the same write as
    the request's HEADERS when the backend's windows take it (:meth:`send_now`), instead of by
    a task of its own in writes of their own; a body of at most :data:`_WHOLE_BYTES`, from an
    HTTP/2 client, without mirrors or ``Expect: 100-continue``. Read into memory, it is no
    longer the client's to send again: such a request is not retried, as any with a body."""

    __slots__ = ("data", "trailers")

    def __init__(self, data: bytes, trailers: Headers) -> None:
        self.data = data
        self.trailers = trailers

    @staticmethod
    def take(client: BodySource, head: RequestHead, tee: Tee | None) -> _Whole | None:
        """The body, read, when it is all here already and may go whole; else None, nothing
        read."""
        if tee is not None or head.expect_continue or not isinstance(client, H2Body):
            return None
        taken = client.take_whole(_WHOLE_BYTES)
        return None if taken is None else _Whole(*taken)

    def send_now(self, stream: UpstreamStream) -> None:
        """Make the body's frames right after the stream's HEADERS, if the backend's windows
        take it now (RFC 9113 §5.2); else :meth:`finish` sends it."""
        conn = stream.connection.conn
        stream_id = stream.stream_id
        data = self.data
        if len(data) <= min(
            conn.local_flow_control_window(stream_id), conn.max_outbound_frame_size
        ):
            send_end(conn, stream_id, data, self.trailers)
            stream.sent_end = True

    async def finish(self, stream: UpstreamStream, timer: Timer, wait_limit: float) -> None:
        """Send what :meth:`send_now` could not (the request's END_STREAM has not gone out),
        within the backend's windows, each wait bounded by ``wait_limit`` through ``timer``; a
        stream or connection that broke meanwhile fails the response's wait instead."""
        connection = stream.connection
        try:
            await send_data(connection, stream.stream_id, self.data, timer, wait_limit, stream)
            send_end(connection.conn, stream.stream_id, b"", self.trailers)
            stream.sent_end = True
            await connection.flush()
        except _BROKEN:
            pass


class _BodySender:
    """The request body to an HTTP/2 backend, beside the response's relay."""

    __slots__ = ("client", "error", "send_timeout", "stream", "tee", "timer")

    def __init__(
        self,
        stream: UpstreamStream,
        client: BodySource,
        tee: Tee | None,
        timer: Timer,
        send_timeout: float,
    ) -> None:
        self.stream = stream
        self.client = client
        self.tee = tee
        self.timer = timer  # the exchange's: told when a wait of the body ran out
        self.send_timeout = send_timeout
        self.error: ClientProtocolError | None = None

    async def run(
        self, downstream: Downstream, head: RequestHead, exchange_scope: trio.CancelScope
    ) -> None:
        """Send the body; the client's reads and the backend's windows are bounded by a timer
        of this task's (the exchange's serves the response), whose expiry ends the exchange
        as the exchange's own would, naming who stalled."""
        client = self.client
        own = Timer(self.timer.watchdog)
        exchange_timer = client.timer
        client.timer = own
        try:
            with own.scope:
                if head.expect_continue:
                    await downstream.send_continue()
                await self._send()
        except ClientProtocolError as err:
            self.error = err
            exchange_scope.cancel()
        except _BROKEN:
            pass  # the stream or its connection broke: the response's side learns it too
        finally:
            own.disarm()
            client.timer = exchange_timer
        if own.stalled is not None:
            self.timer.ran_out(own.stalled)

    async def _send(self) -> None:
        stream = self.stream
        connection = stream.connection
        stream_id = stream.stream_id
        client = self.client
        tee = self.tee
        timer = client.timer
        assert timer is not None
        while True:
            event = body_event(await client.next())
            if isinstance(event, Data):
                if tee is not None:
                    tee.data(event.data)
                await send_data(connection, stream_id, event.data, timer, self.send_timeout, stream)
                continue
            if tee is not None:  # whole: the mirrors finish even if the answer ends this task
                tee.end(event.trailers)
            send_end(connection.conn, stream_id, b"", event.trailers)
            stream.sent_end = True
            await connection.flush()
            return
