"""JSON values of any depth, copied and written without recursion.

The real API server stores and serves an object nested thousands of levels deep where its CRD
preserves unknown fields (it refuses JSON past 10,000 levels); the emulator must too, so that
tests can hand one to a controller over the real protocol. ``copy.deepcopy`` recurses about
three frames a level and ``json.dumps`` one, so both fail far earlier: ``clone`` is a copy by
an explicit stack, and ``dumps`` writes with the standard encoder and, for a value too deep for
it, by an explicit stack.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

__all__ = ["clone", "dumps"]

T = TypeVar("T")


def clone(value: T) -> T:
    """A deep copy of a JSON value (dicts, lists, scalars), made level by level."""
    copied = _copy(value)
    pending: list[Any] = [copied] if copied is not value else []
    while pending:
        node = pending.pop()
        for key, child in list(node.items() if isinstance(node, dict) else enumerate(node)):
            if isinstance(child, dict | list):
                node[key] = _copy(child)
                pending.append(node[key])
    return copied


def _copy(value: T) -> T:
    if isinstance(value, dict):
        return dict(value)  # type: ignore[return-value]
    if isinstance(value, list):
        return list(value)  # type: ignore[return-value]
    return value


class _Text(str):
    """Text to write as it is (punctuation, a key), not as a JSON string."""


def dumps(value: object) -> bytes:
    """``value`` as JSON text, as ``json.dumps`` writes it, at any depth."""
    try:
        return json.dumps(value).encode()
    except RecursionError:  # the standard encoder recurses: write it level by level
        pass
    out: list[str] = []
    pending: list[object] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, _Text):
            out.append(item)
        elif isinstance(item, dict):
            out.append("{")
            pending.append(_Text("}"))
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):
                key, child = entries[index]
                pending.append(child)
                pending.append(_Text((", " if index else "") + json.dumps(str(key)) + ": "))
        elif isinstance(item, list):
            out.append("[")
            pending.append(_Text("]"))
            for index in range(len(item) - 1, -1, -1):
                pending.append(item[index])
                if index:
                    pending.append(_Text(", "))
        else:
            out.append(json.dumps(item))
    return "".join(out).encode()
