"""When the controller's next reconcile round starts: at once for a lone change, after the
changes settle for a burst.

Why (docs/architecture.md, "Shell patterns"): a round's work is proportional to what changed
(the compile memo, the status and provision caches), so waiting buys nothing for a single
change; the wait is there for bursts, a ``kubectl apply`` of a folder or a rollout's
EndpointSlices, whose events would otherwise start a round each. Hence two cases: a change
that comes ``most`` seconds or more after the last round ended starts one at once; any other
waits until no change has come for ``least`` seconds, and
at most ``most`` after the first. A one-route edit then reaches the proxies in the time of its
round (docs/benchmarks.md, "Controller"); a burst still makes one round after the one its
first event started.
"""

from __future__ import annotations

import trio

__all__ = ["Settling"]


class Settling:
    """The changes since the last round, and the wait before the next; trio code only."""

    def __init__(self, least: float, most: float) -> None:
        self._least = least
        self._most = most
        self._changed = trio.Event()

    def poke(self) -> None:
        """Something changed: a round is due."""
        self._changed.set()

    async def settled(self, at_most: float) -> None:
        """Wait for a change, or ``at_most`` seconds (a retry, the periodic resync); then, unless
        it came ``most`` seconds or more after the call, until the changes settle. Called as
        soon as the last round ends, so a change made during the round (a status it wrote,
        watched back; a proxy's Ack of what it published) always waits to settle. The round the
        caller starts on return takes every change made before it."""
        called = trio.current_time()
        with trio.move_on_after(at_most):
            await self._changed.wait()
        first = trio.current_time()
        while first - called < self._most:
            self._changed = trio.Event()
            wait = min(self._least, max(0.0, first + self._most - trio.current_time()))
            with trio.move_on_after(wait):
                await self._changed.wait()
                continue
            break
        self._changed = trio.Event()
