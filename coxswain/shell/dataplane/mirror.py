"""Request mirroring: the HTTPRoute ``RequestMirror`` filter (Gateway API; percent and
fraction from GEP-3171), fire-and-forget.

A mirrored request is a copy of the client's request sent to another backend; its answer is
read and dropped. The client's exchange never waits for a mirror and never fails because of
one. Rules:

- **Which.** Each mirror of the matched rule fires with its ``percent`` probability, drawn per
  request. Upgrade requests are not mirrored (a tunnel cannot be copied). At most ``limit``
  (``LIMIT``) mirrored exchanges run at once in a proxy; past it a mirror is ``dropped``
  unsent, so that a burst of mirrored traffic to a slow backend holds bounded memory and
  connections.
- **Protocol.** A mirror speaks its backend's protocol, as the primary request would
  (:class:`~coxswain.compile.snapshot.BackendProtocol`). To an HTTP/1.1 backend: the primary
  request's head as forwarded (``X-Forwarded-*`` and the rule's header edits), then the mirror
  backend's own edits, with ``Connection: close``: mirrors do not take pooled connections from
  the primary traffic. To an HTTP/2 backend (h2c, or h2 over TLS): the same fields as a
  stream on the shared connections of :mod:`.h2_pool` (RFC 9113 §9.1: one connection per
  peer), its body as DATA within the backend's windows (:func:`.h2_stream.send_data`); a
  mirror stream waits only on its own windows and the mirror's bounds, never on the
  client's exchange, and is reset (``CANCEL``) when cut off.
- **Body.** The body is teed as the proxy relays it (:class:`Tee`). Each mirror receives the
  pieces through a memory channel of ``BUFFER`` pieces; a mirror that falls that far behind is
  cut off (its connection closed mid-request), so a slow mirror never slows the client and
  never holds more than ``BUFFER`` × 64 KiB. A request the proxy fails to forward ends its
  mirrors the same way.
- **End.** The mirror's response is read until the upstream closes and dropped; the whole
  mirrored exchange is bounded by ``timeout`` (``--mirror-timeout``). Outcomes are counted by
  ``coxswain_mirror_requests_total{result}``: ``sent``, ``failed`` (no connection, or the
  upstream broke off) and ``dropped`` (cut off, or timed out).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias

import trio

from coxswain.compile.snapshot import BackendProtocol
from coxswain.http1 import Data, EndOfMessage, frame_chunk, frame_last_chunk, frame_request_head
from coxswain.http2.backend import request_fields, trailer_list
from coxswain.route.forward import apply_edits
from coxswain.shell.dataplane.h2_stream import send_data
from coxswain.shell.dataplane.h2_upstream import StreamFailed
from coxswain.shell.dataplane.pool import ConnectFailed, connect
from coxswain.shell.dataplane.wire import RECEIVE_SIZE, Timer

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Sequence

    from coxswain.compile.snapshot import Backend, Endpoint, Mirror
    from coxswain.http1 import Headers, RequestHead
    from coxswain.route.forward import Fields
    from coxswain.shell.dataplane.h2_pool import H2Pool
    from coxswain.shell.dataplane.h2_upstream import UpstreamStream
    from coxswain.shell.dataplane.served import Served
    from coxswain.shell.dataplane.upstream_tls import Origination
    from coxswain.shell.dataplane.wire import Watchdog

__all__ = ["BUFFER", "LIMIT", "Mirrors", "Tee"]

BUFFER: Final = 16
LIMIT: Final = 1024

_H2Head: TypeAlias = "Sequence[tuple[bytes, bytes]]"


@dataclass(frozen=True, slots=True)
class _End:
    """The body ended (with these trailers, for a chunked body)."""

    trailers: Headers


_Piece: TypeAlias = bytes | _End


class Tee:
    """The request body's copies for the mirrors of one request."""

    __slots__ = ("_mirrors",)

    def __init__(
        self, mirrors: list[tuple[trio.MemorySendChannel[_Piece], trio.CancelScope]]
    ) -> None:
        self._mirrors = mirrors

    def data(self, piece: bytes) -> None:
        """Copy one piece of the body to every mirror still keeping up."""
        self._offer(piece)

    def end(self, trailers: Headers = ()) -> None:
        """The body is complete: each mirror may finish its request."""
        self._offer(_End(trailers))
        for sender, _ in self._mirrors:
            sender.close()
        self._mirrors = []

    def abort(self) -> None:
        """The request was not forwarded whole: mirrors still sending are cut off."""
        for sender, scope in self._mirrors:
            sender.close()
            scope.cancel()
        self._mirrors = []

    def _offer(self, piece: _Piece) -> None:
        keeping = []
        for sender, scope in self._mirrors:
            try:
                sender.send_nowait(piece)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                sender.close()  # behind (perhaps stuck sending), or finished with an error
                scope.cancel()
                continue
            keeping.append((sender, scope))
        self._mirrors = keeping


