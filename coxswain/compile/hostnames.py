"""Hostnames: validation and the one-label wildcard rule, shared by Ingress and Gateway API.

Rules:
1. A hostname is an RFC 1123 DNS subdomain, lower-cased, at most 253 characters; an IP address
   is not a hostname (Ingress ``rules[].host`` and Gateway API ``Hostname`` both forbid it).
2. A wildcard is ``*.`` followed by a hostname, and matches exactly one DNS label in place of
   the ``*`` (Kubernetes Ingress spec "Hostname wildcards"; RFC 6125 §6.4.3). Gateway API
   wildcards also match more labels; that difference lives in the Gateway API pass, not here.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["is_hostname", "is_wildcard", "wildcard_parent"]

_LABEL: Final = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"  # RFC 1123 §2.1: 63 characters
_HOSTNAME: Final = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_ALL_DIGITS_AND_DOTS: Final = re.compile(r"[0-9.]+")
MAX_HOSTNAME: Final = 253


def is_hostname(host: str) -> bool:
    """Whether ``host`` (already lower-cased) is a DNS name that is not an IPv4 address."""
    return (
        len(host) <= MAX_HOSTNAME
        and _HOSTNAME.fullmatch(host) is not None
        and _ALL_DIGITS_AND_DOTS.fullmatch(host) is None
    )


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is a valid ``*.`` wildcard hostname."""
    return host.startswith("*.") and is_hostname(host[2:])


def wildcard_parent(host: str) -> str | None:
    """The parent a one-label wildcard would be keyed by: ``a.b.c`` → ``b.c``; None for ``a``."""
    label, dot, parent = host.partition(".")
    return parent if label and dot and parent else None
