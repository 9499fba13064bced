"""Idle upstream connections kept for reuse, per endpoint (RFC 9112 §9.3, persistence).

Opening a TCP connection per request costs a round trip and a socket in TIME_WAIT; keeping the
upstream's connections open after a complete keep-alive exchange avoids both. Rules:

- A connection is given back only after a complete exchange: the request fully sent, the
  response read to its end, both sides keep-alive, and no byte left over.
- At most ``max_idle`` idle connections per endpoint (the oldest is closed beyond that); an
  idle connection older than ``idle_timeout`` is closed rather than reused (upstreams close idle
  connections themselves, nginx after 75 s, so ours stays below typical values).
- A TLS connection (:mod:`.upstream_tls`) is kept under its endpoint and the digest of its
  settings, so that it is only ever reused for the same TLS settings, never for a plaintext
  backend.
- A connection the upstream has closed, or that has unexpected bytes waiting, is readable while
  idle: ``take`` checks with a zero-timeout poll and drops it, for connections idle at least
  ``CHECK_AFTER`` (upstreams close idle connections after seconds, not milliseconds; under load
  the poll would cost a system call per request for nothing). A close racing with reuse
  remains possible; :mod:`.upstream` retries such a failure once on a new connection, for idempotent
  requests without a body only (RFC 9112 §9.3.1, RFC 9110 §9.2.2).
"""

from __future__ import annotations

import select
import time
from collections import deque
from typing import TYPE_CHECKING, Final

import trio

from coxswain.shell.dataplane.connection import Connection
from coxswain.shell.dataplane.upstream_tls import TLSConnection, TLSFailed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.snapshot import Endpoint
    from coxswain.shell.dataplane.upstream_tls import Origination

__all__ = ["ConnectFailed", "PoolKey", "Upstream", "UpstreamPool", "connect"]

Upstream = Connection | TLSConnection
"""An upstream connection: plain, or TLS originated to a BackendTLSPolicy's backend."""
PoolKey = tuple[str, int] | tuple[str, int, str]
"""An endpoint ``(address, port)``, with the digest of the TLS settings for a TLS connection."""

# ingress-nginx's default (``upstream-keepalive-connections: 320``). Fewer than the requests a
# worker has in flight to one endpoint means closing and reopening connections under steady
# load, which costs CPU per request (docs/benchmarks.md, "Measurements behind the design").
DEFAULT_MAX_IDLE: Final = 320
DEFAULT_IDLE_TIMEOUT: Final = 30.0
CHECK_AFTER: Final = 1.0  # an idle connection younger than this is taken without a poll


class UpstreamPool:
    """Idle connections by :data:`PoolKey`; used from one trio thread only."""

    def __init__(
        self, *, max_idle: int = DEFAULT_MAX_IDLE, idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    ) -> None:
        self.max_idle = max_idle
        self.idle_timeout = idle_timeout
        self._idle: dict[PoolKey, deque[tuple[float, Upstream]]] = {}

    def idle_count(self, endpoint: PoolKey) -> int:
        """How many idle connections the endpoint has (for tests and metrics)."""
        return len(self._idle.get(endpoint, ()))

    def take(self, endpoint: PoolKey) -> Upstream | None:
        """The most recently used live idle connection to ``endpoint``, or None."""
        idle = self._idle.get(endpoint)
        now = time.monotonic()
        while idle:
            since, stream = idle.pop()
            idle_for = now - since
            if idle_for <= self.idle_timeout and (idle_for < CHECK_AFTER or _quiet(stream)):
                return stream
            stream.close()
        return None

    def close_all(self) -> None:
        """Close every idle connection (the proxy is stopping)."""
        for idle in self._idle.values():
            for _, stream in idle:
                stream.close()
        self._idle.clear()

    def give(self, endpoint: PoolKey, stream: Upstream) -> None:
        """Keep ``stream`` for reuse after a complete exchange."""
        idle = self._idle.setdefault(endpoint, deque())
        idle.append((time.monotonic(), stream))
        while len(idle) > self.max_idle:
            idle.popleft()[1].close()


class ConnectFailed(Exception):
    """No endpoint took a connection; ``timed_out`` when every attempt ran out of time."""

    def __init__(self, message: str, *, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


async def connect(
    endpoints: Sequence[Endpoint],
    pool: UpstreamPool | None,
    *,
    within: float,
    tls: Origination | None = None,
    h2: bool = False,
) -> tuple[Upstream, PoolKey, bool]:
    """A connection to the first endpoint that takes one: an idle one from ``pool``, else a
    new one within ``within`` seconds (its TLS handshake under ``tls`` included, ALPN ``h2``
    with ``h2``), trying the next endpoint on failure (nothing has been sent yet, so this is
    always safe).

    Returns the stream, its pool key, and whether the stream was reused.

    Raises:
        ConnectFailed: every endpoint refused, timed out or failed the TLS handshake.
    """
    failures = []
    timeouts = 0
    for endpoint in endpoints:
        key: PoolKey = (
            (endpoint.address, endpoint.port)
            if tls is None
            else (endpoint.address, endpoint.port, tls.key)
        )
        if pool is not None and (stream := pool.take(key)) is not None:
            return stream, key, True
        with trio.move_on_after(within):
            try:
                opened = Connection.take(
                    await trio.open_tcp_stream(endpoint.address, endpoint.port)
                )
            except OSError as err:
                failures.append(f"{endpoint.address}:{endpoint.port}: {err.strerror or err}")
                continue
            if tls is None:
                return opened, key, False
            secured: TLSConnection | None = None
            try:
                secured = await tls.handshake(opened, h2=h2)
            except TLSFailed as err:
                failures.append(f"{endpoint.address}:{endpoint.port}: {err}")
                continue
            finally:
                if secured is None:  # refused, or out of time: the connection is not used
                    opened.close()
            return secured, key, False
        timeouts += 1
        failures.append(f"{endpoint.address}:{endpoint.port}: no answer within {within:g} s")
    raise ConnectFailed(
        "no endpoint accepted a connection (" + "; ".join(failures) + ")",
        timed_out=timeouts == len(failures),
    )


def _quiet(stream: Upstream) -> bool:
    """Nothing to read on an idle connection: not closed by the peer, no stray bytes."""
    try:
        readable, _, _ = select.select([stream.socket.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable
