"""Diagnostics: what the compiler has to say about the objects it was given.

The compiler never raises on user input (ARCHITECTURE §1). A field it cannot use becomes a
``Diagnostic`` naming the object (``kind ns/name``), the field path in the object and why; the
rest of the object, and every other object, still compiles. The shell logs or prints them; the
core only returns them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coxswain.compile.model.keys import ObjectKey

__all__ = ["Diagnostic", "Severity", "diagnostic_order"]


class Severity(enum.StrEnum):
    """``error``: part of an object is not served; ``warning``: served, but not as written."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """One finding about one object (or about the input as a whole when ``key`` is None).

    Attributes:
        key: the object concerned; None for findings about the whole input (skipped kinds).
        field: the field path inside the object, e.g. ``spec.rules[0].http.paths[1].path``.
        severity: how much of the object is affected.
        reason: a CamelCase word machines can match on, e.g. ``ServiceNotFound``.
        message: a sentence for people.
    """

    key: ObjectKey | None
    field: str
    severity: Severity
    reason: str
    message: str

    def __str__(self) -> str:
        where = str(self.key) if self.key is not None else "input"
        field = f" {self.field}" if self.field else ""
        return f"{self.severity}: {where}{field}: {self.message} ({self.reason})"


def diagnostic_order(d: Diagnostic) -> tuple[object, ...]:
    """Canonical order: input-wide findings first, then by object key, field and reason."""
    key = ("", "", "") if d.key is None else (d.key.kind, d.key.namespace, d.key.name)
    return (d.key is not None, key, d.field, d.reason, d.message)
