"""Backoff: jittered delays that double up to a ceiling and start over after a success."""

from __future__ import annotations

import trio
import trio.testing

from coxswain.shell.backoff import Backoff


def test_delays_double_up_to_the_ceiling_with_jitter_and_reset() -> None:
    backoff = Backoff(0.2, 1.0)
    waited: list[float] = []

    async def main() -> None:
        for _ in range(5):
            before = trio.current_time()
            await backoff.wait()
            waited.append(trio.current_time() - before)
        backoff.reset()
        before = trio.current_time()
        await backoff.wait()
        waited.append(trio.current_time() - before)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    ceilings = [0.2, 0.4, 0.8, 1.0, 1.0, 0.2]
    assert all(c / 2 <= w <= c for w, c in zip(waited, ceilings, strict=True)), waited
    assert backoff.delay == 0.4
