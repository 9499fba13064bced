"""ingress-nginx's rate-limit annotations, read into
:class:`~coxswain.compile.snapshot.RateLimit` (docs/migrating-from-ingress-nginx.md, "Access
and limits"; the proxy's side: ``shell.dataplane.rate_limits``). Pure.

Rules, ingress-nginx's (its annotation reference and its ``ratelimit`` parser):
1. ``limit-rps``, ``limit-rpm`` and ``limit-connections`` are whole numbers; 0 or unset is no
   limit; without any of the three there is no rate limit.
2. ``limit-burst-multiplier`` (default 5) times each rate is that rate's burst.
3. ``limit-whitelist`` (or ``limit-allowlist``): comma-separated networks whose clients are
   not limited.
4. A value that does not parse is reported and the Ingress gets no rate limit, as
   ingress-nginx drops the configuration whose annotation fails to parse.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Final

from pyrsistent import pvector

from coxswain.compile.ingress.registry import annotation_value, invalid_annotation
from coxswain.compile.snapshot import RateLimit

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.objects import Ingress

__all__ = ["read_rate_limit"]

MAX_COUNT: Final = 1_000_000
MAX_NETWORKS: Final = 256


def read_rate_limit(ingress: Ingress, found: list[Diagnostic]) -> RateLimit | None:
    """The rate limits of ``ingress``, or None (rules 1 to 4)."""
    counts: dict[str, int] = {}
    for name in ("limit-rps", "limit-rpm", "limit-connections", "limit-burst-multiplier"):
        read = annotation_value(ingress, name)
        if read is None:
            continue
        value = read[0].strip()
        if not value.isdigit() or int(value) > MAX_COUNT:
            return _dropped(ingress, found, read[1], f"{value[:20]!r} is not a whole number")
        counts[name] = int(value)
    if not any(counts.get(n) for n in ("limit-rps", "limit-rpm", "limit-connections")):
        return None
    allowed = annotation_value(ingress, "limit-whitelist") or annotation_value(
        ingress, "limit-allowlist"
    )
    networks: list[str] = []
    if allowed is not None:
        parts = [p.strip() for p in allowed[0].split(",") if p.strip()]
        if len(parts) > MAX_NETWORKS:
            return _dropped(ingress, found, allowed[1], f"names over {MAX_NETWORKS} networks")
        for part in parts:
            try:
                networks.append(str(ipaddress.ip_network(part, strict=False)))
            except ValueError:
                return _dropped(ingress, found, allowed[1], f"{part[:60]!r} is no network")
    return RateLimit(
        zone=f"{ingress.meta.key.namespace}/{ingress.meta.key.name}",
        rps=counts.get("limit-rps", 0),
        rpm=counts.get("limit-rpm", 0),
        connections=counts.get("limit-connections", 0),
        burst_multiplier=counts.get("limit-burst-multiplier", 5),
        whitelist=pvector(networks),
    )


def _dropped(ingress: Ingress, found: list[Diagnostic], key: str, why: str) -> RateLimit | None:
    """None, having reported why (rule 4)."""
    found.append(invalid_annotation(ingress, key, f"{why}; the Ingress gets no rate limit"))
    return None
