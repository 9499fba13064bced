"""Typed reads of raw API bodies that turn every bad field into a diagnostic.

A ``FieldReader`` belongs to one object being decoded. Each accessor takes the raw value and its
field path, returns the typed value (or None when it is absent or unusable) and records a
``Diagnostic`` naming the field when the value has the wrong type. Decoders therefore read as a
straight description of the schema and never raise on what a cluster or a dump may hold.

Every string read is interned (``sys.intern``), as are the field paths the decoders keep: a
dump repeats the same few values (kinds, namespaces, match and filter types, header names,
``spec.rules[0]``) across thousands of objects, and one copy of each is a quarter of the
state's bytes the fewer (docs/benchmarks.md, the offline compiler).
"""

from __future__ import annotations

from collections.abc import Mapping
from sys import intern
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap, pvector

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.hostnames import ascii_lower, is_hostname, is_wildcard
from coxswain.compile.model.limits import preview

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.model.keys import ObjectKey

__all__ = ["FieldReader", "folded"]

_MAX_KEY_REPR: Final = 253 + 1 + 63 + 2  # a label or annotation key's longest form, quoted


class FieldReader:
    """Collects the diagnostics of one object while its fields are read."""

    __slots__ = ("_found", "key")

    def __init__(self, key: ObjectKey) -> None:
        self.key = key
        self._found: list[Diagnostic] = []

    def problem(
        self, field: str, reason: str, message: str, severity: Severity = Severity.ERROR
    ) -> None:
        """Record a finding about ``field`` of this object."""
        self._found.append(
            Diagnostic(key=self.key, field=field, severity=severity, reason=reason, message=message)
        )

    def diagnostics(self) -> PVector[Diagnostic]:
        """Everything recorded so far, in the order found."""
        return pvector(self._found)

    def require(self, value: object, field: str, message: str) -> None:
        """Report ``field`` when ``value`` is absent (null or ""). A value that is present but
        unusable was reported by the typed read that refused it, precisely: once is enough."""
        if value is None or value == "":
            self.problem(field, "InvalidField", message)

    def _wrong_type(self, field: str, expected: str, value: object) -> None:
        self.problem(
            field,
            "InvalidField",
            f"expected {expected}, found {type(value).__name__} {preview(value)}",
        )

    def mapping(self, value: object, field: str) -> Mapping[str, Any] | None:
        """A JSON object, or None when absent (null) or not an object."""
        if value is None:
            return None
        if isinstance(value, Mapping):
            return value
        self._wrong_type(field, "an object", value)
        return None

    def items(self, value: object, field: str) -> list[Any]:
        """A JSON array (empty when absent or not an array)."""
        if value is None:
            return []
        if isinstance(value, list | tuple):
            return list(value)
        self._wrong_type(field, "a list", value)
        return []

    def string(self, value: object, field: str) -> str | None:
        """A string, or None when absent or not a string."""
        if value is None:
            return None
        if isinstance(value, str):
            return intern(value)
        self._wrong_type(field, "a string", value)
        return None

    def integer(self, value: object, field: str, *, low: int, high: int) -> int | None:
        """An integer in ``[low, high]`` (digit strings are refused, as the API server does)."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong_type(field, "an integer", value)
            return None
        if not low <= value <= high:
            self.problem(field, "InvalidField", f"{preview(value)} is outside {low}..{high}")
            return None
        return value

    def boolean(self, value: object, field: str) -> bool | None:
        """A boolean, or None when absent or not a boolean."""
        if value is None:
            return None
        if isinstance(value, bool):
            return value
        self._wrong_type(field, "true or false", value)
        return None

    def hostnames(self, items: list[Any], field: str) -> list[str]:
        """The hostnames of a list read with ``items``, lower-cased (DNS names are
        case-insensitive, RFC 4343): DNS names or ``*.`` wildcards (Gateway API ``Hostname``,
        Ingress ``host``); any other entry is reported and dropped."""
        found: list[str] = []
        for index, item in enumerate(items):
            host = self.string(item, f"{field}[{index}]")
            if host is None:
                continue
            host = folded(host)
            if is_hostname(host) or is_wildcard(host):
                found.append(host)
            else:
                self.problem(
                    f"{field}[{index}]",
                    "InvalidHostname",
                    f"{host!r} is not a DNS name or a '*.' wildcard; ignored",
                )
        return found

    def string_map(self, value: object, field: str) -> PMap[str, str]:
        """A map of strings to strings (labels, annotations); other entries are reported."""
        raw = self.mapping(value, field)
        if raw is None:
            return pmap()
        good: dict[str, str] = {}
        for name, item in raw.items():
            if not isinstance(name, str):  # a YAML key such as ``1`` or ``true``
                self._wrong_type(f"{field}[{preview(name)}]", "a string key", name)
            elif isinstance(item, str):
                good[intern(name)] = intern(item)
            else:
                # every key Kubernetes accepts is named whole; a longer one is cut
                self._wrong_type(f"{field}[{name!r:.{_MAX_KEY_REPR}}]", "a string", item)
        return pmap(good)


def folded(text: str) -> str:
    """``ascii_lower(text)``, interned as every string read is (above)."""
    return intern(ascii_lower(text))
