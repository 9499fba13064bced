"""Jittered exponential backoff between retries of something that failed.

Each wait is a random 50–100% of a delay that doubles after every failure up to a ceiling, and
starts again from the first after a success: client-go's reflector and gRPC's reconnects work
the same way, so that a restarted API server or discovery server is not met by every client
at the same instant.
"""

from __future__ import annotations

import random

import trio

__all__ = ["Backoff"]


class Backoff:
    """Delays from ``first`` doubling up to ``most`` seconds (see the module docstring)."""

    __slots__ = ("_delay", "first", "most")

    def __init__(self, first: float, most: float) -> None:
        self.first = first
        self.most = most
        self._delay = first

    @property
    def delay(self) -> float:
        """The delay the next wait draws from (for the logs)."""
        return self._delay

    def reset(self) -> None:
        """A success: the next failure waits the first delay again."""
        self._delay = self.first

    async def wait(self) -> None:
        """Sleep a jittered delay, and double the next one."""
        await trio.sleep(self._delay * random.uniform(0.5, 1.0))
        self._delay = min(self._delay * 2, self.most)
