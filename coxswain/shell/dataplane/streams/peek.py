"""What TLS passthrough needs before it decides, shared by the layer-4 listeners
(:mod:`.server`, Gateway API TLSRoute, over raw sockets) and the Ingress HTTPS port
(ingress-nginx's ``ssl-passthrough``, :mod:`..passthrough`, over the HTTP server's trio
streams).

- :func:`read_client_hello` reads a connection's ClientHello without answering it: at most
  16 KiB (:data:`~coxswain.route.client_hello.MAX_HELLO`), within the caller's time bound,
  parsed as it arrives (:mod:`coxswain.route.client_hello`), yielding between reads.
- :class:`Replay` gives the bytes read back to whoever reads the connection next: the backend
  a connection is passed to gets them first, or the proxy's own TLS handshake reads them.
- :func:`connect_first` connects to the first endpoint that accepts, each within a bound.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from coxswain.route.client_hello import MAX_HELLO, HelloReader, NeedMore, NotHello
from coxswain.shell.dataplane.streams.sockets import finish_connect, start_connect

if TYPE_CHECKING:
    import socket
    from collections.abc import Awaitable, Callable, Iterable

    from coxswain.compile.snapshot import Endpoint

__all__ = ["Peeked", "Replay", "connect_first", "read_client_hello"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Peeked:
    """A ClientHello read: its bytes, as received, and its server name (None without one)."""

    first: bytes
    sni: str | None


async def read_client_hello(
    receive: Callable[[int], Awaitable[bytes | bytearray]], within: float
) -> Peeked | str:
    """The ClientHello that ``receive(size)`` brings, or why there is none: ``"bad_hello"``
    (closed, or not a ClientHello; the reason is logged) or ``"hello_timeout"``. ``receive``
    yields on every call (a trio stream's ``receive_some``, or :func:`.sockets.receive`
    on a raw socket), so the loop does too."""
    reader = HelloReader()
    received = bytearray()
    with trio.move_on_after(within):
        while True:
            try:
                data = await receive(MAX_HELLO)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                return "bad_hello"
            received += data
            result = reader.feed(bytes(data))  # no copy of a bytes object
            if isinstance(result, NotHello):
                log.info("%s", result.reason)
                return "bad_hello"
            if not isinstance(result, NeedMore):
                return Peeked(bytes(received), result.sni)
    return "hello_timeout"


class Replay(trio.abc.Stream):
    """A stream whose first received bytes are ``first`` (already read from ``inner``)."""

    def __init__(self, inner: trio.abc.Stream, first: bytes) -> None:
        self.inner = inner
        self.first = first

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if self.first:
            data, self.first = self.first, b""
            await trio.lowlevel.checkpoint()
            return data
        return await self.inner.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def connect_first(endpoints: Iterable[Endpoint], each_within: float) -> socket.socket | None:
    """A connection to the first endpoint that accepts one, each tried for ``each_within`` s:
    a non-blocking standard-library socket (:mod:`.sockets`). Endpoints are addresses
    (EndpointSlices hold IPs), so a plain connect does: no name lookup, and none of
    ``open_tcp_stream``'s happy-eyeballs tasks on every connection."""
    for endpoint in endpoints:
        try:
            sock, connected = start_connect(endpoint.address, endpoint.port)
            if connected:
                return sock  # made within the call: no wait, so no time bound to set up
            with trio.move_on_after(each_within):
                return await finish_connect(sock)
        except OSError as err:
            log.info("endpoint %s:%d: %s", endpoint.address, endpoint.port, err)
    return None