@dataclass(slots=True)
class Mirrors:
    """Starts mirrored requests in the proxy's nursery; ``record`` counts their outcomes.
    ``h2``: the connections to HTTP/2 backends, with the ``watchdog`` that times a mirror
    stream's waits for the backend's windows (``send_timeout``)."""

    nursery: trio.Nursery
    rng: random.Random
    connect_timeout: float
    timeout: float  # the whole mirrored exchange
    record: Callable[[str], None]
    h2: H2Pool | None = None
    watchdog: Watchdog | None = None
    send_timeout: float = 60.0
    limit: int = LIMIT
    running: int = 0  # mirrored exchanges under way (at most ``limit``)

    def fire(
        self,
        mirrors: Sequence[Mirror],
        served: Served,
        head: RequestHead,
        *,
        host: bytes,
        target: bytes,
        base: Fields,
        order: Callable[[str, Sequence[Endpoint]], Sequence[Endpoint]],
    ) -> Tee | None:
        """Fire the mirrors of a request forwarded with the fields ``base`` (the rule's edits
        made, the backend's not) to ``host`` and ``target``; ``order`` gives a backend's
        endpoints in the request's round-robin turn (:class:`.balance.RoundRobin`)."""
        endpoints_by_key = served.endpoints

        def endpoints_of(key: str) -> Sequence[Endpoint]:
            endpoints = endpoints_by_key.get(key, ())
            return order(key, endpoints) if endpoints else []

        def head_for(mirror: Mirror) -> bytes | list[tuple[bytes, bytes]] | None:
            edits = mirror.backend.request_headers
            try:
                headers = list(base if edits is None else apply_edits(base, served.edits(edits)))
                if mirror.backend.protocol is BackendProtocol.H2C:
                    scheme = b"http" if mirror.backend.tls is None else b"https"
                    return request_fields(
                        method=head.method,
                        scheme=scheme,
                        authority=host,
                        path=target,
                        headers=headers,
                    )
                if head.chunked:
                    headers.append((b"transfer-encoding", b"chunked"))
                headers.append((b"connection", b"close"))
                return frame_request_head(
                    method=head.method,
                    target=target,
                    headers=headers,
                    validate=False,
                )
            except ValueError:
                return None

        def tls_of(backend: Backend) -> Origination | None:
            if backend.tls is None:
                return None
            return served.originations.get(backend.tls)

        return self.start(
            mirrors,
            endpoints_of,
            head_for,
            tls_of=tls_of,
            chunked=head.chunked,
            body=head.chunked or bool(head.content_length),
        )

    def start(
        self,
        mirrors: Sequence[Mirror],
        endpoints_of: Callable[[str], Sequence[Endpoint]],
        head_for: Callable[[Mirror], bytes | _H2Head | None],
        *,
        tls_of: Callable[[Backend], Origination | None],
        chunked: bool,
        body: bool,
    ) -> Tee | None:
        """Fire the mirrors drawn for this request; the Tee to feed its body to, if any.

        ``endpoints_of`` gives a backend's endpoints in this request's round-robin order;
        ``head_for`` the head to send to a mirror (None when it cannot be framed): HTTP/1.1
        bytes, or an HTTP/2 backend's header list (:func:`coxswain.http2.backend.request_fields`);
        ``tls_of`` the TLS to reach a backend with (:mod:`.upstream_tls`; ``ssl.SSLError`` when
        it cannot be set up); ``chunked``: the HTTP/1.1 body is chunked; ``body``: the request
        has a body at all.
        """
        started = []
        for mirror in mirrors:
            if not mirror.backend.valid or self.rng.random() * 100 >= mirror.percent:
                continue
            endpoints = endpoints_of(mirror.backend.endpoints_key)
            head = head_for(mirror)
            try:
                tls = tls_of(mirror.backend)
            except ssl.SSLError:
                head = None
            if not endpoints or head is None or (not isinstance(head, bytes) and self.h2 is None):
                self.record("failed")
                continue
            if self.running >= self.limit:
                self.record("dropped")
                continue
            send, receive = trio.open_memory_channel[_Piece](BUFFER)
            scope = trio.CancelScope()
            self.running += 1
            self.nursery.start_soon(self._send, scope, receive, endpoints, head, chunked, body, tls)
            started.append((send, scope))
        return Tee(started) if started else None

    async def _send(
        self,
        scope: trio.CancelScope,
        pieces: trio.MemoryReceiveChannel[_Piece],
        endpoints: Sequence[Endpoint],
        head: bytes | _H2Head,
        chunked: bool,
        body: bool,
        tls: Origination | None,
    ) -> None:
        result = "dropped"  # unless the exchange ends otherwise, uncut and within the timeout
        scope.deadline = trio.current_time() + self.timeout
        try:
            with pieces, scope:
                if isinstance(head, bytes):
                    result = await self._exchange(pieces, endpoints, head, chunked, tls)
                else:
                    result = await self._exchange_h2(pieces, endpoints, head, body, tls)
        finally:
            self.running -= 1
            self.record(result)

    async def _exchange(
        self,
        pieces: trio.MemoryReceiveChannel[_Piece],
        endpoints: Sequence[Endpoint],
        head: bytes,
        chunked: bool,
        tls: Origination | None,
    ) -> str:
        try:
            stream, _, _ = await connect(endpoints, None, within=self.connect_timeout, tls=tls)
        except ConnectFailed:
            return "failed"
        async with stream:
            try:
                await stream.send_all(head)
                async for piece in pieces:
                    if type(piece) is _End:
                        if chunked:
                            await stream.send_all(frame_last_chunk(piece.trailers))
                        break
                    assert type(piece) is bytes
                    await stream.send_all(frame_chunk(piece) if chunked else piece)
                else:
                    return "dropped"  # cut off before the body ended
                while await stream.receive_some(RECEIVE_SIZE):
                    # the answer is not wanted (Connection: close ends it); a receive that
                    # finds bytes does not yield (.connection), so this loop does
                    await trio.lowlevel.checkpoint()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return "failed"
        return "sent"

    async def _exchange_h2(
        self,
        pieces: trio.MemoryReceiveChannel[_Piece],
        endpoints: Sequence[Endpoint],
        fields: _H2Head,
        body: bool,
        tls: Origination | None,
    ) -> str:
        """The mirrored exchange as a stream of a shared HTTP/2 connection (the module's
        rules); the stream leaves its connection however the exchange ends."""
        pool = self.h2
        assert pool is not None
        assert self.watchdog is not None
        try:
            stream = await pool.open_stream(
                endpoints, fields, end_stream=not body, within=self.connect_timeout, tls=tls
            )
        except (ConnectFailed, StreamFailed):
            return "failed"
        timer = Timer(self.watchdog)  # its waits cut the mirror off as the channel's do
        try:
            with timer.scope:
                return await _mirror_stream(stream, pieces, body, timer, self.send_timeout)
            return "dropped"  # a wait for the backend ran out
        except (trio.BrokenResourceError, trio.ClosedResourceError, StreamFailed):
            return "failed"
        finally:
            timer.disarm()
            if stream.connection.forget(stream):
                stream.connection.send_soon()


