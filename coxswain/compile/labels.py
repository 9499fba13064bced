"""Label sets written on the command line: ``key=value,key=value``."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["parse_selector"]

# Kubernetes label keys: an optional DNS-subdomain prefix and a name; values up to 63 characters.
_KEY: Final = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)
_VALUE: Final = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


def parse_selector(text: str) -> dict[str, str] | None:
    """``a=b,c=d`` → ``{"a": "b", "c": "d"}``; None when any part is not a valid label."""
    found: dict[str, str] = {}
    for part in text.split(","):
        key, equals, value = part.strip().partition("=")
        if not equals or _KEY.fullmatch(key) is None or _VALUE.fullmatch(value) is None:
            return None
        found[key] = value
    return found or None
