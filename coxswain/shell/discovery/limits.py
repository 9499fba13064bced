"""What one client identity can make the discovery server hold and log (docs/security.md, "The
holder of a proxy certificate"): its open streams, counted against a cap per identity and one
for the whole server, and its warnings, of which at most one line per kind and interval reaches
the log. Both live on the server's asyncio loop thread (:mod:`.server`), so neither locks."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import logging
    from collections.abc import Hashable

__all__ = ["IDENTITY_STREAMS", "SERVER_STREAMS", "Bounds", "LogBudget", "StreamCounts", "cut"]

IDENTITY_STREAMS: Final = "identity_streams"  # the identity has its cap of streams open
SERVER_STREAMS: Final = "server_streams"  # the server has its cap of streams open


class StreamCounts:
    """The streams open now, per identity and in all. An identity's count goes when its last
    stream ends, so this holds one entry per identity with a stream open."""

    def __init__(self, *, per_identity: int, total: int) -> None:
        self.per_identity = per_identity
        self.total = total
        self._open: dict[Hashable, int] = {}
        self._all = 0

    def open(self, identity: Hashable) -> str | None:
        """Count a new stream of ``identity``: None when it fits, else the cap it would pass
        (``IDENTITY_STREAMS`` or ``SERVER_STREAMS``), and nothing is counted."""
        held = self._open.get(identity, 0)
        if held >= self.per_identity:
            return IDENTITY_STREAMS
        if self._all >= self.total:
            return SERVER_STREAMS
        self._open[identity] = held + 1
        self._all += 1
        return None

    def close(self, identity: Hashable) -> None:
        """A stream that :meth:`open` counted has ended."""
        self._all -= 1
        held = self._open.pop(identity) - 1
        if held:
            self._open[identity] = held


@dataclass(slots=True)
class _Held:
    """The warnings held back for one (client, kind) in the current interval."""

    count: int = 0
    latest: str = ""


class LogBudget:
    """Warnings about clients, at most one line per (client, kind) and ``interval``: the first
    is logged at once; those that follow within the interval are counted, and when it ends one
    line says how many there were and shows the latest (which starts a new interval). So a
    client that makes the server warn in a loop costs the log one line per interval, and every
    warning is either logged or counted in a later line. State is kept only for the pairs that
    logged in the last interval."""

    def __init__(self, logger: logging.Logger, interval: float) -> None:
        self._log = logger
        self._interval = interval
        self._held: dict[tuple[Hashable, str], _Held] = {}

    def warning(self, client: Hashable, kind: str, message: str) -> None:
        """Log ``message`` about ``client`` now, or hold it back for the interval's summary.
        ``kind`` names what is counted, in the plural ("refused subscriptions"); ``message``
        is bounded by the caller. On the asyncio loop thread."""
        key = (client, kind)
        held = self._held.get(key)
        if held is not None:
            held.count += 1
            held.latest = message
            return
        self._log.warning("%s", message)
        self._start(key)

    def _start(self, key: tuple[Hashable, str]) -> None:
        self._held[key] = _Held()
        asyncio.get_running_loop().call_later(self._interval, self._release, key)

    def _release(self, key: tuple[Hashable, str]) -> None:
        held = self._held.pop(key)
        if held.count:
            self._log.warning(
                "%d more %s in the last %g s; the latest: %s",
                held.count,
                key[1],
                self._interval,
                held.latest,
            )
            self._start(key)


# Characters of a client's text (a scope's names, a Nack's detail) shown in a log line.
_SHOWN: Final = 200


def cut(text: str, most: int = _SHOWN) -> str:
    """``text`` as the server shows and keeps it: at most ``most`` characters of it."""
    if len(text) <= most:
        return text
    return f"{text[:most]}... ({len(text)} characters)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """The bounds one server holds its clients to (:func:`.server.open_discovery_server`)."""

    revoked_grace: float
    streams_per_identity: int
    max_streams: int
    log_interval: float
