"""A loop over many items that yields to the event loop every few milliseconds.

Why (docs/architecture.md, "Shell patterns"): the controller's event loop also renews the
leader Lease and answers ``/healthz``, so no piece of work may hold it more than a few tens of
milliseconds. A pass over every object of a list (45,000 at 1,000 Gateways) or every status of a
round is cheap per item yet long in all; ``Pacer.tick`` after each item checkpoints once
``SLICE`` seconds have passed since the last one, which costs a clock read per item and keeps
each stretch on the loop within the slice.
"""

from __future__ import annotations

import time
from typing import Final

import trio

__all__ = ["SLICE", "Pacer"]

SLICE: Final = 0.01
"""Longest stretch between checkpoints, in seconds."""


class Pacer:
    """Checkpoints a long synchronous pass every ``slice`` seconds."""

    def __init__(self, slice_seconds: float = SLICE) -> None:
        self._slice = slice_seconds
        self._since = time.perf_counter()

    async def tick(self) -> None:
        """Yield to the event loop when the current stretch has lasted its slice."""
        if time.perf_counter() - self._since >= self._slice:
            await trio.lowlevel.checkpoint()
            self._since = time.perf_counter()
