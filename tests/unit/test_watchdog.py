"""``wire.Watchdog`` and ``wire.Timer``: waits bounded through one scope, checked on a tick."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from coxswain.shell.dataplane.wire import Timer, Watchdog

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


def test_the_tick_is_a_tenth_of_the_shortest_timeout_and_at_most_a_second() -> None:
    async def main() -> None:
        assert Watchdog.for_timeouts(60.0, 30.0).tick == 1.0
        assert Watchdog.for_timeouts(60.0, 0.2).tick == pytest.approx(0.02)

    trio.run(main)


def run_with_watchdog(body: Callable[[Watchdog], Awaitable[None]]) -> None:
    async def main() -> None:
        watchdog = Watchdog(0.1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watchdog.run)
            await body(watchdog)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_an_armed_wait_that_runs_out_cancels_the_scope_and_names_the_waiter() -> None:
    async def body(watchdog: Watchdog) -> None:
        timer = Timer(watchdog)
        started = trio.current_time()
        with timer.scope:
            timer.arm("upstream", 1.0)
            await trio.sleep_forever()
        assert timer.scope.cancelled_caught
        assert timer.stalled == "upstream"
        assert 0.9 <= trio.current_time() - started <= 1.2  # within a tick of the timeout

    run_with_watchdog(body)


def test_a_disarmed_wait_never_fires_and_each_wait_restarts_the_count() -> None:
    async def body(watchdog: Watchdog) -> None:
        timer = Timer(watchdog)
        with timer.scope:
            for _ in range(5):  # five waits of 0.5 s under a 1 s timeout: 2.5 s in all
                timer.arm("client", 1.0)
                await trio.sleep(0.5)
                timer.disarm()
            await trio.sleep(2.0)
        assert not timer.scope.cancelled_caught
        assert timer.stalled is None

    run_with_watchdog(body)


def test_the_scope_deadline_fires_on_its_own_with_no_waiter_named() -> None:
    async def body(watchdog: Watchdog) -> None:
        timer = Timer(watchdog)
        timer.scope.deadline = trio.current_time() + 0.3  # a route's timeout
        with timer.scope:
            timer.arm("upstream", 10.0)
            await trio.sleep_forever()
        timer.disarm()
        assert timer.scope.cancelled_caught
        assert timer.stalled is None
        assert timer.scope.deadline != math.inf

    run_with_watchdog(body)
