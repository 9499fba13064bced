"""ingress-nginx's rate limits (``limit-rps``, ``limit-rpm``, ``limit-connections``,
``limit-burst-multiplier``, ``limit-whitelist``) per proxy replica, as ingress-nginx keeps them
per nginx instance (docs/migrating-from-ingress-nginx.md, "Access and limits").

Rules:
- **Zones.** Each Ingress is a zone (``RateLimit.zone``), shared by its paths; a zone counts
  per client address (nginx ``$binary_remote_addr``). The state outlives snapshots: a
  configuration change does not hand every client a fresh burst.
- **Rates.** ``limit-rps`` and ``limit-rpm`` each run nginx's ``limit_req … nodelay``
  (``route.rate_limit``) with a burst of ``limit-burst-multiplier`` times the rate; a request
  either refuses is answered 503 (ingress-nginx's ``limit-req-status-code``).
- **Concurrency.** ``limit-connections`` bounds the requests of one client in progress at
  once (nginx ``limit_conn``, which counts requests being processed); one more is answered
  503 (``limit-conn-status-code``). A request holds its place while the proxy holds its
  routing, so a request that ends in any way gives it back.
- **Bounded.** At most ``MAX_KEYS`` clients per zone and ``MAX_ZONES`` zones, the least
  recently seen forgotten first (nginx expires the least recently used states of a full
  zone too): a flood of addresses costs bounded memory, and a forgotten client starts afresh.
- Clients in ``limit-whitelist`` are never limited.
"""

from __future__ import annotations

import ipaddress
import time
import weakref
from typing import TYPE_CHECKING, Final, TypeVar

from coxswain.route.ingress_access import client_address
from coxswain.route.rate_limit import admitted

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.snapshot import RateLimit

__all__ = ["MAX_KEYS", "MAX_ZONES", "RateLimits"]

MAX_KEYS: Final = 16384
MAX_ZONES: Final = 1024
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_K = TypeVar("_K")
_V = TypeVar("_V")


class RateLimits:
    """Every zone's state in one proxy process; see the module docstring."""

    __slots__ = ("_clock", "_held", "_rates", "_whitelists")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # (zone, per, rate, burst) → client → [excess, last admitted]
        self._rates: dict[tuple[str, float, int, int], dict[str, list[float]]] = {}
        # (zone, client) → the routings of its requests in progress
        self._held: dict[tuple[str, str], weakref.WeakSet[object]] = {}
        self._whitelists: dict[tuple[str, ...], list[_Network]] = {}

    def refusal(self, limit: RateLimit, client: str | None) -> str | None:
        """Why this request exceeds ``limit-rps`` or ``limit-rpm``, or None to go on."""
        key = client or ""
        if limit.whitelist and self._whitelisted(limit, client):
            return None
        now = self._clock()
        for count, per, name in ((limit.rps, 1.0, "limit-rps"), (limit.rpm, 60.0, "limit-rpm")):
            if not count:
                continue
            burst = count * limit.burst_multiplier
            clients = _recent(self._rates, (limit.zone, per, count, burst), MAX_ZONES, dict)
            state = clients.pop(key, None)
            if state is None:
                state = [0.0, now]  # a new client is admitted with no excess (nginx)
            else:
                excess = admitted(state[0], now - state[1], count / per, burst)
                if excess is None:
                    clients[key] = state  # refused: its state is kept as it was
                    return f"{name} {count} (burst {burst}) exceeded by {client}"
                state = [excess, now]
            if len(clients) >= MAX_KEYS:
                del clients[next(iter(clients))]
            clients[key] = state
        return None

    def hold(self, limit: RateLimit, client: str | None, holder: object) -> str | None:
        """Count ``holder`` (a request's routing) as a request of ``client`` in progress
        until it is dropped, or say why one more is over ``limit-connections``."""
        if not limit.connections or (limit.whitelist and self._whitelisted(limit, client)):
            return None
        held = _recent(self._held, (limit.zone, client or ""), MAX_KEYS, weakref.WeakSet)
        if len(held) >= limit.connections:
            return f"limit-connections {limit.connections} exceeded by {client}"
        held.add(holder)
        return None

    def _whitelisted(self, limit: RateLimit, client: str | None) -> bool:
        written = tuple(limit.whitelist)
        networks = self._whitelists.get(written)
        if networks is None:
            if len(self._whitelists) >= MAX_ZONES:
                self._whitelists.clear()
            networks = self._whitelists[written] = _networks(written)
        address = client_address(client)
        return address is not None and any(address in n for n in networks)


def _recent(table: dict[_K, _V], key: _K, most: int, make: Callable[[], _V]) -> _V:
    """``table[key]``, made when missing, moved to the end (the most recently used); the
    least recently used entry is dropped when the table holds ``most``."""
    found = table.pop(key, None)
    if found is None:
        found = make()
        if len(table) >= most:
            del table[next(iter(table))]
    table[key] = found
    return found


def _networks(written: tuple[str, ...]) -> list[_Network]:
    """The whitelist's networks; one that does not parse (a hand-written snapshot) is none."""
    networks = []
    for text in written:
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            continue
    return networks
