"""A decision as the JSON object ``coxswain route -o json`` prints (ARCHITECTURE §7).

Pure: the CLI prints what this returns, tests compare it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coxswain.route.forward import forwarded_headers

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.route.request import RequestHead
    from coxswain.route.select import Decision
    from coxswain.route.table import RouteTable

__all__ = ["explain"]


def explain(
    table: RouteTable, head: RequestHead, headers: Sequence[tuple[str, str]], decision: Decision
) -> dict[str, Any]:
    """The contract's JSON object for one decision."""
    endpoints = table.snapshot.endpoints
    forwarded: dict[str, list[str]] = {}
    if decision.status is None:
        for name, value in forwarded_headers(
            headers, host=decision.host, proto="https" if head.tls else "http", client=None
        ):
            forwarded.setdefault(name, []).append(value)
    route = decision.route
    return {
        "matched": decision.matched,
        "status": decision.status,
        "route": None
        if route is None
        else {
            "kind": route.kind,
            "namespace": route.namespace,
            "name": route.name,
            "rule": route.rule,
        },
        "backends": [
            {
                "namespace": b.namespace,
                "service": b.service,
                "port": b.port,
                "weight": b.weight,
                "valid": b.valid,
                "endpoints": [f"{e.address}:{e.port}" for e in endpoints.get(b.endpoints_key, ())],
            }
            for b in decision.backends
        ],
        "mirrors": [],
        "redirect": None if decision.redirect is None else {"location": decision.redirect},
        "host": decision.host,
        "path": decision.path,
        "request_headers": forwarded,
        "response_headers": {"set": {}, "add": {}, "remove": []},
        "timeouts": {"request": None, "backend_request": None},
        "reason": decision.reason,
    }
