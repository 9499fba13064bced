"""After a 101 (RFC 9110 §15.2.2, §7.8): the WebSocket tunnel, bytes copied both ways.

The connection carries no more HTTP/1.1 once the 101 is relayed, so nothing of the codec
bounds it: the tunnel ends when either side closes, when a peer stops taking bytes (each
connection's send timeout, :meth:`.Connection.bound_sends`), or when no byte crossed in either
direction for the idle timeout (:class:`Idle`, as Envoy's stream idle timeout ends a silent
upgraded stream; ingress-nginx users know it as ``proxy-read-timeout`` on a WebSocket). The
route's timeout, when it sets one, still bounds the whole exchange (:mod:`.upstream`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio

from coxswain.http1 import PAUSED, EndOfMessage, Paused, frame_response_head
from coxswain.route.forward import HOP_BY_HOP
from coxswain.shell.dataplane.wire import RECEIVE_SIZE

if TYPE_CHECKING:
    from coxswain.http1 import ResponseHead
    from coxswain.shell.dataplane.pool import Upstream
    from coxswain.shell.dataplane.wire import EventReader, Watchdog

__all__ = ["Idle", "tunnel"]


class Idle:
    """The tunnel's silence, on the proxy's watchdog: every piece copied either way moves
    its deadline (one dictionary store); when it runs out the tunnel's scope is cancelled."""

    __slots__ = ("scope", "timeout", "watchdog")

    def __init__(self, watchdog: Watchdog, timeout: float) -> None:
        self.watchdog = watchdog
        self.timeout = timeout
        self.scope = trio.CancelScope()

    def activity(self) -> None:
        """Bytes crossed: the silence starts again now."""
        if self.timeout != math.inf:
            self.watchdog.watch(self, self.timeout)

    def expire(self) -> None:
        """The tunnel stayed silent for the timeout (the watchdog calls this)."""
        self.scope.cancel()


async def tunnel(
    client: EventReader,
    client_stream: trio.abc.SendStream,
    reader: EventReader,
    upstream: Upstream,
    response: ResponseHead,
    *,
    idle: Idle,
) -> None:
    """Relay the 101, then the new protocol's bytes both ways until either side closes or the
    tunnel stays silent for ``idle``'s timeout."""
    headers = [(n, v) for n, v in response.headers if n not in HOP_BY_HOP]
    upgrade = next((v for n, v in response.headers if n == b"upgrade"), None)
    if upgrade is not None:
        headers.extend([(b"connection", b"upgrade"), (b"upgrade", upgrade)])
    await client_stream.send_all(
        frame_response_head(status=101, reason=response.reason, headers=tuple(headers))
    )
    while True:  # the 101's empty message ends, then the parser pauses
        event = await reader.next()
        if type(event) is Paused:
            break
        if type(event) is not EndOfMessage:
            return
    upstream_rest = reader.parser.detach()
    client_rest = client.parser.detach() if client.parser.next_event() is PAUSED else b""

    async def copy(rest: bytes, source: trio.abc.ReceiveStream, sink: trio.abc.SendStream) -> None:
        try:
            if rest:
                await sink.send_all(rest)
            while data := await source.receive_some(RECEIVE_SIZE):
                idle.activity()
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        nursery.cancel_scope.cancel()  # one side is done: so is the tunnel

    idle.activity()
    try:
        with idle.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(copy, upstream_rest, upstream, client_stream)
                nursery.start_soon(copy, client_rest, client.stream, upstream)
    finally:
        idle.watchdog.unwatch(idle)
