"""Canonical JSON text of a raw body: comparable, immutable, the same for equal bodies.

A YAML body may have keys that are not strings (``1:``, ``true:``), which JSON's sorted output
cannot order among string keys; every key is made a string first. Only bodies within the
bounds of ``model.limits`` reach here, so the recursion is shallow.
"""

from __future__ import annotations

import json
from typing import Final

from coxswain.compile.model.limits import preview

__all__ = ["canonical_json"]

_INT_BITS: Final = 64


def canonical_json(value: object) -> str:
    """``value`` as JSON with sorted string keys; values JSON has no form for become text."""
    return json.dumps(_string_keys(value), sort_keys=True, default=str)


def _string_keys(value: object) -> object:
    """``value`` with every mapping key made a string, so that any YAML body can be ordered,
    and every integer wider than 64 bits made text (Python refuses to write one of more than
    4,300 digits; Kubernetes integers are 64-bit)."""
    if isinstance(value, dict):
        return {_text(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    if isinstance(value, int) and value.bit_length() > _INT_BITS:
        return preview(value)
    return value


def _text(key: object) -> str:
    if isinstance(key, int) and key.bit_length() > _INT_BITS:
        return preview(key)
    return str(key)
