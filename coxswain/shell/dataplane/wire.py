"""Byte streams meet the sans-IO codec: reading events from a stream, and the proxy's own answers.

``EventReader`` is the loop of h11's trio example (``receive_some`` → ``receive_data`` →
``next_event``) for :mod:`coxswain.http1`. ``own_answer`` writes the responses the proxy
makes itself (404, 421, 5xx, redirects, and 400/413/431 for a ProtocolError): a short text body
with ``Content-Length`` (RFC 9112 §6.2), ``Server: coxswain`` (docs/contracts.md), ``Date``
(RFC 9110 §6.6.1, :func:`http_date`), and ``Connection: close`` when the connection ends after
it (RFC 9112 §9.6).
"""

from __future__ import annotations

import math
import time
from email.utils import formatdate
from typing import TYPE_CHECKING, Final, Protocol

import trio

from coxswain.http1 import NEED_DATA, Event, frame_response_head
from coxswain.route.answers import own_fields

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.http1.parser import RequestParser, ResponseParser

__all__ = [
    "RECEIVE_SIZE",
    "EventReader",
    "Expiring",
    "Timer",
    "Watchdog",
    "http_date",
    "own_answer",
]

RECEIVE_SIZE: Final = 64 * 1024


class Expiring(Protocol):
    """A wait the watchdog ends when it runs out: a connection's :class:`Timer`, a
    :class:`~.connection.Connection` whose send waits, a tunnel that went idle."""

    def expire(self) -> None: ...


class Watchdog:
    """Cancels the scopes of waits that ran out, checked every ``tick`` seconds (nginx's
    timers work the same way).

    A cancel scope per wait, or moving a scope's deadline, goes through trio's deadline heap,
    many times dearer than watching and unwatching a wait here (one dictionary store and one
    removal; docs/benchmarks.md, "Measurements behind the design"). The price is precision: a
    wait runs out between ``timeout - tick`` and ``timeout + tick`` seconds after it began,
    so ``tick`` is a small fraction of the shortest timeout it serves (``for_timeouts``).
    Timeouts that must be exact (a route's) use a scope deadline instead. Each tick walks
    every wait (one per open connection at most, plus one per exchange in flight): a
    millisecond or two per tick at ten thousand connections.

    What it watches are :class:`Expiring` waits, each at most once: watching one again moves
    its deadline.
    """

    __slots__ = ("_waits", "now", "tick")

    def __init__(self, tick: float) -> None:
        self.tick = tick
        self.now = trio.current_time()
        self._waits: dict[Expiring, float] = {}

    @classmethod
    def for_timeouts(cls, *timeouts: float) -> Watchdog:
        """A watchdog precise to a tenth of the shortest timeout: at most a second, at least
        a millisecond."""
        return cls(max(0.001, min(1.0, *(t / 10 for t in timeouts))))

    def watch(self, wait: Expiring, timeout: float) -> None:
        """``wait`` runs out ``timeout`` seconds from now."""
        self._waits[wait] = self.now + timeout

    def unwatch(self, wait: Expiring) -> None:
        """The wait is over."""
        self._waits.pop(wait, None)

    async def run(self) -> None:
        """Check the waits every ``tick`` until cancelled."""
        while True:
            await trio.sleep(self.tick)
            self.now = now = trio.current_time()
            expired = [wait for wait, deadline in self._waits.items() if deadline <= now]
            for wait in expired:
                del self._waits[wait]
                wait.expire()


class Timer:
    """The waits of one client connection, bounded through one cancel scope.

    The connection's requests run inside ``scope``. A waiter arms the timer with its timeout
    while it waits (:meth:`arm`), and disarms it after; when the wait runs out the watchdog
    calls :meth:`expire`, which notes the waiter in ``stalled`` and cancels the scope, so the
    owner can say who was too slow. ``stalled`` stays None when the scope ended otherwise
    (its deadline, which a route's timeout sets, or a cancellation from outside).
    """

    __slots__ = ("_waiting", "scope", "stalled", "watchdog")

    def __init__(self, watchdog: Watchdog) -> None:
        self.watchdog = watchdog
        self.scope = trio.CancelScope()
        self.stalled: object | None = None
        self._waiting: object | None = None

    def arm(self, waiter: object, timeout: float) -> None:
        """``waiter`` waits for at most ``timeout`` seconds from now."""
        self._waiting = waiter
        self.watchdog.watch(self, timeout)

    def disarm(self) -> None:
        """The wait is over."""
        self._waiting = None
        self.watchdog.unwatch(self)

    def expire(self) -> None:
        """The armed wait ran out (called by the watchdog)."""
        self.stalled = self._waiting
        self.scope.cancel()

    def ran_out(self, waiter: object) -> None:
        """A wait of a task working inside this timer's scope, on a timer of its own, ran
        out: end the scope as if ``waiter`` had waited here (an HTTP/2 backend's request
        body is sent beside its response, :mod:`.relay_h2`)."""
        self.stalled = waiter
        self.scope.cancel()


