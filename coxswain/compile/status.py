"""Status values: conditions the core decides, without timestamps.

Why: docs/architecture.md, "Rules of the core".

The shell stamps ``lastTransitionTime`` when it patches, keeping the old stamp when a condition
did not change. ``observedGeneration`` is the generation of the object the condition was
computed from.

A condition that reports a problem is made with the diagnostics that explain it (``problem``),
where the problem is decided: ``compile`` reports exactly those, so whatever a status shows as
a problem is also a diagnostic naming the object and the field, and the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final

from coxswain.compile.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from coxswain.compile.model.keys import ObjectKey

__all__ = ["STATUS_ORDER", "Condition", "ObjectStatus", "condition_data", "problem"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """A ``metav1.Condition`` without its timestamp.

    ``diagnostics`` are the findings a problem condition reports (not part of the API form);
    a condition that only sums up others of the same object has none of its own.
    """

    type: str
    status: bool
    reason: str
    message: str = ""
    diagnostics: tuple[Diagnostic, ...] = ()


def problem(
    type: str,  # noqa: A002 - the API's name for it
    reason: str,
    message: str,
    *,
    key: ObjectKey,
    field: str,
    status: bool = False,
    severity: Severity = Severity.ERROR,
) -> Condition:
    """A condition reporting one problem of the object ``key`` at ``field``, with its diagnostic
    (same reason and message)."""
    found = Diagnostic(key=key, field=field, severity=severity, reason=reason, message=message)
    return Condition(type=type, status=status, reason=reason, message=message, diagnostics=(found,))


def condition_data(condition: Condition, generation: int) -> dict[str, Any]:
    """The API form of a condition."""
    return {
        "type": condition.type,
        "status": "True" if condition.status else "False",
        "reason": condition.reason,
        "message": condition.message,
        "observedGeneration": generation,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectStatus:
    """The desired ``.status`` of one object, as API data (``body`` is JSON text, sorted)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    generation: int
    body: str


STATUS_ORDER: Final = attrgetter("kind", "namespace", "name")
"""The order of a status list (``api.status``), as a sort key: (kind, namespace, name)."""
