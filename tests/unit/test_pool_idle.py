"""``UpstreamPool`` on real sockets: an idle upstream connection is reused only while it is
quiet (its peer has neither closed it nor sent stray bytes), younger than the idle timeout, and
within the pool's size (RFC 9112 §9.3).

The pool's clock is a fake one, so that "idle for longer than ``CHECK_AFTER``" or "past the
idle timeout" holds without waiting; what the peer did is waited for with a deadline (the
socket becoming readable), never slept for.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import pytest
import trio

from coxswain.compile.snapshot import Endpoint
from coxswain.shell.dataplane import pool
from coxswain.shell.dataplane.connection import Connection
from coxswain.shell.dataplane.pool import CHECK_AFTER, UpstreamPool, connect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

DEADLINE = 5.0  # seconds for loopback events that take microseconds


class Clock:
    """The pool's ``time`` module: ``monotonic`` reads ``now``, which the tests move."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(pool, "time", fake)
    return fake


class Upstream:
    """A listener on 127.0.0.1 and the connections made to it: ours (``Connection``, as the
    proxy holds them) paired with the upstream's end of each."""

    def __init__(self, listener: trio.SocketListener, stack: AsyncExitStack) -> None:
        self.listener = listener
        self.stack = stack
        self.port: int = listener.socket.getsockname()[1]
        self.key = ("127.0.0.1", self.port)
        self.endpoints = [Endpoint(address="127.0.0.1", port=self.port)]

    async def pair(self) -> tuple[Connection, trio.SocketStream]:
        ours = Connection.take(await trio.open_tcp_stream("127.0.0.1", self.port))
        self.stack.callback(ours.close)
        return ours, await self.accept()

    async def accept(self) -> trio.SocketStream:
        with trio.fail_after(DEADLINE):
            theirs = await self.listener.accept()
        self.stack.push_async_callback(theirs.aclose)
        return theirs