class EventReader:
    """Reads codec events from a stream, receiving bytes only when the parser needs them.

    ``read_timeout`` bounds each wait for bytes (not the whole message), as nginx's
    ``client_body_timeout`` and ``proxy_read_timeout`` do: a peer that sends slowly but
    steadily is served, one that stalls is not. The ``timer`` keeps that bound: a stall
    cancels the timer's scope, and the owner reads ``timer.stalled``. A reader with a finite
    timeout therefore needs a timer whenever it reads; without a timer (between exchanges,
    or for a caller that bounds the wait itself) it reads with ``next(math.inf)``.
    """

    __slots__ = ("parser", "read_timeout", "stream", "timer")

    def __init__(
        self,
        stream: trio.abc.ReceiveStream,
        parser: RequestParser | ResponseParser,
        *,
        read_timeout: float = math.inf,
        timer: Timer | None = None,
    ) -> None:
        self.stream = stream
        self.parser = parser
        self.read_timeout = read_timeout
        self.timer = timer

    async def next(self, read_timeout: float | None = None) -> Event:
        """The next event; the peer closing becomes EOF for the parser. ``read_timeout``
        replaces the reader's own for this call (``math.inf``: the caller bounds the wait)."""
        parser = self.parser
        timeout = self.read_timeout if read_timeout is None else read_timeout
        received = False
        while True:
            event = parser.next_event()
            if event is not NEED_DATA:
                return event
            if received:  # the last bytes made no event (a head in pieces): a receive that
                # finds bytes does not yield (.connection), so yield here, and notice a timeout
                await trio.lowlevel.checkpoint()
            received = True
            if timeout == math.inf:
                data = await self.stream.receive_some(RECEIVE_SIZE)
            else:
                timer = self.timer
                assert timer is not None, "a finite read timeout is kept by a timer"
                timer.arm(self, timeout)
                data = await self.stream.receive_some(RECEIVE_SIZE)
                timer.disarm()
            # exactly bytes: the compiled codec checks the declared type (setup.py)
            parser.receive_data(bytes(data))

    def skip_end(self) -> None:
        """Take the ``EndOfMessage`` of a message without a body, which the parser holds."""
        self.parser.next_event()


class _Dated:
    """The ``Date`` of the current second, formatted once per second (nginx caches its
    ``ngx_cached_http_time`` the same way): formatting costs more than the rest of a small
    response's head."""

    __slots__ = ("second", "value")

    def __init__(self) -> None:
        self.second = -1
        self.value = b""


_DATED: Final = _Dated()


def http_date() -> bytes:
    """Now as an IMF-fixdate (RFC 9110 §5.6.7), e.g. ``Sat, 05 Dec 2026 07:04:07 GMT``."""
    second = int(time.time())
    if second != _DATED.second:
        _DATED.value = formatdate(second, usegmt=True).encode("ascii")
        _DATED.second = second
    return _DATED.value


def own_answer(
    status: int,
    text: str,
    *,
    close: bool,
    location: str | None = None,
    fields: Sequence[tuple[bytes, bytes]] = (),
    head_only: bool = False,
) -> bytes:
    """A complete response the proxy makes itself.

    Args:
        status: the status code; a 204 has neither body nor ``Content-Length`` (RFC 9110
            §8.6, §15.3.5).
        text: a sentence for the body (the reason phrase is prepended).
        close: announce that the connection closes after this response.
        location: the ``Location`` of a redirect (RFC 9110 §10.2.2).
        fields: more header fields (a CORS preflight's, ``route.cors``).
        head_only: the request was HEAD: the same header section, no body (RFC 9110 §9.3.2).
    """
    headers, body = own_fields(status, text, date=http_date(), location=location, fields=fields)
    if close:
        headers.append((b"connection", b"close"))
    head = frame_response_head(status=status, headers=tuple(headers))
    return head if head_only else head + body