async def _mirror_stream(
    stream: UpstreamStream,
    pieces: trio.MemoryReceiveChannel[_Piece],
    body: bool,
    timer: Timer,
    send_timeout: float,
) -> str:
    """Send the body (when there is one) on ``stream``, then read its answer and drop it;
    the outcome. Each wait for the backend's windows is bounded by ``send_timeout``, for its
    bytes by the stream's read timeout, both through ``timer``.

    Raises:
        StreamFailed: the backend reset the stream before its head.
        trio.BrokenResourceError: the connection broke.
    """
    connection = stream.connection
    if body:
        async for piece in pieces:
            if type(piece) is _End:
                if piece.trailers:
                    trailers = trailer_list(piece.trailers)
                    connection.conn.send_headers(stream.stream_id, trailers, end_stream=True)
                else:
                    connection.conn.end_stream(stream.stream_id)
                stream.sent_end = True
                await connection.flush()
                break
            assert type(piece) is bytes
            await send_data(connection, stream.stream_id, piece, timer, send_timeout, stream)
        else:
            return "dropped"  # cut off before the body ended
    _, ended = await stream.head(timer)
    while not ended:
        event = await stream.body.next()  # taken, so its window goes back to the backend
        if type(event) is EndOfMessage:
            break
        if type(event) is not Data:
            return "failed"  # the backend reset the stream, or the connection broke
        await trio.lowlevel.checkpoint()  # the answer is dropped, nothing sent: yield here
    return "sent"
