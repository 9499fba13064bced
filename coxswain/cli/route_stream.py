"""``coxswain route`` for a layer-4 listener: which route and backends a TLS (by ``--sni``),
TCP or UDP connection arriving on a port would take (docs/architecture.md, "Layer 4")."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from coxswain.compile.gateway.listeners import STREAM_PROTOCOLS
from coxswain.route.explain import backend_data
from coxswain.route.gateway import index_gateway_port
from coxswain.route.streams import select_stream

if TYPE_CHECKING:
    from coxswain.compile.snapshot import Snapshot

__all__ = ["explain_stream", "print_stream", "stream_protocol"]


def stream_protocol(snapshot: Snapshot, port: int) -> str | None:
    """The protocol of the ready layer-4 listener bound on ``port``, None when there is none."""
    for health in snapshot.listener_health:
        if health.ready and health.target_port == port and health.protocol in STREAM_PROTOCOLS:
            return health.protocol
    return None


def explain_stream(snapshot: Snapshot, port: int, protocol: str, sni: str | None) -> dict[str, Any]:
    """The decision for a connection (UDP: a session) on ``port``, as data. Pure."""
    tables = snapshot.gateways.get(port)
    sni = sni.lower().removesuffix(".") if sni and protocol == "TLS" else None
    decision = select_stream(None if tables is None else index_gateway_port(tables), sni)
    table = decision.table
    mode = None
    if protocol == "TLS" and table is not None:
        terminating = table.hostname in snapshot.tls.get(port, {})
        mode = "Terminate" if terminating else "Passthrough"
    route = None if decision.action is None else decision.action.route
    return {
        "protocol": protocol,
        "mode": mode,
        "sni": sni,
        "listener": None if table is None else f"{table.gateway} {table.listener}",
        "forwarded": decision.action is not None,
        "reason": decision.reason or "routed",
        "route": None
        if route is None
        else {"kind": route.kind, "namespace": route.namespace, "name": route.name},
        "backends": [
            backend_data(b, snapshot.endpoints)
            for b in (() if decision.action is None else decision.action.backends)
        ],
    }


def print_stream(data: dict[str, Any], output: str) -> None:
    """Write the decision as JSON or as text for people."""
    if output == "json":
        sys.stdout.write(json.dumps(data, sort_keys=True, indent=2) + "\n")
        return
    protocol = data["protocol"] + (f" ({data['mode']})" if data["mode"] else "")
    lines = [
        f"protocol: {protocol}",
        f"status:   {'forwarded' if data['forwarded'] else 'closed'}",
        f"reason:   {data['reason']}",
    ]
    if data["listener"] is not None:
        lines.append(f"listener: {data['listener']}")
    if (route := data["route"]) is not None:
        lines.append(f"route:    {route['kind']} {route['namespace']}/{route['name']}")
    for backend in data["backends"]:
        endpoints = ", ".join(backend["endpoints"]) or "none ready"
        state = "" if backend["valid"] else " (invalid)"
        lines.append(
            f"backend:  {backend['namespace']}/{backend['service']}:{backend['port']}{state}"
            f" weight {backend['weight']} -> {endpoints}"
        )
    sys.stdout.write("\n".join(lines) + "\n")
