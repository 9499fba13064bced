"""Both directions of a layer-4 connection, until both ends are done or it is idle too long.

Backpressure: each direction sends what it received before it receives again, so a slow
reader slows the writer down to its pace (one buffer of at most ``CHUNK`` bytes in flight
per direction). Half-close is passed on: when one side ends its sending (EOF), the other side
is told with ``send_eof`` (a TCP FIN) and the opposite direction carries on until it ends too
(RFC 9293 §3.6: a half-closed connection still delivers the other way). A side that cannot
half-close (a TLS stream the proxy terminated: TLS 1.3 has no half-close of its own) is
closed when the other side ends. The idle timeout counts from the last byte either way
(give or take a second: :func:`touch`).

:func:`splice` joins trio streams (a TLS stream the proxy terminated); two plain sockets (TCP,
TLS Passthrough) are joined in one task by :func:`.pump.splice_sockets`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import trio

__all__ = ["CHUNK", "Spliced", "splice", "touch"]

CHUNK: Final = 64 * 1024


@dataclass(slots=True)
class Spliced:
    """Bytes moved each way: ``upstream`` from the client to the backend, ``downstream``
    back; ``idle`` when the idle timeout ended it."""

    upstream: int = 0
    downstream: int = 0
    idle: bool = False


async def splice(
    client: trio.abc.Stream, backend: trio.abc.Stream, *, idle_timeout: float
) -> Spliced:
    """Copy both ways until both directions ended, one failed, or nothing moved for
    ``idle_timeout`` seconds. The caller closes both streams."""
    done = Spliced()
    with trio.CancelScope(deadline=trio.current_time() + idle_timeout) as scope:

        async def copy(source: trio.abc.Stream, target: trio.abc.Stream, upstream: bool) -> None:
            try:
                while True:
                    data = await source.receive_some(CHUNK)
                    if not data:
                        break
                    touch(scope, idle_timeout)
                    await target.send_all(data)
                    if upstream:
                        done.upstream += len(data)
                    else:
                        done.downstream += len(data)
                if isinstance(target, trio.abc.HalfCloseableStream):
                    await target.send_eof()
                    return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            scope.cancel()  # one side failed, or cannot be half-closed: the connection ends

        async with trio.open_nursery() as nursery:
            nursery.start_soon(copy, client, backend, True)
            await copy(backend, client, False)  # in this task: one task less per connection
    done.idle = scope.cancelled_caught and trio.current_time() >= scope.deadline
    return done


def touch(scope: trio.CancelScope, idle_timeout: float) -> None:
    """Push an idle deadline on; at most once a second of it (moving a deadline costs more
    than a small chunk's own work), so a connection or session ends between
    ``idle_timeout`` and one second more after its last byte or datagram."""
    deadline = trio.current_time() + idle_timeout
    if deadline - scope.deadline >= min(1.0, idle_timeout / 2) or scope.deadline == math.inf:
        scope.deadline = deadline
