"""``compile.ingress.rate_limits.read_rate_limit`` at its edges
(docs/migrating-from-ingress-nginx.md, "Rate limits"): each count turns limiting on alone and
the others keep their defaults, counts to the bound, the allow list under either spelling and
to its bound, networks written with host bits, and the exact finding for a value dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from coxswain.compile.ingress.rate_limits import MAX_COUNT, MAX_NETWORKS, read_rate_limit
from coxswain.compile.snapshot import RateLimit
from tests.unit.ingress_world import annotated

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic

ZONE = "apps/web"


def limit(annotations: dict[str, str]) -> tuple[RateLimit | None, list[str]]:
    only, _ = annotated(annotations)
    found: list[Diagnostic] = []
    read = read_rate_limit(only, found)
    return read, [d.message for d in found]


@pytest.mark.parametrize(
    ("name", "field"),
    [("limit-rps", "rps"), ("limit-rpm", "rpm"), ("limit-connections", "connections")],
)
def test_each_count_alone_turns_limiting_on_and_the_others_keep_their_defaults(name, field):
    expected = RateLimit(zone=ZONE, rps=0, rpm=0, connections=0, burst_multiplier=5)
    assert limit({name: "7"}) == (RateLimit(**{**_fields(expected), field: 7}), [])


def _fields(limit: RateLimit) -> dict[str, object]:
    return {f: getattr(limit, f) for f in ("zone", "rps", "rpm", "connections", "burst_multiplier")}


def test_counts_to_the_bound_and_one_more_dropped():
    assert limit({"limit-rpm": str(MAX_COUNT)}) == (RateLimit(zone=ZONE, rpm=MAX_COUNT), [])
    over = str(MAX_COUNT + 1) + "0" * 20
    assert limit({"limit-rpm": over}) == (
        None,
        [f"{over[:20]!r} is not a whole number; the Ingress gets no rate limit"],
    )


def test_the_allow_list_under_either_spelling_with_host_bits_written():
    for name in ("limit-whitelist", "limit-allowlist"):
        read, found = limit({"limit-rps": "1", name: "10.1.2.3/8, 192.0.2.9"})
        assert read is not None
        assert (list(read.whitelist), found) == (["10.0.0.0/8", "192.0.2.9/32"], [])


def test_the_allow_list_to_its_bound_and_one_more_dropped():
    networks = [f"10.0.{n // 256}.{n % 256}" for n in range(MAX_NETWORKS + 1)]
    read, _ = limit({"limit-rps": "1", "limit-whitelist": ", ".join(networks[:MAX_NETWORKS])})
    assert read is not None
    assert len(read.whitelist) == MAX_NETWORKS
    assert limit({"limit-rps": "1", "limit-whitelist": ", ".join(networks)}) == (
        None,
        [f"names over {MAX_NETWORKS} networks; the Ingress gets no rate limit"],
    )
