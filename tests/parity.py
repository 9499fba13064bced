"""Status and diagnostics agree: every problem a status shows is a diagnostic too.

A problem condition is one that is False (Accepted, ResolvedRefs, Programmed…) or, for the
condition types that report trouble when True (Conflicted, PartiallyInvalid), True. Each must
be matched by a diagnostic of some scope's ``compile`` on the same object with the same reason.
The exceptions are the conditions that only sum up others of the same object (a Gateway's or a
ListenerSet's ``ListenersNotValid``, ``ListenersNotResolved``, ``Programmed=False/Invalid`` of
a listener or Gateway that is not valid): their object must have an error diagnostic, the
cause. A new problem condition without a diagnostic fails the golden cases and the property
tests that call ``unreported``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from coxswain.compile import CompileConfig, SharedPool, compile, status
from coxswain.compile.diagnostics import Severity
from coxswain.compile.grants import subscription_grants

if TYPE_CHECKING:
    from coxswain.compile.model.state import ClusterState

SUMMARIES: Final = frozenset(
    {
        ("Accepted", "ListenersNotValid"),
        ("Programmed", "ListenersNotValid"),
        ("ResolvedRefs", "ListenersNotResolved"),
        ("Programmed", "Invalid"),
    }
)
TROUBLE_WHEN_TRUE: Final = frozenset({"Conflicted", "PartiallyInvalid"})


def _conditions(value: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """Every condition in a status body, with where it is (``listeners[0]``, ``parents[1]``)."""
    if isinstance(value, list):
        return [c for i, item in enumerate(value) for c in _conditions(item, f"{where}[{i}]")]
    if not isinstance(value, dict):
        return []
    found = [(where, c) for c in value.get("conditions", ())]
    for name, item in value.items():
        if name != "conditions":
            found.extend(_conditions(item, f"{where}.{name}" if where else name))
    return found


def unreported(state: ClusterState, config: CompileConfig | None = None) -> list[str]:
    """The problem conditions of ``status(state)`` that no scope's compile reports."""
    config = config or CompileConfig()
    scopes = {SharedPool(), *subscription_grants(state, config).values()}
    reasons: dict[tuple[str, str, str], set[str]] = {}
    errors: set[tuple[str, str, str]] = set()
    for scope in scopes:
        for d in compile(state, scope, config).diagnostics:
            if d.key is not None:
                key = (d.key.kind, d.key.namespace, d.key.name)
                reasons.setdefault(key, set()).add(d.reason)
                if d.severity is Severity.ERROR:
                    errors.add(key)
    missing = []
    for item in status(state, config):
        key = (item.kind, item.namespace, item.name)
        for where, condition in _conditions(json.loads(item.body), "status"):
            trouble = "True" if condition["type"] in TROUBLE_WHEN_TRUE else "False"
            if condition["status"] != trouble:
                continue
            if (condition["type"], condition["reason"]) in SUMMARIES:
                if key not in errors:
                    missing.append(f"{' '.join(key)} {where}: a summary with no cause reported")
            elif condition["reason"] not in reasons.get(key, set()):
                missing.append(f"{' '.join(key)} {where}: {condition} has no diagnostic")
    return missing
