"""The event-loop lag probe (coxswain/shell/loop_lag.py) records how late each wake-up was, on
a clock the test moves: a loop held for 0.4 s shows as a lag of 0.4 s, a free one as none."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from coxswain.shell.loop_lag import lag_histogram, probe_loop_lag


def _samples(registry: CollectorRegistry) -> dict[str, float]:
    return {
        s.name: s.value
        for metric in registry.collect()
        for s in metric.samples
        if s.name.endswith(("_count", "_sum"))
    }


def test_a_held_loop_is_measured_as_lag() -> None:
    registry = CollectorRegistry()
    histogram = lag_histogram("test", registry)
    clock = trio.testing.MockClock()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(probe_loop_lag, histogram, 0.1)
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(0.05)  # the probe's wake-up not yet due: no lag
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(0.45)  # 0.4 s past it, as if the loop had been held
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()

    trio.run(main, clock=clock)
    samples = _samples(registry)
    assert samples["coxswain_test_event_loop_lag_seconds_count"] == 1
    assert samples["coxswain_test_event_loop_lag_seconds_sum"] == pytest.approx(0.4)
