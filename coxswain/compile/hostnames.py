"""Hostnames: validation and the one-label wildcard rule, shared by Ingress and Gateway API.

Rules:
1. A hostname is an RFC 1123 DNS subdomain, lower-cased, at most 253 characters; an IP address
   is not a hostname (Ingress ``rules[].host`` and Gateway API ``Hostname`` both forbid it).
2. A wildcard is ``*.`` followed by a hostname, and matches exactly one DNS label in place of
   the ``*`` (Kubernetes Ingress spec "Hostname wildcards"; RFC 6125 §6.4.3). Gateway API
   wildcards also match more labels; that difference lives in the Gateway API pass, not here.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ascii_lower", "is_hostname", "is_wildcard", "wildcard_parent"]

MAX_HOSTNAME: Final = 253
_MAX_LABEL: Final = 63  # RFC 1123 §2.1
_LABEL_CHAR: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_DIGITS_AND_DOTS: Final = frozenset("0123456789.")


def is_hostname(host: str) -> bool:
    """Whether ``host`` (already lower-cased) is a DNS name that is not an IPv4 address.

    Character-class checks, linear in ``host`` (it comes from tenants)."""
    if not 0 < len(host) <= MAX_HOSTNAME or _DIGITS_AND_DOTS.issuperset(host):
        return False
    return all(
        0 < len(label) <= _MAX_LABEL
        and _LABEL_CHAR.issuperset(label)
        and label[0] != "-"
        and label[-1] != "-"
        for label in host.split(".")
    )


def ascii_lower(text: str) -> str:
    """``text`` lower-cased when it is ASCII, else as it is: ``str.lower`` maps some other
    characters to ASCII letters (KELVIN SIGN to ``k``), which would let a name that is not
    valid pass for one that is."""
    return text.lower() if text.isascii() else text


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is a valid ``*.`` wildcard hostname."""
    return host.startswith("*.") and is_hostname(host[2:])


def wildcard_parent(host: str) -> str | None:
    """The parent a one-label wildcard would be keyed by: ``a.b.c`` → ``b.c``; None for ``a``."""
    label, dot, parent = host.partition(".")
    return parent if label and dot and parent else None
