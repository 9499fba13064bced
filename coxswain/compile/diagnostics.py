"""Diagnostics: what the compiler has to say about the objects it was given.

The compiler never raises on user input (docs/architecture.md, "Rules of the core"). A field
it cannot use becomes a ``Diagnostic`` naming the object (``kind ns/name``), the field path in
the object and why; the rest of the object, and every other object, still compiles. The shell
logs or prints them; the core only returns them.

Where a finding is: the object it names, and, when the object came from a file, the file and
line where its body starts. Findings about a body that is no object (no kind, no name) or about
several bodies (skipped kinds) carry their place themselves; the others get it from their key
(``model.places.locate``).
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
        key: the object concerned; None for findings about bodies that are not objects.
        field: the field path inside the object, e.g. ``spec.rules[0].http.paths[1].path``.
        severity: how much of the object is affected.
        reason: a CamelCase word machines can match on, e.g. ``ServiceNotFound``.
        message: a sentence for people.
        file: the file the body came from ("" when unknown: an API object, or not located yet).
        line: the 1-based line where the body starts in ``file`` (0 when unknown).
    """

    key: ObjectKey | None
    field: str
    severity: Severity
    reason: str
    message: str
    file: str = ""
    line: int = 0

    @property
    def place(self) -> str:
        """``file:line``, or "" when the finding has no known place."""
        return f"{self.file}:{self.line}" if self.file else ""

    def __str__(self) -> str:
        place = f"{self.place}: " if self.file else ""
        if self.key is not None:
            subject = f"{self.key} {self.field}: " if self.field else f"{self.key}: "
        else:
            subject = "" if self.file else "input: "  # a place says more than "input"
        return f"{place}{self.severity}: {subject}{self.message} ({self.reason})"


def diagnostic_order(d: Diagnostic) -> tuple[object, ...]:
    """Canonical order: findings about bodies that are no object first, then by object key,
    place (bodies that are no object have only that), field and reason."""
    key = ("", "", "") if d.key is None else (d.key.kind, d.key.namespace, d.key.name)
    return (d.key is not None, key, d.file, d.line, d.field, d.reason, d.message)
