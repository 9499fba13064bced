"""Core values as the plain API data the command line prints.

Pure conversions, shared by ``coxswain compile`` and the golden tests so that both show the
same thing: ``--emit status`` and ``--emit infra`` are Kubernetes ``List`` objects,
``--emit diagnostics`` a list of findings (``-o table`` is :mod:`.tables`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.provision import DesiredObjects
    from coxswain.compile.status import ObjectStatus

__all__ = ["diagnostic_data", "infra_list", "status_list"]


def infra_list(desired: DesiredObjects) -> dict[str, Any]:
    """A ``List`` of the desired objects; deletions as ``kind ns/name`` lines."""
    deletions = "".join(f"{key}\n" for key in desired.deletions)
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {"coxswain-labs.dev/delete": deletions}} if deletions else {},
        "items": [json.loads(o.body) for o in desired.objects],
    }


def status_list(statuses: Sequence[ObjectStatus]) -> dict[str, Any]:
    """A Kubernetes ``List`` of ``{apiVersion, kind, metadata, status}``."""
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": s.api_version,
                "kind": s.kind,
                "metadata": {
                    **({"namespace": s.namespace} if s.namespace else {}),
                    "name": s.name,
                    "generation": s.generation,
                },
                "status": json.loads(s.body),
            }
            for s in statuses
        ],
    }


def diagnostic_data(d: Diagnostic) -> dict[str, Any]:
    """A finding as ``--emit diagnostics`` prints it (``file`` and ``line``: where the body of
    its object starts, null when it did not come from a file)."""
    return {
        "kind": d.key.kind if d.key else None,
        "namespace": d.key.namespace if d.key else None,
        "name": d.key.name if d.key else None,
        "field": d.field,
        "severity": str(d.severity),
        "reason": d.reason,
        "message": d.message,
        "file": d.file or None,
        "line": d.line or None,
    }
