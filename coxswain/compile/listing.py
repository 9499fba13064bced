"""Core values as the plain API data the command line prints (ARCHITECTURE §7).

Pure conversions, shared by ``coxswain compile`` and the golden tests so that both show the
same thing: ``--emit status`` and ``--emit infra`` are Kubernetes ``List`` objects,
``--emit diagnostics`` a list of findings, ``-o table`` a routing table for people.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.provision import DesiredObjects
    from coxswain.compile.snapshot import Backend, RouteRef, Snapshot
    from coxswain.compile.status import ObjectStatus

__all__ = ["diagnostic_data", "infra_list", "routing_table", "status_list"]


def infra_list(desired: DesiredObjects) -> dict[str, Any]:
    """A ``List`` of the desired objects; deletions as ``kind ns/name`` lines (ARCHITECTURE §7)."""
    deletions = "".join(f"{key}\n" for key in desired.deletions)
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {"coxswain-labs.dev/delete": deletions}} if deletions else {},
        "items": [json.loads(o.body) for o in desired.objects],
    }


def status_list(statuses: Sequence[ObjectStatus]) -> dict[str, Any]:
    """A Kubernetes ``List`` of ``{apiVersion, kind, metadata, status}`` (ARCHITECTURE §7)."""
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


def routing_table(snapshot: Snapshot) -> str:
    """A snapshot's routing as aligned text for people (``coxswain compile -o table``)."""
    rows: list[tuple[str, ...]] = [("PORT", "HOST", "MATCH", "ROUTE", "BACKENDS")]
    ingress = snapshot.ingress
    ports = f"{ingress.http_port},{ingress.https_port}"
    for host, vhost in sorted(ingress.hosts.items()):
        for rule in (*vhost.paths, *((vhost.default,) if vhost.default else ())):
            match = "default" if rule is vhost.default else f"{rule.match} {rule.path}"
            redirect = " (https redirect)" if rule.tls_redirect else ""
            rows.append(
                (ports, host, match, _route(rule.route), _backends((rule.backend,)) + redirect)
            )
    for port, tables in sorted(snapshot.gateways.items()):
        for _, table in sorted(tables.items()):
            for host, rules in sorted(table.hosts.items()):
                for rule in rules:
                    m = rule.match
                    extra = "".join(
                        [f" {m.method}" if m.method else ""]
                        + [f" [{h.name}]" for h in m.headers]
                        + [f" ?{q.name}" for q in m.query]
                    )
                    action = rule.action
                    target = (
                        f"redirect {action.redirect.status}"
                        if action.redirect is not None
                        else _backends(tuple(action.backends))
                    )
                    rows.append(
                        (
                            f"{port} ({table.port})",
                            host,
                            f"{m.path_type} {m.path}{extra}",
                            _route(action.route),
                            target,
                        )
                    )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
        + "  "
        + row[-1]
        + "\n"
        for row in rows
    )


def _route(route: RouteRef) -> str:
    return f"{route.kind} {route.namespace}/{route.name} {route.rule}"


def _backends(backends: tuple[Backend, ...]) -> str:
    if not backends:
        return "(none: 500)"
    return ", ".join(
        f"{b.namespace}/{b.service}:{b.port}"
        + (f"*{b.weight}" if len(backends) > 1 else "")
        + ("" if b.valid else " (invalid)")
        for b in backends
    )
