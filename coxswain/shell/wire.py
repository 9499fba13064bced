"""Byte streams meet the sans-IO codec: reading events from a stream, and the proxy's own answers.

``EventReader`` is the loop of h11's trio example (``receive_some`` → ``receive_data`` →
``next_event``) for :mod:`coxswain.shell.http1`. ``own_answer`` writes the responses the proxy
makes itself (404, 421, 5xx, redirects, and 400/413/431 for a ProtocolError): a short text body
with ``Content-Length`` (RFC 9112 §6.2), ``Server: coxswain`` (ARCHITECTURE §7), and
``Connection: close`` when the connection ends after it (RFC 9112 §9.6).
"""

from __future__ import annotations

import math
from http import HTTPStatus
from typing import TYPE_CHECKING, Final

import trio

from coxswain.shell.http1 import NEED_DATA, Event, frame_response_head

if TYPE_CHECKING:
    from coxswain.shell.http1.parser import RequestParser, ResponseParser

__all__ = ["RECEIVE_SIZE", "EventReader", "Timer", "own_answer"]

RECEIVE_SIZE: Final = 64 * 1024


class Timer:
    """The deadlines of one exchange on a single cancel scope whose deadline moves.

    Entering a cancel scope for every wait cost about a tenth of a small proxied request's CPU
    (docs/benchmarks.md, "Proxy"); moving the deadline of one scope costs a heap push. The
    exchange runs inside ``scope``; ``limit`` is its own bound (the route's timeout, or
    infinity). A reader armed with its read timeout pulls the deadline closer while it waits
    and puts it back after; when the scope fires, ``stalled`` is the reader that was waiting
    (None: the limit fired), so the owner can say which peer was too slow.
    """

    __slots__ = ("limit", "scope", "stalled")

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.scope = trio.CancelScope(deadline=limit)
        self.stalled: EventReader | None = None

    def arm(self, reader: EventReader, timeout: float) -> None:
        """``reader`` waits for at most ``timeout`` seconds from now."""
        deadline = trio.current_time() + timeout
        if deadline < self.limit:
            self.scope.deadline = deadline
            self.stalled = reader

    def disarm(self) -> None:
        """The wait is over: back to the exchange's own limit."""
        if self.stalled is not None:
            self.scope.deadline = self.limit
            self.stalled = None


class EventReader:
    """Reads codec events from a stream, receiving bytes only when the parser needs them.

    ``read_timeout`` bounds each wait for bytes (not the whole message), as nginx's
    ``client_body_timeout`` and ``proxy_read_timeout`` do: a peer that sends slowly but
    steadily is served, one that stalls is not. With a ``timer`` the stall cancels the
    timer's scope (the owner reads ``timer.stalled``); without, it raises
    :class:`trio.TooSlowError`.
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
        replaces the reader's own for this call (the caller bounds the wait itself).

        Raises:
            trio.TooSlowError: no byte arrived within the read timeout (without a timer).
        """
        parser = self.parser
        timeout = self.read_timeout if read_timeout is None else read_timeout
        while True:
            event = parser.next_event()
            if event is not NEED_DATA:
                return event
            if timeout == math.inf:
                data = await self.stream.receive_some(RECEIVE_SIZE)
            elif (timer := self.timer) is not None:
                timer.arm(self, timeout)
                data = await self.stream.receive_some(RECEIVE_SIZE)
                timer.disarm()
            else:  # a bare scope: fail_after's generator context manager showed up at ~9 % of
                # a small request's samples (docs/benchmarks.md, "Proxy", profile)
                with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
                    data = await self.stream.receive_some(RECEIVE_SIZE)
                if scope.cancelled_caught:
                    raise trio.TooSlowError
            parser.receive_data(bytes(data))


def own_answer(
    status: int,
    text: str,
    *,
    close: bool,
    location: str | None = None,
    head_only: bool = False,
) -> bytes:
    """A complete response the proxy makes itself.

    Args:
        status: the status code.
        text: a sentence for the body (the reason phrase is prepended).
        close: announce that the connection closes after this response.
        location: the ``Location`` of a redirect (RFC 9110 §10.2.2).
        head_only: the request was HEAD: the same header section, no body (RFC 9110 §9.3.2).
    """
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    body = f"{status} {phrase}: {text}\n".encode("utf-8", "replace")
    headers = [
        (b"server", b"coxswain"),
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    if location is not None:
        headers.append((b"location", location.encode("latin-1", "replace")))
    if close:
        headers.append((b"connection", b"close"))
    head = frame_response_head(status=status, headers=tuple(headers))
    return head if head_only else head + body
