"""The typed value readers of the Snapshot's JSON form (:mod:`.snapshot_read`): each takes
a value and the field path it sits at, and returns the value checked or raises
:class:`SnapshotFormatError` naming that field, so that a proxy keeps its last good snapshot
and says why the new one was refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pyrsistent import pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PVector

__all__ = [
    "SnapshotFormatError",
    "flat",
    "list_at",
    "object_at",
    "optional",
    "pair",
    "port_number",
    "seconds",
    "strings",
    "typed",
]

_T = TypeVar("_T")


class SnapshotFormatError(ValueError):
    """A JSON document that is not a snapshot; the message names the field."""


def flat(kind: type[_T], value: object, where: str) -> _T | None:
    """A dataclass of ``IngressActions`` whose fields are text, numbers, flags, optional ones
    of those and lists of text (``ExternalAuth``, ``RateLimit``, ``Affinity``,
    ``ClientTLS``), read by its fields' names and types; absent fields take their defaults."""
    if value is None:
        return None
    data = object_at(value, where)
    unknown = set(data) - {f.name for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
    if unknown:
        raise SnapshotFormatError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    read: dict[str, Any] = {}
    for field in dataclasses.fields(kind):  # type: ignore[arg-type]
        if field.name not in data:
            continue
        named, written = f"{where}.{field.name}", data[field.name]
        if field.type == "PVector[str]":
            read[field.name] = strings(written, named)
        elif str(field.type).endswith(" | None"):
            read[field.name] = optional(written, _FLAT_TYPES[field.type[:-7]], named)
        else:
            read[field.name] = typed(written, _FLAT_TYPES[str(field.type)], named)
    return kind(**read)


_FLAT_TYPES: Final[Mapping[str, type]] = {"str": str, "int": int, "bool": bool}


def strings(value: object, where: str) -> PVector[str]:
    return pvector(typed(v, str, f"{where}[{i}]") for i, v in enumerate(list_at(value, where)))


def pair(value: object, where: str) -> tuple[str, str]:
    items = list_at(value, where)
    if len(items) != 2:
        raise SnapshotFormatError(f"{where}: expected [user, hash]")
    return typed(items[0], str, f"{where}[0]"), typed(items[1], str, f"{where}[1]")


def optional(value: object, kind: type[_T], where: str) -> _T | None:
    return None if value is None else typed(value, kind, where)


def seconds(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SnapshotFormatError(f"{where}: expected a number, found {type(value).__name__}")
    return float(value)


def port_number(text: str, where: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise SnapshotFormatError(f"{where}: {text!r} is not a port number")
    return int(text)


def object_at(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SnapshotFormatError(f"{where}: expected an object, found {type(value).__name__}")
    return value


def list_at(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise SnapshotFormatError(f"{where}: expected a list, found {type(value).__name__}")
    return value


def typed(value: object, kind: type[_T], where: str) -> _T:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SnapshotFormatError(
            f"{where}: expected {kind.__name__}, found {type(value).__name__}"
        )
    return value
