"""The peers a dedicated proxy trusts with the forwarding fields of its requests.

A proxy keeps the ``X-Real-IP``, ``Forwarded`` and ``X-Forwarded-*`` fields of a peer inside
its ``--trusted-proxies`` networks and drops them from any other (coxswain/route/forward.py,
docs/contracts.md, "Forwarded request"). A dedicated proxy's networks are its
``CoxswainGatewayParameters``' ``spec.trustedProxies`` (the Gateway's over the class's), else
the controller's ``--proxy-trusted-proxies`` (docs/dedicated-proxies.md).

The parameters are written by a tenant, so the value is checked before it reaches a command
line: a list of at most ``MAX_TRUSTED_PROXIES`` IPv4 or IPv6 networks (an address alone is a
/32 or /128; no host bits set), each at most ``_LONGEST`` characters. Anything else refuses the
parameters whole (``InvalidParameters``, the field named): trusting the class's or the
controller's networks instead would not be what the Gateway's owner asked for, and trusting
none would silently lose the client addresses they expect.

Pure; linear in the value, of which at most ``MAX_TRUSTED_PROXIES`` entries are read.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from coxswain.compile.model.limits import preview

__all__ = ["MAX_TRUSTED_PROXIES", "trusted_proxies"]

MAX_TRUSTED_PROXIES: Final = 64
"""Most networks one list may hold: far more than the load balancers in front of a Gateway, and
a bound on the command line of its proxy."""

_LONGEST: Final = 64  # characters: the longest network text is 49 (IPv4-mapped IPv6, /128)


def trusted_proxies(value: object, field: str) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    """The networks ``value`` lists, canonical (``10.0.0.1`` is ``10.0.0.1/32``; duplicates
    dropped, order kept), and the ``(field, why)`` of each unusable part; the networks mean
    nothing when there is one."""
    if not isinstance(value, list):
        return (), [(field, f"expected a list of networks, found {type(value).__name__}")]
    if len(value) > MAX_TRUSTED_PROXIES:
        return (), [(field, f"lists {len(value)} networks; at most {MAX_TRUSTED_PROXIES}")]
    found: dict[str, None] = {}
    problems: list[tuple[str, str]] = []
    for index, item in enumerate(value):
        at = f"{field}[{index}]"
        if not isinstance(item, str) or len(item) > _LONGEST:
            problems.append((at, f"{preview(item)} is not an IPv4 or IPv6 network"))
            continue
        try:
            found[str(ipaddress.ip_network(item))] = None
        except ValueError as err:  # its message quotes the value, at most _LONGEST characters
            problems.append((at, str(err)))
    return tuple(found), problems
