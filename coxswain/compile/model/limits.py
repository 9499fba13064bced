"""Bounds on the raw data a tenant controls, and the one walk that checks them.

A Kubernetes body is free-form below its typed fields: ``podTemplate`` and the other
``x-kubernetes-preserve-unknown-fields`` blocks, labels and annotations, and, in a manifest
that skipped CRD validation, anything at all. Everything that later walks a body (the
canonical JSON of a body, the strategic merge of pod templates, a ``repr`` in a message) is
recursive or linear in its expanded size, so a body is measured first, by ``measure``, which
is iterative (no depth of input can exhaust the stack) and stops as soon as a bound is passed
(a YAML alias used a billion times costs no more than the bound). What passes the bounds
cannot make those walks fail or run long; what does not is refused whole, naming the object and
the field (docs/security.md, "Limits").
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = [
    "MAX_OBJECT_DEPTH",
    "MAX_OBJECT_SIZE",
    "Excess",
    "measure",
    "preview",
]

MAX_OBJECT_DEPTH: Final = 64
"""Most objects and lists nested in one object body, the body itself counting as one.

The deepest field a Kubernetes object the compiler reads has (a pod template's node affinity)
is about fifteen levels down; 64 leaves room for any real template while keeping every
recursive walk far from Python's recursion limit (about 1,000 frames)."""

MAX_OBJECT_SIZE: Final = 3 * 1024 * 1024
"""Largest object body, in units of one per value plus one per character of every string
(keys included): about its size in JSON bytes. The API server refuses requests above 3 MiB,
so no object of a real cluster is larger; a manifest's YAML aliases are counted expanded."""

_PREVIEW: Final = 60


@dataclass(frozen=True, slots=True)
class Excess:
    """Why a body is refused: the field (dotted path), a reason word and a sentence."""

    field: str
    reason: str
    message: str


def measure(value: object, *, max_depth: int, max_size: int) -> int | Excess:
    """The size of ``value`` when it is within the bounds, else the first bound it passes.
    Pure.

    Depth counts nested mappings and lists (``value`` itself is 1); size counts one per value
    plus the characters of every string and key. The walk goes level by level, and stops at
    the first level past ``max_depth`` or the first value past ``max_size``, so it takes time
    linear in the smaller of the value and the bounds: a value reached through several
    references (YAML aliases) counts each time, and one that contains itself is too deep (or,
    without a depth bound, too large).
    """
    walked = _walk(value, max_depth, max_size, named=False)
    if isinstance(walked, int):
        return walked
    named = _walk(value, max_depth, max_size, named=True)  # again, naming the fields: rare
    field = named[1] if isinstance(named, tuple) else ""
    if walked[0] == "ObjectTooDeep":
        return Excess(field, walked[0], f"nests deeper than {max_depth} levels")
    return Excess(field, walked[0], f"is larger than {max_size} (values plus characters)")


def _walk(value: object, max_depth: int, max_size: int, *, named: bool) -> int | tuple[str, str]:
    """The size of ``value``, or (reason, field) of the first bound passed; fields are only
    named when ``named`` (it costs a third of the walk)."""
    size = 1  # each value counts when it is found, so no level holds more than max_size
    level: list[object] = [value]
    fields: list[str] = [""]  # when named, the field of each value of ``level``
    depth = 1
    while level:
        below: list[object] = []
        below_fields: list[str] = []
        for index, node in enumerate(level):
            if isinstance(node, dict):
                try:
                    size += sum(map(len, node))
                except TypeError:  # a key that is not a string (YAML ``1:``) counts as 0
                    size += sum(len(key) for key in node if isinstance(key, str))
                children: Collection[object] = node.values()
                if named:
                    below_fields.extend(_named(fields[index], node, depth))
            elif isinstance(node, list | tuple):
                children = node
                if named:
                    below_fields.extend(_named(fields[index], range(len(node)), depth))
            else:
                if isinstance(node, str):
                    size += len(node)
                    if size > max_size:
                        return "ObjectTooLarge", fields[index] if named else ""
                continue
            size += len(children)
            if size > max_size:
                return "ObjectTooLarge", fields[index] if named else ""
            below.extend(children)
        if depth >= max_depth:
            for index, child in enumerate(below):
                if isinstance(child, dict | list | tuple):
                    return "ObjectTooDeep", below_fields[index] if named else ""
        level, fields = below, below_fields
        depth += 1
    return size


def _named(field: str, keys: Collection[object], depth: int) -> list[str]:
    """The field names of the values at ``keys`` in the value named ``field``: two levels are
    named, deeper values take the name of their ancestor two levels down (one list, not a call
    per value: the values of a YAML alias expanded a million times are named in one step)."""
    if depth > 2:
        return [field] * len(keys)
    return [_below(field, key, depth) for key in keys]


def _below(field: str, key: object, depth: int) -> str:
    """The field name of ``key``, one of the first two levels, in the value named ``field``."""
    if isinstance(key, int):
        return f"{field}[{key}]"
    name = key[:_PREVIEW] if isinstance(key, str) else preview(key)
    return f"{field}.{name}" if depth == 2 else name


def preview(value: object) -> str:
    """The ``repr`` of any value cut to 60 characters, in time independent of its size:
    containers are shown two levels deep and a few items wide (a plain ``repr`` walks them
    whole, recursively), integers too wide to print by their width."""
    return _Preview().repr(value)[:_PREVIEW]


class _Preview(reprlib.Repr):
    """``reprlib`` bounds depth, items and string lengths; integers need one more bound."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 2
        self.maxstring = self.maxother = self.maxlong = _PREVIEW

    def repr_int(self, x: int, level: int) -> str:
        del level
        if x.bit_length() > _PREVIEW:  # repr() refuses integers of more than 4,300 digits
            return f"<an integer of {x.bit_length()} bits>"
        return repr(x)
