"""The layer-4 data plane on real sockets: TLS Passthrough (the client sees the backend's own
certificate), SNI exact, wildcard and miss, a ClientHello in many segments, a silent client,
TLS Terminate, TCP half-close, routing kept across snapshots and the drain of removed
routes (TCP connections and UDP sessions), UDP sessions and their expiry."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import ssl
from typing import TYPE_CHECKING

import pytest
import trio
import trustme

from coxswain.route.proxy_protocol import SIGNATURE
from coxswain.shell.dataplane.streams import StreamSettings
from coxswain.shell.dataplane.streams.udp import UdpSettings
from tests.integration.proxy_harness import free_port
from tests.integration.streams_harness import (
    Route,
    Trickle,
    certificate_of,
    read_exactly,
    running_proxy,
    stream_snapshot,
    tcp_backend,
    udp_backend,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from prometheus_client import CollectorRegistry

CA = trustme.CA()
SETTINGS = StreamSettings(hello_timeout=2.0, drain=0.2, udp=UdpSettings(idle_timeout=0.3))


def _backend_context(*names: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    CA.issue_cert(*names).configure_cert(context)
    return context


def _client_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    CA.configure_trust(context)
    return context


async def _tls_exchange(
    port: int, sni: str, payload: bytes, *, trickle: bool = False
) -> tuple[bytes, str]:
    """Connect through the proxy with ``sni``, send ``payload``; what came back, and the
    subject alternative name of the certificate the client saw."""
    raw = await trio.open_tcp_stream("127.0.0.1", port)
    inner: trio.abc.Stream = Trickle(raw) if trickle else raw
    tls = trio.SSLStream(inner, _client_context(), server_hostname=sni)
    async with tls:
        await tls.do_handshake()
        seen = tls.getpeercert()
        assert seen is not None
        san = str(seen["subjectAltName"][0][1])
        await tls.send_all(payload)
        greeting = bytearray()
        while not greeting.endswith(b":" + payload):
            data = await tls.receive_some(100)
            if not data:
                break
            greeting += data
    return bytes(greeting), san


@contextlib.asynccontextmanager
async def _udp_client(port: int) -> AsyncIterator[trio.socket.SocketType]:
    """A UDP socket connected to the proxy's ``port``, for at most 30 s."""
    client = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with client, trio.fail_after(30):
        await client.connect(("127.0.0.1", port))
        yield client


async def _ask(client: trio.socket.SocketType, datagram: bytes) -> bytes:
    """Send one datagram on a connected UDP socket; the answer."""
    await client.send(datagram)
    return await client.recv(100)


async def _no_udp_session_open(registry: CollectorRegistry) -> None:
    """Until the gauge of open UDP sessions is 0 (what shows a session ended: no event to
    wait on)."""
    while registry.get_sample_value("coxswain_udp_open_sessions") != 0:  # noqa: ASYNC110
        await trio.sleep(0.05)


def test_passthrough_routes_by_sni_and_the_client_sees_the_backends_certificate() -> None:
    trio.run(_passthrough_routes_by_sni_and_the_client_sees_the_backends_certificate)


async def _passthrough_routes_by_sni_and_the_client_sees_the_backends_certificate() -> None:
    async with trio.open_nursery() as nursery:
        exact = await tcp_backend(nursery, "abc", context=_backend_context("abc.example.com"))
        wild = await tcp_backend(nursery, "any", context=_backend_context("*.example.com"))
        port = free_port()
        routes = [
            Route("abc.example.com", "exact", (exact,)),
            Route("*.example.com", "wild", (wild,)),
        ]
        async with running_proxy(SETTINGS) as proxy:
            await proxy.apply(stream_snapshot(port, "TLS", routes, listener_host="*.example.com"))
            assert proxy.ready()
            assert await _tls_exchange(port, "abc.example.com", b"hi") == (
                b"abc:hi",
                "abc.example.com",
            )
            assert await _tls_exchange(port, "x.example.com", b"yo") == (
                b"any:yo",
                "*.example.com",
            )
            # a ClientHello cut into one-byte segments is read whole
            assert await _tls_exchange(port, "abc.example.com", b"ok", trickle=True) == (
                b"abc:ok",
                "abc.example.com",
            )
            # a server name no listener takes: the connection is closed unanswered
            with pytest.raises(trio.BrokenResourceError):
                await _tls_exchange(port, "abc.example.org", b"no")
            exposition = proxy.metrics.exposition().decode()
            assert 'outcome="no_route"' in exposition
            assert 'outcome="forwarded",protocol="TLS",route="TLSRoute app/exact"' in exposition
        nursery.cancel_scope.cancel()


