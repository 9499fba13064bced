"""Status values: conditions the core decides, without timestamps (STYLE §3).

The shell stamps ``lastTransitionTime`` when it patches, keeping the old stamp when a condition
did not change. ``observedGeneration`` is the generation of the object the condition was
computed from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Condition", "ObjectStatus", "condition_data"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """A ``metav1.Condition`` without its timestamp."""

    type: str
    status: bool
    reason: str
    message: str = ""


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
