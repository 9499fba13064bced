"""The proxy's HTTP/2 connections to a backend (RFC 9113), on real sockets: streams share a
connection up to the backend's SETTINGS_MAX_CONCURRENT_STREAMS, a GOAWAY sends new streams to a
new connection, an idle connection is closed, and a refused stream is sent again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import trio

from coxswain.compile.snapshot import Endpoint
from coxswain.http1 import Data, EndOfMessage
from coxswain.shell.dataplane.h2_pool import H2Pool
from coxswain.shell.dataplane.h2_upstream import StreamFailed
from coxswain.shell.dataplane.wire import Timer, Watchdog

from .h2_backend import H2Backend
from .proxy_harness import TIMEOUT, gateway_rule, request, run_proxy, snapshot
from .proxy_harness import backend as harness_backend

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from .proxy_harness import Running

REQUEST = [
    (b":method", b"GET"),
    (b":scheme", b"http"),
    (b":authority", b"backend.test"),
    (b":path", b"/"),
]


def with_pool(
    backend: H2Backend,
    check: Callable[[H2Pool, list[Endpoint], Watchdog], Awaitable[None]],
    *,
    idle_timeout: float = 30.0,
) -> None:
    async def main() -> None:
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(backend.serve)
                watchdog = Watchdog(0.05)
                nursery.start_soon(watchdog.run)
                pool = H2Pool(
                    nursery, watchdog, send_timeout=5, read_timeout=5, idle_timeout=idle_timeout
                )
                await check(pool, [Endpoint(address="127.0.0.1", port=port)], watchdog)
                nursery.cancel_scope.cancel()

    trio.run(main)


async def fetch(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> bytes:
    """One GET through the pool: the response body."""
    stream = await pool.open_stream(endpoints, REQUEST, end_stream=True, within=5, tls=None)
    timer = Timer(watchdog)
    try:
        _, ended = await stream.head(timer)
        body = b""
        while not ended:
            event = await stream.body.next()
            if isinstance(event, Data):
                body += event.data
            else:
                assert isinstance(event, EndOfMessage), event
                ended = True
        return body
    finally:
        stream.connection.forget(stream)


def test_streams_past_the_backends_limit_open_another_connection() -> None:
    backend = H2Backend(max_streams=2, delay=0.2)

    async def check(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> None:
        await fetch(pool, endpoints, watchdog)  # the backend's SETTINGS are known from now on
        bodies: list[bytes] = []

        async def one() -> None:
            bodies.append(await fetch(pool, endpoints, watchdog))

        async with trio.open_nursery() as requests:
            for _ in range(5):
                requests.start_soon(one)
        assert len(bodies) == 5
        assert backend.peak_streams <= 2
        assert backend.connections == 3  # 2 + 2 + 1 streams

    with_pool(backend, check)


def test_after_a_goaway_new_streams_go_to_a_new_connection() -> None:
    backend = H2Backend(goaway_after=1)

    async def check(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> None:
        bodies = [await fetch(pool, endpoints, watchdog) for _ in range(3)]
        assert bodies == [
            b"connection 1 stream 1",
            b"connection 2 stream 1",
            b"connection 3 stream 1",
        ]

    with_pool(backend, check)


def test_an_idle_connection_is_closed_with_goaway() -> None:
    backend = H2Backend()

    async def check(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> None:
        assert await fetch(pool, endpoints, watchdog) == b"connection 1 stream 1"
        assert await fetch(pool, endpoints, watchdog) == b"connection 1 stream 3"  # reused
        await backend.closed_one.wait()
        assert backend.goaways_received == 1
        assert pool.connection_count(("127.0.0.1", endpoints[0].port)) == 0
        assert await fetch(pool, endpoints, watchdog) == b"connection 2 stream 1"

    with_pool(backend, check, idle_timeout=0.3)


def test_a_refused_stream_is_sent_again_for_an_http1_client(tmp_path: Path) -> None:
    """Through the proxy, from an HTTP/1.1 client to an h2c backend of an HTTPRoute
    (HTTPRouteBackendProtocolH2C): the backend refuses the first stream unprocessed, and the
    request, which has no body, goes again."""
    backend = H2Backend(refuse_first=1)

    async def serve(*_: object, tls: object, task_status: trio.TaskStatus[int]) -> None:
        await backend.serve(task_status=task_status)

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([harness_backend("one", protocol="h2c")])],
        )

    def client(run: Running) -> None:
        response, body = request(run.gateway_port, "GET", "/", host="h2c.example")
        assert response.status == 200
        assert body == b"connection 1 stream 3"
        assert response.getheader("content-length") is None
        assert response.getheader("transfer-encoding") == "chunked"

    run_proxy(tmp_path, make, client, backends=("one",), echo=serve)


def test_a_goaway_refuses_only_the_streams_past_its_last_and_the_others_finish() -> None:
    """RFC 9113 §6.8: streams up to the GOAWAY's last stream id are processed and complete;
    those above were not, and are refused (safe to send again elsewhere)."""
    backend = H2Backend(goaway_at=3, delay=0.3)

    async def check(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> None:
        streams = [
            await pool.open_stream(endpoints, REQUEST, end_stream=True, within=5, tls=None)
            for _ in range(3)
        ]
        assert len({stream.connection for stream in streams}) == 1
        timer = Timer(watchdog)
        for stream, expected in zip(streams[:2], (1, 3), strict=True):
            _, ended = await stream.head(timer)
            assert not ended
            event = await stream.body.next()
            assert isinstance(event, Data)
            assert event.data == f"connection 1 stream {expected}".encode()
            assert isinstance(await stream.body.next(), EndOfMessage)
        with pytest.raises(StreamFailed) as refused:
            await streams[2].head(timer)
        assert refused.value.refused
        for stream in streams:
            stream.connection.forget(stream)
        assert pool.stream_count() == 0
        assert await fetch(pool, endpoints, watchdog) == b"connection 2 stream 1"

    with_pool(backend, check)


def test_streams_cancelled_anywhere_leave_their_connection() -> None:
    """A request cancelled while its stream opens (the HEADERS not flushed yet) or while it
    waits for the answer leaves no stream behind, in the pool or in ``h2``."""
    backend = H2Backend(delay=5)

    async def check(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> None:
        with trio.move_on_after(0.2):
            await fetch(pool, endpoints, watchdog)  # the connection is open from now on
        for _ in range(3):
            with trio.CancelScope() as scope:
                scope.cancel()  # the first checkpoint inside open_stream raises
                await pool.open_stream(endpoints, REQUEST, end_stream=True, within=5, tls=None)
        async with trio.open_nursery() as waiting:
            for _ in range(10):
                waiting.start_soon(fetch, pool, endpoints, watchdog)
            await trio.sleep(0.2)
            assert pool.stream_count() == 10
            waiting.cancel_scope.cancel()
        assert pool.stream_count() == 0
        (connection,) = pool.connections()
        assert connection.conn.open_streams == 0

    with_pool(backend, check)


def test_an_answer_that_crosses_the_streams_reset_leaves_the_connection_working() -> None:
    """The proxy resets a stream (its client went away) while the backend's answer is on its
    way: the late HEADERS are dropped (RFC 9113 §5.1, "closed"), not taken for a stream the
    backend opened, and the connection carries on."""
    backend = H2Backend(late_answer=True)

    async def check(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> None:
        stream = await pool.open_stream(endpoints, REQUEST, end_stream=True, within=5, tls=None)
        await trio.sleep(0.1)  # the backend has the request
        assert stream.connection.forget(stream)  # reset
        await stream.connection.flush()
        # the next stream goes out before the late answer comes back (h2 forgets stream 1)
        assert await fetch(pool, endpoints, watchdog) == b"connection 1 stream 3"
        assert backend.late_sent.is_set()
        assert await fetch(pool, endpoints, watchdog) == b"connection 1 stream 5"

    with_pool(backend, check)


def test_a_backend_that_breaks_http2_fails_its_own_connection_only() -> None:
    """A PUSH_PROMISE after the proxy said SETTINGS_ENABLE_PUSH 0 is a connection error
    (RFC 9113 §8.4, §5.4.1): the stream on that connection fails with the reason, and the
    next request goes out on a new connection."""
    backend = H2Backend(push_first=True)

    async def check(pool: H2Pool, endpoints: list[Endpoint], watchdog: Watchdog) -> None:
        stream = await pool.open_stream(endpoints, REQUEST, end_stream=True, within=5, tls=None)
        with pytest.raises(StreamFailed) as failed:
            await stream.head(Timer(watchdog))
        assert "the backend broke HTTP/2" in failed.value.reason
        assert not failed.value.refused
        stream.connection.forget(stream)
        assert await fetch(pool, endpoints, watchdog) == b"connection 2 stream 1"
        assert backend.goaways_received == 1  # the proxy said why

    with_pool(backend, check)