def test_a_client_that_sends_nothing_or_no_client_hello_is_closed() -> None:
    trio.run(_a_client_that_sends_nothing_or_no_client_hello_is_closed)


async def _a_client_that_sends_nothing_or_no_client_hello_is_closed() -> None:
    async with trio.open_nursery() as nursery:
        backend = await tcp_backend(nursery, "abc")
        port = free_port()
        settings = StreamSettings(hello_timeout=0.2)
        async with running_proxy(settings) as proxy:
            await proxy.apply(stream_snapshot(port, "TLS", [Route("*", "any", (backend,))]))
            with trio.fail_after(30):
                async with await trio.open_tcp_stream("127.0.0.1", port) as silent:
                    assert await silent.receive_some(10) == b""  # closed, never forwarded
                async with await trio.open_tcp_stream("127.0.0.1", port) as plain:
                    await plain.send_all(b"GET / HTTP/1.1\r\n\r\n")
                    assert await plain.receive_some(10) == b""
            exposition = proxy.metrics.exposition().decode()
            assert 'outcome="hello_timeout"' in exposition
            assert 'outcome="bad_hello"' in exposition
        nursery.cancel_scope.cancel()


def test_terminate_serves_the_listener_certificate_and_forwards_plaintext() -> None:
    trio.run(_terminate_serves_the_listener_certificate_and_forwards_plaintext)


async def _terminate_serves_the_listener_certificate_and_forwards_plaintext() -> None:
    async with trio.open_nursery() as nursery:
        backend = await tcp_backend(nursery, "plain")
        port = free_port()
        certificate = certificate_of(CA.issue_cert("foo.example.com"))
        snapshot = stream_snapshot(
            port,
            "TLS",
            [Route("foo.example.com", "app", (backend,))],
            listener_host="foo.example.com",
            certificate=certificate,
        )
        async with running_proxy(SETTINGS) as proxy:
            await proxy.apply(snapshot)
            assert await _tls_exchange(port, "foo.example.com", b"hi") == (
                b"plain:hi",
                "foo.example.com",
            )
        nursery.cancel_scope.cancel()


def test_tcp_half_close_is_passed_on_both_ways() -> None:
    trio.run(_tcp_half_close_is_passed_on_both_ways)


async def _tcp_half_close_is_passed_on_both_ways() -> None:
    async with trio.open_nursery() as nursery:
        backend = await tcp_backend(nursery, "db", until_eof=True)
        port = free_port()
        async with running_proxy(SETTINGS) as proxy:
            await proxy.apply(stream_snapshot(port, "TCP", [Route("*", "db", (backend,))]))
            received = bytearray()
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                await stream.send_all(b"one ")
                await stream.send_all(b"two")
                await stream.send_eof()  # the backend answers only once it sees the end
                with trio.fail_after(30):
                    while data := await stream.receive_some(100):
                        received += data
            assert received == b"db:one two"
        nursery.cancel_scope.cancel()


def test_a_tcp_connection_carries_megabytes_both_ways_at_once() -> None:
    trio.run(_a_tcp_connection_carries_megabytes_both_ways_at_once)


