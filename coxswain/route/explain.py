"""A decision as the JSON object ``coxswain route -o json`` prints (docs/contracts.md, "route").

Pure: the CLI prints what this returns, tests compare it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from coxswain.route.forward import apply_edits, forwarded_headers, wire_edits
from coxswain.route.grpc_status import grpc_status, is_grpc_call

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from coxswain.compile.snapshot import Backend, Endpoint, UpstreamTLS
    from coxswain.route.request import RequestHead
    from coxswain.route.select import Decision
    from coxswain.route.table import RouteTable

__all__ = ["backend_data", "explain"]


def explain(
    table: RouteTable, head: RequestHead, headers: Sequence[tuple[str, str]], decision: Decision
) -> dict[str, Any]:
    """The contract's JSON object for one decision."""
    endpoints = table.snapshot.endpoints
    forwarded: dict[str, list[str]] = {}
    action = decision.action
    if decision.status is None:
        sent = forwarded_headers(
            [(_wire(n), _wire(v)) for n, v in headers],
            host=_wire(decision.host),
            proto=b"https" if head.tls else b"http",
            client=None,
            authority=None if decision.authority is None else _wire(decision.authority),
        )
        if action is not None and action.request_headers is not None:
            # an edit that is not Latin-1: the proxy answers 500; the headers show what it had
            with contextlib.suppress(ValueError):
                sent = apply_edits(sent, wire_edits(action.request_headers))
        for name, value in sent:
            forwarded.setdefault(name.decode("latin-1"), []).append(value.decode("latin-1"))
    route = decision.route
    response = action.response_headers if action is not None else None
    code = grpc_status(decision, call=is_grpc_call(headers))
    return {
        "matched": decision.matched,
        "status": decision.status,
        "grpc_status": None if code is None else int(code),
        "route": None
        if route is None
        else {
            "kind": route.kind,
            "namespace": route.namespace,
            "name": route.name,
            "rule": route.rule,
        },
        "backends": [backend_data(b, endpoints) for b in decision.backends],
        "mirrors": [
            {
                "namespace": m.backend.namespace,
                "service": m.backend.service,
                "port": m.backend.port,
                "percent": m.percent,
                "tls": _tls(m.backend.tls),
            }
            for m in (action.mirrors if action is not None else ())
        ],
        "redirect": None if decision.redirect is None else {"location": decision.redirect},
        "host": decision.host,
        "path": decision.path,
        "request_headers": forwarded,
        "response_headers": {
            "set": {} if response is None else dict(response.set),
            "add": {} if response is None else _grouped(response.add),
            "remove": [] if response is None else list(response.remove),
        },
        "cors_headers": {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in decision.response_fields
        },
        "timeouts": {
            "request": None if action is None else action.request_timeout,
            "backend_request": None if action is None else action.backend_timeout,
        },
        "reason": decision.reason,
    }


def backend_data(backend: Backend, endpoints: Mapping[str, Sequence[Endpoint]]) -> dict[str, Any]:
    """A backend as ``coxswain route -o json`` shows it, with its ready endpoints."""
    return {
        "namespace": backend.namespace,
        "service": backend.service,
        "port": backend.port,
        "weight": backend.weight,
        "valid": backend.valid,
        "endpoints": [f"{e.address}:{e.port}" for e in endpoints.get(backend.endpoints_key, ())],
        "tls": _tls(backend.tls),
        "protocol": str(backend.protocol),
    }


def _tls(tls: UpstreamTLS | None) -> dict[str, Any] | None:
    """The TLS a backend is reached with (BackendTLSPolicy), without the PEM material."""
    if tls is None:
        return None
    client = tls.client_certificate
    return {
        "policy": tls.policy,
        "server_name": tls.server_name,
        "trust": ("system" if tls.ca_pem is None else "ca_bundle") if tls.verify else "none",
        "sni": tls.sni,
        "subject_alt_names": [f"{n.type}:{n.value}" for n in tls.subject_alt_names],
        "client_certificate": None if client is None else client.secret,
        "problem": tls.problem,
    }


def _grouped(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return grouped


def _wire(text: str) -> bytes:
    """Text as the proxy would see it on the wire; what Latin-1 cannot hold becomes ``?``."""
    return text.encode("latin-1", "replace")