def run(test: Callable[[Upstream], Awaitable[None]]) -> None:
    async def main() -> None:
        async with AsyncExitStack() as stack:
            [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
            stack.push_async_callback(listener.aclose)
            await test(Upstream(listener, stack))

    trio.run(main)


async def readable(ours: Connection) -> None:
    """Wait until what the peer did (a close, bytes) has reached our socket."""
    with trio.fail_after(DEADLINE):
        await trio.lowlevel.wait_readable(ours.socket)


async def sees_close(theirs: trio.SocketStream) -> bool:
    """Whether the upstream finds its connection ended: we closed our end (a reset when we
    closed it with bytes unread, RFC 9293 §3.6.1)."""
    with trio.fail_after(DEADLINE):
        try:
            return await theirs.receive_some() == b""
        except trio.BrokenResourceError:
            return True


def closed(ours: Connection) -> bool:
    return ours.socket.fileno() == -1


def test_a_connection_the_upstream_closed_is_not_reused(clock: Clock) -> None:
    async def test(upstream: Upstream) -> None:
        idle = UpstreamPool()
        dead, theirs = await upstream.pair()
        idle.give(upstream.key, dead)
        await theirs.aclose()  # the upstream's own idle timeout
        await readable(dead)
        clock.now += CHECK_AFTER
        stream, key, reused = await connect(upstream.endpoints, idle, within=DEADLINE)
        upstream.stack.callback(stream.close)
        assert (key, reused) == (upstream.key, False)
        assert stream is not dead
        assert closed(dead)
        await upstream.accept()  # the new connection connect opened instead
        assert idle.idle_count(upstream.key) == 0

    run(test)


def test_a_connection_with_stray_bytes_waiting_is_not_reused(clock: Clock) -> None:
    """Bytes an idle upstream sent (a 408 before it closes, say) would be read as the answer
    to the next request sent on the connection."""

    async def test(upstream: Upstream) -> None:
        idle = UpstreamPool()
        dirty, theirs = await upstream.pair()
        idle.give(upstream.key, dirty)
        await theirs.send_all(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n\r\n")
        await readable(dirty)
        clock.now += CHECK_AFTER
        assert idle.take(upstream.key) is None
        assert closed(dirty)
        assert await sees_close(theirs)

    run(test)


def test_a_quiet_idle_connection_is_reused(clock: Clock) -> None:
    async def test(upstream: Upstream) -> None:
        idle = UpstreamPool()
        live, theirs = await upstream.pair()
        idle.give(upstream.key, live)
        clock.now += CHECK_AFTER  # old enough to be checked, and the check passes
        stream, key, reused = await connect(upstream.endpoints, idle, within=DEADLINE)
        assert (stream, key, reused) == (live, upstream.key, True)
        assert idle.idle_count(upstream.key) == 0
        await stream.send_all(b"ping")  # the same connection, still open at both ends
        with trio.fail_after(DEADLINE):
            assert await theirs.receive_some() == b"ping"

    run(test)


def test_a_connection_idle_for_less_than_check_after_is_taken_without_a_poll(
    clock: Clock,
) -> None:
    """Under load the poll would cost a system call per request for nothing: a close racing
    with reuse is left to the upstream exchange's retry."""

    async def test(upstream: Upstream) -> None:
        idle = UpstreamPool()
        young, theirs = await upstream.pair()
        idle.give(upstream.key, young)
        await theirs.aclose()
        await readable(young)
        clock.now += CHECK_AFTER / 2
        assert idle.take(upstream.key) is young
        assert not closed(young)

    run(test)


def test_a_connection_idle_past_the_idle_timeout_is_closed_not_reused(clock: Clock) -> None:
    async def test(upstream: Upstream) -> None:
        idle = UpstreamPool(idle_timeout=30.0)
        stream, theirs = await upstream.pair()
        idle.give(upstream.key, stream)
        clock.now += 30.0  # idle exactly the timeout: still reused
        assert idle.take(upstream.key) is stream
        idle.give(upstream.key, stream)  # idle from now on
        clock.now += 30.5
        assert idle.take(upstream.key) is None
        assert closed(stream)
        assert await sees_close(theirs)
        assert idle.idle_count(upstream.key) == 0

    run(test)


def test_the_oldest_idle_connection_is_closed_beyond_max_idle_per_endpoint(clock: Clock) -> None:
    async def test(upstream: Upstream) -> None:
        idle = UpstreamPool(max_idle=2)
        (first, first_peer), (second, _), (third, _) = [await upstream.pair() for _ in range(3)]
        other = ("127.0.0.1", 1)  # a second endpoint: its own limit, never dialled here
        other_stream, _ = await upstream.pair()
        for stream in (first, second):
            idle.give(upstream.key, stream)
            clock.now += 0.1
        idle.give(other, other_stream)
        assert (idle.idle_count(upstream.key), idle.idle_count(other)) == (2, 1)
        idle.give(upstream.key, third)
        assert (idle.idle_count(upstream.key), idle.idle_count(other)) == (2, 1)
        assert closed(first)
        assert await sees_close(first_peer)
        # the most recently used first: its peer most likely still holds it open
        assert [idle.take(upstream.key) for _ in range(3)] == [third, second, None]
        assert idle.take(other) is other_stream

    run(test)


def test_close_all_closes_every_idle_connection(clock: Clock) -> None:
    async def test(upstream: Upstream) -> None:
        idle = UpstreamPool()
        pairs = [await upstream.pair() for _ in range(3)]
        idle.give(upstream.key, pairs[0][0])
        idle.give(upstream.key, pairs[1][0])
        idle.give(("127.0.0.1", 1), pairs[2][0])
        idle.close_all()
        for ours, theirs in pairs:
            assert closed(ours)
            assert await sees_close(theirs)
        assert (idle.idle_count(upstream.key), idle.take(upstream.key)) == (0, None)

    run(test)