async def _a_tcp_connection_carries_megabytes_both_ways_at_once() -> None:
    """Both directions full at once, more than the sockets' buffers hold: every byte arrives,
    in order, and a stalled direction does not stall the other (one task drives both). The
    client reads only once it has sent everything, so the backend's bytes back up in the
    proxy meanwhile."""
    size, chunk = 32 << 20, os.urandom(1 << 16)
    expected = hashlib.sha256(chunk * (size // len(chunk))).hexdigest()

    async def send_and_digest(stream: trio.SocketStream, *, read_after: bool = False) -> str:
        async def send() -> None:
            for _ in range(size // len(chunk)):
                await stream.send_all(chunk)
            await stream.send_eof()

        digest = hashlib.sha256()
        async with trio.open_nursery() as nursery:
            if read_after:
                await send()
            else:
                nursery.start_soon(send)
            while data := await stream.receive_some(1 << 16):
                digest.update(data)
        return digest.hexdigest()

    digests: list[str] = []

    async def backend(stream: trio.SocketStream) -> None:
        async with stream:
            digests.append(await send_and_digest(stream))

    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        nursery.start_soon(trio.serve_listeners, backend, listeners)
        port = free_port()
        async with running_proxy(SETTINGS) as proxy:
            target = listeners[0].socket.getsockname()[1]
            await proxy.apply(stream_snapshot(port, "TCP", [Route("*", "db", (target,))]))
            with trio.fail_after(60):
                async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                    assert await send_and_digest(stream, read_after=True) == expected
                while not digests:  # noqa: ASYNC110 - the backend's task ends on its own
                    await trio.sleep(0.01)
        assert digests == [expected]
        nursery.cancel_scope.cancel()


def test_a_new_snapshot_keeps_connections_and_drains_removed_routes() -> None:
    trio.run(_a_new_snapshot_keeps_connections_and_drains_removed_routes)


async def _a_new_snapshot_keeps_connections_and_drains_removed_routes() -> None:
    async with trio.open_nursery() as nursery:
        first = await tcp_backend(nursery, "first")
        second = await tcp_backend(nursery, "second")
        port = free_port()
        async with running_proxy(SETTINGS) as proxy:
            await proxy.apply(stream_snapshot(port, "TCP", [Route("*", "db", (first,))]))
            kept = await trio.open_tcp_stream("127.0.0.1", port)
            fresh = None
            async with kept:
                assert await read_exactly(kept, 6) == b"first:"
                # the same route now goes to another backend: the open connection stays
                await proxy.apply(
                    stream_snapshot(port, "TCP", [Route("*", "db", (second,))], version="sha256:2")
                )
                fresh = await trio.open_tcp_stream("127.0.0.1", port)
                async with fresh:
                    assert await read_exactly(fresh, 7) == b"second:"
                    await kept.send_all(b"still")
                    assert await read_exactly(kept, 5) == b"still"
                    # the route is gone: after the drain period its connections are closed
                    removed = [Route("*", "other", (second,))]
                    await proxy.apply(stream_snapshot(port, "TCP", removed, version="sha256:3"))
                    with trio.fail_after(30):
                        assert await kept.receive_some(10) == b""
                        assert await fresh.receive_some(10) == b""
        nursery.cancel_scope.cancel()


def test_udp_sessions_forward_both_ways_and_expire_when_idle() -> None:
    trio.run(_udp_sessions_forward_both_ways_and_expire_when_idle)


async def _udp_sessions_forward_both_ways_and_expire_when_idle() -> None:
    async with trio.open_nursery() as nursery:
        backend = await udp_backend(nursery, "dns")
        port = free_port()
        async with running_proxy(SETTINGS) as proxy:
            await proxy.apply(stream_snapshot(port, "UDP", [Route("*", "dns", (backend,))]))
            async with _udp_client(port) as client:
                assert await _ask(client, b"q1") == b"dns:q1"
                assert await _ask(client, b"q2") == b"dns:q2"
                # the idle session ends
                await _no_udp_session_open(proxy.metrics.registry)
                assert await _ask(client, b"q3") == b"dns:q3"
            exposition = proxy.metrics.exposition().decode()
            assert 'outcome="opened",route="UDPRoute app/dns"} 2.0' in exposition
        nursery.cancel_scope.cancel()


def test_a_udp_session_whose_route_is_removed_ends_after_the_drain_period() -> None:
    trio.run(_a_udp_session_whose_route_is_removed_ends_after_the_drain_period)


async def _a_udp_session_whose_route_is_removed_ends_after_the_drain_period() -> None:
    settings = StreamSettings(drain=0.2, udp=UdpSettings(idle_timeout=600.0))
    async with trio.open_nursery() as nursery:
        first, second = [await udp_backend(nursery, name) for name in ("first", "second")]
        port = free_port()
        async with running_proxy(settings) as proxy:
            await proxy.apply(stream_snapshot(port, "UDP", [Route("*", "dns", (first,))]))
            async with _udp_client(port) as client:
                assert await _ask(client, b"q1") == b"first:q1"
                # the same route to another backend: the open session stays where it was
                moved = [Route("*", "dns", (second,))]
                await proxy.apply(stream_snapshot(port, "UDP", moved, version="sha256:2"))
                assert await _ask(client, b"q2") == b"first:q2"
                # the route is gone: the session ends after the drain period, long before
                # it would be idle, and the client's next datagram takes the new route
                removed = [Route("*", "other", (second,))]
                await proxy.apply(stream_snapshot(port, "UDP", removed, version="sha256:3"))
                await _no_udp_session_open(proxy.metrics.registry)
                assert await _ask(client, b"q3") == b"second:q3"
        nursery.cancel_scope.cancel()


def test_connections_past_the_bound_are_closed_at_once() -> None:
    trio.run(_connections_past_the_bound_are_closed_at_once)


async def _connections_past_the_bound_are_closed_at_once() -> None:
    async with trio.open_nursery() as nursery:
        backend = await tcp_backend(nursery, "db")
        port = free_port()
        settings = StreamSettings(max_connections=1, hello_timeout=60.0)
        async with running_proxy(settings) as proxy:
            await proxy.apply(stream_snapshot(port, "TLS", [Route("*", "db", (backend,))]))
            async with await trio.open_tcp_stream("127.0.0.1", port) as silent:
                await silent.send_all(b"\x16\x03\x01")  # a ClientHello that never completes
                exposition = ""
                with trio.fail_after(30):
                    while 'outcome="over_capacity"' not in exposition:
                        async with await trio.open_tcp_stream("127.0.0.1", port) as extra:
                            assert await extra.receive_some(10) == b""
                        exposition = proxy.metrics.exposition().decode()
        nursery.cancel_scope.cancel()


def test_a_backend_that_asks_for_it_gets_a_proxy_protocol_header_first() -> None:
    trio.run(_a_backend_that_asks_for_it_gets_a_proxy_protocol_header_first)


async def _a_backend_that_asks_for_it_gets_a_proxy_protocol_header_first() -> None:
    received: list[bytes] = []

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            data = bytearray()
            while len(data) < 16 + 12 + 5:  # the header with IPv4 addresses, then "hello"
                chunk = await stream.receive_some(100)
                if not chunk:
                    break
                data += chunk
            received.append(bytes(data))
            await stream.send_all(b"ok")

    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        backend = listeners[0].socket.getsockname()[1]
        nursery.start_soon(trio.serve_listeners, handle, listeners)
        port = free_port()
        async with running_proxy(SETTINGS) as proxy:
            routes = [Route("*", "db", (backend,), proxy_protocol=True)]
            await proxy.apply(stream_snapshot(port, "TCP", routes))
            async with await trio.open_tcp_stream("127.0.0.1", port) as client:
                await client.send_all(b"hello")
                assert await read_exactly(client, 2) == b"ok"
                client_port = client.socket.getsockname()[1]
        nursery.cancel_scope.cancel()
    data = received[0]
    assert data[:12] == SIGNATURE
    assert data[12:16] == b"\x21\x11\x00\x0c"  # v2 PROXY, TCP over IPv4, 12 bytes
    assert data[16:20] == data[20:24] == socket.inet_aton("127.0.0.1")
    assert int.from_bytes(data[24:26], "big") == client_port
    assert int.from_bytes(data[26:28], "big") == port
    assert data[28:] == b"hello"


def test_a_port_held_elsewhere_is_bound_once_it_is_free() -> None:
    trio.run(_a_port_held_elsewhere_is_bound_once_it_is_free)


async def _a_port_held_elsewhere_is_bound_once_it_is_free() -> None:
    async with trio.open_nursery() as nursery:
        backend = await udp_backend(nursery, "dns")
        port = free_port()
        holder = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        holder.bind(("127.0.0.1", port))
        async with running_proxy(SETTINGS) as proxy:
            await proxy.apply(stream_snapshot(port, "UDP", [Route("*", "dns", (backend,))]))
            assert not proxy.ready()  # the apply went on; the port is tried again
            holder.close()
            with trio.fail_after(30):
                while not proxy.ready():  # noqa: ASYNC110 (readiness has no event to wait on)
                    await trio.sleep(0.1)
                client = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                with client:
                    await client.connect(("127.0.0.1", port))
                    await client.send(b"q")
                    assert await client.recv(100) == b"dns:q"
        nursery.cancel_scope.cancel()


def _client_hello(server_name: str) -> bytes:
    """The first bytes a TLS client naming ``server_name`` sends."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = _client_context().wrap_bio(incoming, outgoing, server_hostname=server_name)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_a_silent_client_delays_none_of_the_connections_accepted_with_it() -> None:
    trio.run(_a_silent_client_delays_none_of_the_connections_accepted_with_it)


async def _a_silent_client_delays_none_of_the_connections_accepted_with_it() -> None:
    async with trio.open_nursery() as nursery:
        backend = await tcp_backend(nursery, "abc")
        port = free_port()
        async with running_proxy(StreamSettings(hello_timeout=60.0)) as proxy:
            await proxy.apply(stream_snapshot(port, "TLS", [Route("*", "any", (backend,))]))
            hello = _client_hello("abc.example.com")
            # all in the listen queue before the proxy runs again: one accept batch, the
            # silent client first
            silent = socket.create_connection(("127.0.0.1", port))
            others = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
            with silent, trio.fail_after(30):
                for sock in others:
                    sock.sendall(hello)
                for sock in others:
                    stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
                    async with stream:
                        assert await read_exactly(stream, 4) == b"abc:"
                exposition = proxy.metrics.exposition().decode()
                assert 'outcome="forwarded",protocol="TLS",route="TLSRoute app/any"} 4.0' in (
                    exposition
                )
                assert 'outcome="hello_timeout"' not in exposition  # the silent one waits on
        nursery.cancel_scope.cancel()


def test_a_backend_that_refuses_is_counted_and_the_client_closed() -> None:
    trio.run(_a_backend_that_refuses_is_counted_and_the_client_closed)


async def _a_backend_that_refuses_is_counted_and_the_client_closed() -> None:
    port, nobody = free_port(), free_port()  # nothing listens on the backend's port
    async with running_proxy(SETTINGS) as proxy:
        await proxy.apply(stream_snapshot(port, "TCP", [Route("*", "gone", (nobody,))]))
        with trio.fail_after(30):
            async with await trio.open_tcp_stream("127.0.0.1", port) as client:
                assert await client.receive_some(10) == b""
        exposition = proxy.metrics.exposition().decode()
        assert 'outcome="connect_failed",protocol="TCP",route="TCPRoute app/gone"} 1.0' in (
            exposition
        )
