"""How late the event loop wakes a task: the probe behind ``…_event_loop_lag_seconds``.

Every program here runs on one trio loop, and a piece of work that does not yield (a compile, a
large decode, a long loop over client bytes) stalls every other task of it: health answers,
lease renewals, requests. The probe asks to be woken every :data:`INTERVAL` seconds and records
how much later than asked it was woken; a loop that never runs long without yielding shows lags
of a millisecond or so, and a stall shows as its own length (docs/architecture.md, "Shell
patterns"). The controller exports ``coxswain_controller_event_loop_lag_seconds``; each proxy
process ``coxswain_proxy_event_loop_lag_seconds`` (summed over workers on the admin port; in
``coxswain serve`` the same loop also compiles the folder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NoReturn

import trio
from prometheus_client import Histogram

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["BUCKETS", "INTERVAL", "lag_histogram", "probe_loop_lag"]

INTERVAL: Final = 0.1
"""Seconds between wake-ups: ten samples a second, no measurable cost."""

BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
)  # fmt: skip
"""Up to 20 ms is a loop as it should be; past it, work that should have yielded. Edges every
10 ms up to 50 ms and close above it, so that a p99 can be read against a 50 ms target."""


def lag_histogram(program: str, registry: CollectorRegistry) -> Histogram:
    """``coxswain_<program>_event_loop_lag_seconds`` in ``registry``."""
    return Histogram(
        f"coxswain_{program}_event_loop_lag_seconds",
        "How much later than asked the event loop woke a task that sleeps "
        f"{INTERVAL:g} s at a time: the longest the loop ran without yielding",
        buckets=BUCKETS,
        registry=registry,
    )


async def probe_loop_lag(histogram: Histogram, interval: float = INTERVAL) -> NoReturn:
    """Sleep ``interval`` at a time until cancelled, observing each wake-up's lateness."""
    while True:
        asked = trio.current_time() + interval
        await trio.sleep_until(asked)
        histogram.observe(max(0.0, trio.current_time() - asked))
