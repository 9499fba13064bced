"""How one try of a forwarded request ends, whichever protocol the backend speaks.

The forwarder (:mod:`.upstream`) and its HTTP/2 relay (:mod:`.relay_h2`) share these: the
:class:`Answer` the proxy makes itself when a try fails before the response head reached the
client, the error for a client that broke its request body, and the rules of a rule's
``retry`` (Gateway API ``HTTPRouteRetry``) that both relays apply alike (:class:`Tries`): what
bounds one try, when another is due, and the answer after the last one
(:func:`after_retries`).
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Final

import trio

from coxswain.http1 import Data, EndOfMessage, ProtocolError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from coxswain.compile.snapshot import Retry
    from coxswain.http1 import Event, ResponseHead
    from coxswain.shell.dataplane.wire import Timer

__all__ = [
    "NO_SCOPE",
    "Answer",
    "ClientProtocolError",
    "Tries",
    "after_retries",
    "another_try",
    "body_event",
]

NO_SCOPE: Final = contextlib.nullcontext()
"""What bounds a try outside a retry policy: nothing but the exchange's own deadline."""


def after_retries(failure: Answer, retried: int) -> Answer:
    """The answer when the last try failed too: a connection that broke on every try is 503,
    as no endpoint is available to serve the request (Envoy answers the same)."""
    if not retried:
        return failure
    status = 503 if failure.status == 502 else failure.status
    return Answer(status, f"{failure.reason} (after {retried} retries)", failure.upstream)


class Answer(Exception):
    """Before any response byte reached the client: the proxy answers ``status`` itself."""

    def __init__(self, status: int, reason: str, upstream: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.upstream = upstream


class ClientProtocolError(Exception):
    """The client broke HTTP/1.1 inside the request body; answer ``status`` and close."""

    def __init__(self, error: ProtocolError) -> None:
        super().__init__(error.reason)
        self.error = error


class Tries:
    """The tries of one request under a rule's ``retry``: :meth:`begin` each, and
    :meth:`again` tells whether another is due. ``per_try``: the backend timeout, which
    bounds each try when finite (then a try that runs out is tried again); the route's
    request timeout bounds them all. ``back_off`` waits before retry number ``retried + 1``
    and counts it (:meth:`.upstream.Forwarder.back_off`)."""

    __slots__ = ("back_off", "per_try", "retried", "retry", "started", "timer")

    def __init__(
        self,
        retry: Retry,
        per_try: float,
        *,
        back_off: Callable[[Retry, int, str], Awaitable[int]],
        timer: Timer,
    ) -> None:
        self.retry = retry
        self.per_try = per_try
        self.back_off = back_off
        self.timer = timer
        self.retried = 0
        self.started = 0.0

    def begin(self) -> contextlib.AbstractContextManager[trio.CancelScope | None]:
        """What bounds the try that starts now."""
        self.started = trio.current_time()
        if self.per_try == math.inf:
            return NO_SCOPE
        return trio.CancelScope(deadline=self.started + self.per_try)

    async def again(
        self,
        failure: Answer | None,
        response: ResponseHead | None,
        scope: trio.CancelScope | None,
        upstream: str,
    ) -> bool:
        """Whether another try is due, after its backoff: the try failed, its scope ran
        out, or its response's status is retried (that response is dropped). If not, the
        try's backend timeout bounds the rest of the exchange (the ``timer``'s scope).

        Raises:
            Answer: the last try failed (:func:`after_retries`).
        """
        retry = self.retry
        if scope is not None and scope.cancelled_caught:
            failure = Answer(
                504, f"the upstream did not answer within {self.per_try:g} s", upstream
            )
        if failure is not None:
            if self.retried < retry.attempts and failure.status != 500:
                self.retried = await self.back_off(retry, self.retried, "connection")
                return True
            raise after_retries(failure, self.retried)
        assert response is not None
        if self.retried >= retry.attempts:
            return False
        if response.status in retry.codes:
            self.retried = await self.back_off(retry, self.retried, "status")
            return True
        if self.per_try < math.inf:
            timer = self.timer
            timer.scope.deadline = min(timer.scope.deadline, self.started + self.per_try)
        return False


async def another_try(
    tries: Tries | None,
    failure: Answer | None,
    response: ResponseHead | None,
    scope: trio.CancelScope | None,
    upstream: str,
) -> bool:
    """Whether another try is due (:meth:`Tries.again`); without a retry policy, never.

    Raises:
        Answer: the (last) try failed.
    """
    if tries is None:
        if failure is not None:
            raise failure
        return False
    return await tries.again(failure, response, scope, upstream)


def body_event(event: Event) -> Data | EndOfMessage:
    """A request body's event as the relays take it: ``Data`` or its end.

    Raises:
        ClientProtocolError: the client broke HTTP inside the body.
    """
    if type(event) is Data or type(event) is EndOfMessage:
        return event
    if type(event) is ProtocolError:
        raise ClientProtocolError(event)
    # the request parsers yield nothing else inside a body
    raise ClientProtocolError(ProtocolError(400, f"unexpected {event!r} in a body"))
