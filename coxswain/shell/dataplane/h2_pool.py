"""The proxy's HTTP/2 connections to backends, per endpoint (RFC 9113 §9.1: one connection per
peer, many streams on it).

Rules:

- **Streams before connections.** A request takes a stream on a live connection to its
  endpoint that has room (:meth:`.h2_upstream.H2Upstream.room`: fewer streams than the
  backend's ``SETTINGS_MAX_CONCURRENT_STREAMS``, capped); only when none has room is another
  connection opened. While one is being opened, the requests for that endpoint wait for it
  (within the connect timeout) instead of opening their own, so that a burst opens one
  connection, or one more per :data:`~.h2_upstream.STREAM_LIMIT` streams, not one per request.
- **Endpoints** are tried in the forwarder's round-robin order; the next one only when
  connecting failed (nothing was sent, RFC 9110 §9.2.2), as :func:`.pool.connect` does,
  whose connect timeout, TLS origination (:mod:`.upstream_tls`, ALPN ``h2``) and failure
  messages these connections share. A failed attempt is the failure of every request that
  waited for it.
- **Deadline.** A request's ``grpc-timeout`` is what remains of the caller's deadline (its
  cancel scopes': the route's or the call's own timeout, a try's) when its HEADERS are made,
  after the wait for a connection (:func:`coxswain.route.grpc_timeout.forwarded_fields`). The
  relay names those scopes' deadline itself: asking trio for the task's effective deadline
  walks every enclosing scope, two property calls each, on every request.
- **Ownership.** Each connection's reader (:meth:`.h2_upstream.H2Upstream.run`) runs in the
  proxy's long-lived nursery, so that a connection outlives the request that opened it;
  a connection that ends (idle, GOAWAY, broken) leaves the pool at once. Connections are
  keyed like :mod:`.pool`'s, by endpoint and TLS settings, so one is never reused for other
  settings.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import trio

from coxswain.route.grpc_timeout import forwarded_fields
from coxswain.shell.dataplane.h2_upstream import H2Upstream, StreamFailed
from coxswain.shell.dataplane.pool import DEFAULT_IDLE_TIMEOUT, ConnectFailed, connect

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from coxswain.compile.snapshot import Endpoint
    from coxswain.shell.dataplane.h2_upstream import UpstreamStream
    from coxswain.shell.dataplane.pool import PoolKey
    from coxswain.shell.dataplane.upstream_tls import Origination
    from coxswain.shell.dataplane.wire import Watchdog

__all__ = ["H2Pool"]

_REFUSALS: Final = 3  # streams refused in a row (a connection closing meanwhile) before giving up


class _Opening:
    """A connection being opened: the requests that wait for it, and how it went."""

    __slots__ = ("done", "failure")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.failure: ConnectFailed | None = None


class H2Pool:
    """HTTP/2 connections by endpoint and TLS settings; used from one trio thread only."""

    def __init__(
        self,
        nursery: trio.Nursery,
        watchdog: Watchdog,
        *,
        send_timeout: float,
        read_timeout: float,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        record: Callable[[str], None] = lambda _: None,
    ) -> None:
        self._nursery = nursery
        self._record = record  # a connection's GOAWAY and refused streams (H2Upstream)
        self._live: set[H2Upstream] = set()  # open, closing ones too
        self._watchdog = watchdog
        self._send_timeout = send_timeout
        self._read_timeout = read_timeout
        self._idle_timeout = idle_timeout
        self._connections: dict[PoolKey, list[H2Upstream]] = {}
        self._opening: dict[PoolKey, _Opening] = {}

    def connection_count(self, key: PoolKey) -> int:
        """How many connections the endpoint has (for tests and metrics)."""
        return len(self._connections.get(key, ()))

    def connections(self) -> list[H2Upstream]:
        """The connections that take new streams, every endpoint's."""
        return [c for connections in self._connections.values() for c in connections]

    def open_count(self) -> int:
        """Connections open now, those closing after a GOAWAY too (for metrics)."""
        return len(self._live)

    def stream_count(self) -> int:
        """Streams open now on every open connection."""
        return sum(len(connection.streams) for connection in self._live)

    async def open_stream(
        self,
        endpoints: Sequence[Endpoint],
        fields: Sequence[tuple[bytes, bytes]],
        *,
        end_stream: bool,
        within: float,
        tls: Origination | None,
        then: Callable[[UpstreamStream], None] | None = None,
        deadline: float | None = None,
    ) -> UpstreamStream:
        """A stream carrying the request's HEADERS (``end_stream``: the request has no body)
        on the first endpoint that has or takes a connection; ``then`` makes more of the
        stream's frames (its body) to go out in the same write. ``deadline``: the caller's
        (the module's **Deadline**) when it knows it from its own scopes (the relay: its
        exchange's and its try's); else the task's effective deadline, every scope walked.

        Raises:
            ConnectFailed: no endpoint took a connection.
            StreamFailed: connections kept refusing the stream.
        """
        failures: list[str] = []
        timeouts = 0
        for endpoint in endpoints:
            key = _key(endpoint, tls)
            for _ in range(_REFUSALS):
                connection = self._with_room(key)
                if connection is None:
                    try:
                        connection = await self._connection(endpoint, key, within=within, tls=tls)
                    except ConnectFailed as err:
                        failures.append(str(err))
                        timeouts += err.timed_out
                        break
                if deadline is None:
                    deadline = trio.current_effective_deadline()
                try:
                    stream = connection.open(
                        fields
                        if deadline == math.inf  # no clock read for a call without deadline
                        else forwarded_fields(fields, deadline - trio.current_time()),
                        end_stream=end_stream,
                    )
                except StreamFailed:
                    continue  # it began closing meanwhile: another connection
                if then is not None:
                    then(stream)
                try:
                    await trio.lowlevel.checkpoint_if_cancelled()
                except BaseException:  # cancelled: the stream never reached its caller
                    if connection.forget(stream):
                        connection.send_soon()
                    raise
                connection.send_soon()  # in one send with what other streams made this turn
                return stream
            else:
                raise StreamFailed("the backend refused the stream on every connection")
        raise ConnectFailed(
            "no endpoint accepted a connection (" + "; ".join(failures) + ")",
            timed_out=timeouts == len(failures),
        )

    async def _connection(
        self, endpoint: Endpoint, key: PoolKey, *, within: float, tls: Origination | None
    ) -> H2Upstream:
        """A connection to ``endpoint`` with room for one more stream.

        Raises:
            ConnectFailed: connecting to the endpoint failed (one message, the endpoint's).
        """
        while True:
            ready = self._with_room(key)
            if ready is not None:
                return ready
            opening = self._opening.get(key)
            if opening is None:
                break
            with trio.move_on_after(within):
                await opening.done.wait()
            if not opening.done.is_set():
                name = f"{endpoint.address}:{endpoint.port}"
                raise ConnectFailed(f"{name}: no answer within {within:g} s", timed_out=True)
            if opening.failure is not None:
                raise opening.failure
        opening = self._opening[key] = _Opening()
        try:
            connection = await self._settled(endpoint, key, within=within, tls=tls)
            self._connections.setdefault(key, []).append(connection)
            return connection
        except ConnectFailed as err:
            opening.failure = err
            raise
        finally:  # cancelled meanwhile, the waiters find no connection and open their own
            del self._opening[key]
            opening.done.set()

    def _with_room(self, key: PoolKey) -> H2Upstream | None:
        """A live connection to the endpoint that takes one more stream, if there is one
        (looked up without a coroutine: the common case of every request)."""
        for connection in self._connections.get(key, ()):
            if connection.room():
                return connection
        return None

    async def _settled(
        self, endpoint: Endpoint, key: PoolKey, *, within: float, tls: Origination | None
    ) -> H2Upstream:
        """A new connection whose backend has sent its first SETTINGS (RFC 9113 §3.4), so
        that its streams never exceed the backend's concurrent-stream limit; all within
        ``within`` seconds.

        Raises:
            ConnectFailed: connecting failed, or the backend said nothing in time.
        """
        name = f"{endpoint.address}:{endpoint.port}"
        connection: H2Upstream | None = None
        with trio.move_on_after(within) as scope:
            connection = await self._open(endpoint, key, within=within, tls=tls)
            await connection.settled.wait()
        if connection is None or scope.cancelled_caught:
            if connection is not None:
                connection.transport.close()  # its reader ends, and the connection with it
            raise ConnectFailed(f"{name}: no answer within {within:g} s", timed_out=True)
        if connection.closing:
            raise ConnectFailed(
                f"{name}: the connection ended before its SETTINGS", timed_out=False
            )
        return connection

    async def _open(
        self, endpoint: Endpoint, key: PoolKey, *, within: float, tls: Origination | None
    ) -> H2Upstream:
        """A new connection, its reader started; its streams wait for the backend's first
        SETTINGS (RFC 9113 §3.4), so that they never exceed its concurrent-stream limit.

        Raises:
            ConnectFailed: connecting failed (one message, the endpoint's).
        """
        try:
            transport, _, _ = await connect([endpoint], None, within=within, tls=tls, h2=True)
        except ConnectFailed as err:  # one endpoint: its own message is enough
            detail = str(err).partition("(")[2].rpartition(")")[0]
            raise ConnectFailed(detail, timed_out=err.timed_out) from err
        transport.bound_sends(self._watchdog, self._send_timeout)
        connection = H2Upstream(
            transport,
            f"{endpoint.address}:{endpoint.port}",
            read_timeout=self._read_timeout,
            idle_timeout=self._idle_timeout,
            closed=lambda gone: self._forget(key, gone),
            record=self._record,
        )
        self._live.add(connection)
        self._nursery.start_soon(self._run, connection)
        return connection

    async def _run(self, connection: H2Upstream) -> None:
        try:
            await connection.run()
        finally:
            self._live.discard(connection)

    def _forget(self, key: PoolKey, connection: H2Upstream) -> None:
        """``connection`` takes no new stream any more: it leaves the pool."""
        connections = self._connections.get(key)
        if connections is not None and connection in connections:
            connections.remove(connection)
            if not connections:
                del self._connections[key]


def _key(endpoint: Endpoint, tls: Origination | None) -> PoolKey:
    """The endpoint's key, with the digest of its TLS settings (as :mod:`.pool` keys it)."""
    if tls is None:
        return (endpoint.address, endpoint.port)
    return (endpoint.address, endpoint.port, tls.key)
