"""ingress-nginx's rate limits in one proxy (``coxswain.shell.dataplane.rate_limits``, with
nginx's ``limit_req`` algorithm in ``coxswain.route.rate_limit``), on a clock of the test's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrsistent import pvector

from coxswain.compile.snapshot import RateLimit
from coxswain.shell.dataplane import rate_limits
from coxswain.shell.dataplane.rate_limits import RateLimits

if TYPE_CHECKING:
    import pytest


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_client_gets_its_burst_then_the_rate_and_others_their_own() -> None:
    clock = Clock()
    limits = RateLimits(clock)
    limit = RateLimit(zone="app/shop", rps=2, burst_multiplier=1)
    assert [limits.refusal(limit, "10.0.0.1") for _ in range(3)] == [None, None, None]
    assert "limit-rps 2" in (limits.refusal(limit, "10.0.0.1") or "")
    assert limits.refusal(limit, "10.0.0.2") is None  # per client address
    clock.now += 0.5  # one request leaked away
    assert limits.refusal(limit, "10.0.0.1") is None
    assert limits.refusal(limit, "10.0.0.1") is not None
    clock.now += 60
    whitelisted = RateLimit(
        zone="app/shop", rpm=1, burst_multiplier=0, whitelist=pvector(["10.0.0.0/8"])
    )
    assert all(limits.refusal(whitelisted, "10.1.2.3") is None for _ in range(5))
    assert limits.refusal(whitelisted, "192.0.2.1") is None
    assert limits.refusal(whitelisted, "192.0.2.1") is not None


def test_clients_are_forgotten_least_recently_seen_first(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = RateLimits(Clock())
    limit = RateLimit(zone="app/shop", rps=1, burst_multiplier=0)
    monkeypatch.setattr(rate_limits, "MAX_KEYS", 2)
    assert limits.refusal(limit, "a") is None
    assert limits.refusal(limit, "a") is not None
    assert limits.refusal(limit, "b") is None
    assert limits.refusal(limit, "c") is None  # "a" forgotten: it starts afresh
    assert limits.refusal(limit, "a") is None
    assert limits.refusal(limit, "c") is not None  # "c" was kept


def test_limit_connections_counts_the_routings_alive() -> None:
    limits = RateLimits(Clock())
    limit = RateLimit(zone="app/shop", connections=1)

    class Holder:
        pass

    first = Holder()
    assert limits.hold(limit, "10.0.0.1", first) is None
    assert limits.hold(limit, "10.0.0.1", Holder()) is not None
    assert limits.hold(limit, "10.0.0.2", Holder()) is None
    del first  # the request ended
    assert limits.hold(limit, "10.0.0.1", Holder()) is None
