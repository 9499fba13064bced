"""Layer-4 test pieces: snapshots with TLS, TCP and UDP listeners, a proxy serving them in
this process, and echo backends (TCP, TLS with trustme certificates, UDP) on 127.0.0.1."""

from __future__ import annotations

import socket
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio
from pyrsistent import pmap, pvector

from coxswain.compile.scope import GatewayScope
from coxswain.compile.snapshot import (
    Backend,
    Certificate,
    Endpoint,
    GatewayRule,
    IngressTable,
    ListenerHealth,
    ListenerTable,
    RouteAction,
    RouteMatch,
    RouteRef,
    Snapshot,
)
from coxswain.shell.dataplane.server import Proxy, ProxyConfig

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator

    import trustme

    from coxswain.shell.dataplane.streams import StreamSettings


@dataclass(frozen=True, slots=True)
class Route:
    """A stream route: its route host, its name, and its backends' endpoint ports."""

    host: str
    name: str
    ports: tuple[int, ...]
    proxy_protocol: bool = False


def stream_snapshot(
    port: int,
    protocol: str,
    routes: list[Route],
    *,
    listener_host: str = "*",
    certificate: Certificate | None = None,
    version: str = "sha256:1",
) -> Snapshot:
    """A dedicated proxy's snapshot with one layer-4 listener on ``port``: each route's host
    holds its one entry, each backend a Service of one endpoint on 127.0.0.1."""
    kind = {"TLS": "TLSRoute", "TCP": "TCPRoute", "UDP": "UDPRoute"}[protocol]
    hosts = {}
    endpoints = {}
    for route in routes:
        backends = []
        for backend_port in route.ports:
            service = f"{route.name}-{backend_port}"
            backends.append(
                Backend(
                    namespace="app",
                    service=service,
                    port=backend_port,
                    proxy_protocol=route.proxy_protocol,
                )
            )
            endpoints[f"app/{service}/{backend_port}"] = pvector(
                [Endpoint("127.0.0.1", backend_port)]
            )
        action = RouteAction(
            route=RouteRef(kind, "app", route.name, "spec.rules[0]"), backends=pvector(backends)
        )
        hosts[route.host] = pvector(
            [GatewayRule(match=RouteMatch(path_type="PathPrefix", path="/"), action=action)]
        )
    table = ListenerTable(
        gateway="app/edge",
        listener="l4",
        port=port,
        protocol=protocol,
        hostname=listener_host,
        hosts=pmap(hosts),
    )
    health = ListenerHealth(
        gateway="app/edge",
        listener="l4",
        port=port,
        target_port=port,
        protocol=protocol,
        hostname=None if listener_host == "*" else listener_host,
        attached_routes=len(routes),
        ready=True,
        reason="Ready",
    )
    tls = {} if certificate is None else {port: pmap({listener_host: certificate})}
    return Snapshot(
        version=version,
        scope=GatewayScope("app", "edge"),
        ingress=IngressTable(http_port=80, https_port=443),
        gateways=pmap({port: pmap({listener_host: table})}),
        tls=pmap(tls),
        listener_health=pvector([health]),
        endpoints=pmap(endpoints),
    )


def certificate_of(leaf: trustme.LeafCert) -> Certificate:
    return Certificate(
        chain_pem="".join(blob.bytes().decode() for blob in leaf.cert_chain_pems),
        key_pem=leaf.private_key_pem.bytes().decode(),
        secret="app/tls",
    )


@asynccontextmanager
async def running_proxy(settings: StreamSettings) -> AsyncIterator[Proxy]:
    """A proxy serving in this process (no snapshot yet: ``apply`` one)."""
    proxy = Proxy(ProxyConfig(bind="127.0.0.1", streams=settings))
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.serve)
        yield proxy
        nursery.cancel_scope.cancel()


async def _echo_until_eof(stream: trio.abc.Stream, greeting: bytes) -> None:
    """Send ``greeting``, then everything received, once the client half-closed."""
    received = bytearray()
    await stream.send_all(greeting)
    while data := await stream.receive_some(65536):
        received += data
    await stream.send_all(bytes(received))
    await stream.aclose()


async def _echo_chunks(stream: trio.abc.Stream, greeting: bytes) -> None:
    """Send ``greeting``, then echo each chunk as it comes."""
    try:
        await stream.send_all(greeting)
        while data := await stream.receive_some(65536):
            await stream.send_all(data)
    except trio.BrokenResourceError:
        pass
    finally:
        await trio.aclose_forcefully(stream)


async def tcp_backend(
    nursery: trio.Nursery,
    name: str,
    *,
    context: ssl.SSLContext | None = None,
    until_eof: bool = False,
) -> int:
    """An echo backend greeting with ``name:``; TLS with ``context``; its port."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port: int = listeners[0].socket.getsockname()[1]
    greeting = f"{name}:".encode()

    async def handle(stream: trio.SocketStream) -> None:
        conn: trio.abc.Stream = stream
        if context is not None:
            conn = trio.SSLStream(stream, context, server_side=True)
            try:
                await conn.do_handshake()
            except trio.BrokenResourceError:
                return
        if until_eof:
            await _echo_until_eof(conn, greeting)
        else:
            await _echo_chunks(conn, greeting)

    nursery.start_soon(trio.serve_listeners, handle, listeners)
    return port


async def udp_backend(nursery: trio.Nursery, name: str) -> int:
    """A UDP echo answering ``name:`` + the datagram; its port."""
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    await sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]

    async def serve() -> None:
        with sock:
            while True:
                data, address = await sock.recvfrom(65535)
                await sock.sendto(f"{name}:".encode() + data, address)

    nursery.start_soon(serve)
    return port


async def read_exactly(stream: trio.abc.Stream, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


class Trickle(trio.abc.HalfCloseableStream):
    """A TCP stream that sends each byte in a segment of its own (TCP_NODELAY): a client whose
    ClientHello reaches the proxy in many pieces."""

    def __init__(self, inner: trio.SocketStream) -> None:
        self.inner = inner
        inner.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.trickling = True

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if not self.trickling:
            await self.inner.send_all(data)
            return
        for byte in bytes(data):
            await self.inner.send_all(bytes([byte]))
            await trio.sleep(0.001)
        self.trickling = False  # the ClientHello is out; the rest at full speed

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await self.inner.receive_some(max_bytes)

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.inner.aclose()
