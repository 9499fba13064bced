"""What a client may make the proxy do for nothing, per HTTP/2 connection.

Frames that cost the server work without serving a request — a stream opened and reset at once
(the "rapid reset" attack, CVE-2023-44487), a PING, a SETTINGS frame — are each worth one unit
of a token bucket: ``burst`` units at first, ``rate`` more per second up to ``burst``. A
connection that spends more than it has is closed with GOAWAY ``ENHANCE_YOUR_CALM`` (RFC 9113
§5.4.1, §7): the legitimate client that resets a few streams, or pings to keep a connection
warm, never comes near it, and the attacker loses one connection per ``burst`` units. The
clock is the caller's: the budget itself is pure.
"""

from __future__ import annotations

from typing import Final

__all__ = ["BURST", "RATE", "Budget"]

BURST: Final = 200.0
"""Units a fresh connection has."""

RATE: Final = 100.0
"""Units regained per second."""


class Budget:
    """A token bucket: :meth:`spend` says whether the connection may go on."""

    __slots__ = ("_at", "_left", "burst", "rate")

    def __init__(self, now: float, *, burst: float = BURST, rate: float = RATE) -> None:
        self.burst = burst
        self.rate = rate
        self._left = burst
        self._at = now

    def spend(self, now: float, units: float = 1.0) -> bool:
        """Take ``units`` at time ``now`` (seconds, never decreasing); False when the
        connection has spent more than it had."""
        self._left = min(self.burst, self._left + (now - self._at) * self.rate) - units
        self._at = now
        return self._left >= 0
