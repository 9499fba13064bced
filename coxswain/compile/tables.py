"""Aligned text tables for people: ``coxswain compile -o table`` for every ``--emit``.

Each table shows what the data form (``-o json|yaml``, :mod:`.listing`) holds, one line per
thing a reader looks for, with the longest column (messages, backends) last and unaligned:

- ``snapshot``: one line per routing rule: port, host, match, route, backends (with the protocol
  spoken to them unless HTTP/1.1) or redirect;
- ``diagnostics``: one line per finding: where in the input, severity, object, field, message;
- ``status``: one line per condition of every owned object (Gateway listeners and HTTPRoute
  parents on their own lines), an Ingress's load-balancer addresses on one line;
- ``infra``: one line per object the controller would apply or delete.
Pure.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from coxswain.compile.snapshot import BackendProtocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.provision import DesiredObjects
    from coxswain.compile.snapshot import Backend, IngressActions, RouteRef, Snapshot
    from coxswain.compile.status import ObjectStatus

__all__ = ["diagnostics_table", "infra_table", "routing_table", "status_table"]

_GATEWAY_ANNOTATION = "coxswain-labs.dev/gateway"
_ROLE_LABEL = "coxswain-labs.dev/role"


def _ingress_action_notes(actions: IngressActions) -> list[str]:
    """What a path's ingress-nginx actions do, briefly, in ``route.ingress_actions``' order."""
    notes = []
    if actions.denied is not None:
        notes.append("503: an access annotation cannot be honoured")
    if actions.deny_sources or actions.allow_sources:
        notes.append("source ranges")
    if actions.auth_realm is not None:
        notes.append(f"basic auth, {len(actions.auth_users)} user(s)")
    if actions.max_body:
        notes.append(f"body <= {actions.max_body} bytes")
    if (canary := actions.canary) is not None:
        b = canary.backend
        notes.append(
            f"canary {b.namespace}/{b.service}:{b.port} {canary.weight}/{canary.weight_total}"
        )
    if actions.host_redirect is not None:
        notes.append(f"308 to host {actions.host_redirect}")
    if actions.app_root is not None:
        notes.append(f"/ 302 to {actions.app_root}")
    if actions.redirect is not None:
        notes.append(f"{actions.redirect_status} to {actions.redirect}")
    if actions.rewrite_target is not None:
        notes.append(f"rewrite {actions.rewrite_target}")
    if actions.upstream_vhost is not None:
        notes.append(f"Host {actions.upstream_vhost}")
    return notes


def routing_table(snapshot: Snapshot) -> str:
    """A snapshot's routing, one line per rule."""
    rows: list[tuple[str, ...]] = [("PORT", "HOST", "MATCH", "ROUTE", "BACKENDS")]
    ingress = snapshot.ingress
    ports = f"{ingress.http_port},{ingress.https_port}"
    for host, vhost in sorted(ingress.hosts.items()):
        for rule in (*vhost.paths, *((vhost.default,) if vhost.default else ())):
            match = "default" if rule is vhost.default else f"{rule.match} {rule.path}"
            notes = ["https redirect"] if rule.tls_redirect else []
            if rule.hsts:
                notes.append("hsts")
            if rule == vhost.passthrough:
                notes.append("TLS passed through")
            if rule.actions is not None:
                notes.extend(_ingress_action_notes(rule.actions))
            redirect = f" ({'; '.join(notes)})" if notes else ""
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
    return _aligned(rows)


def diagnostics_table(diagnostics: Sequence[Diagnostic]) -> str:
    """One line per finding, with where its object starts in the input (``file:line``, or
    ``-`` when unknown: ``model.places.locate`` fills it in)."""
    rows: list[tuple[str, ...]] = [("WHERE", "SEVERITY", "KIND", "NAME", "FIELD", "MESSAGE")]
    for d in diagnostics:
        kind, name = ("-", "-") if d.key is None else (d.key.kind, d.key.ref)
        rows.append(
            (
                d.place or "-",
                str(d.severity),
                kind,
                name,
                d.field or "-",
                f"{d.message} ({d.reason})",
            )
        )
    return _aligned(rows)


def status_table(statuses: Sequence[ObjectStatus]) -> str:
    """One line per condition; a Gateway's listeners (with their attached routes) and an
    HTTPRoute's parents name themselves in PART."""
    rows: list[tuple[str, ...]] = [("KIND", "NAME", "PART", "CONDITION", "REASON", "MESSAGE")]
    for s in statuses:
        name = f"{s.namespace}/{s.name}" if s.namespace else s.name
        body: dict[str, Any] = json.loads(s.body)
        parts: list[tuple[str, list[dict[str, Any]]]] = [("-", body.get("conditions", []))]
        for listener in body.get("listeners", []):
            routes = listener.get("attachedRoutes", 0)
            part = f"listener {listener['name']} ({routes} route{'' if routes == 1 else 's'})"
            parts.append((part, listener.get("conditions", [])))
        for parent in body.get("parents", []):
            parts.append((f"parent {_parent(parent['parentRef'])}", parent["conditions"]))
        for part, conditions in parts:
            for c in conditions:
                condition = f"{c['type']}={c['status']}"
                rows.append((s.kind, name, part, condition, c["reason"], c.get("message") or ""))
        if "addresses" in body:
            shown = ", ".join(a["value"] for a in body["addresses"]) or "none yet"
            rows.append((s.kind, name, "addresses", "-", "-", shown))
        if "loadBalancer" in body:
            found = body["loadBalancer"].get("ingress", [])
            shown = ", ".join(a.get("ip") or a.get("hostname", "") for a in found) or "none yet"
            rows.append((s.kind, name, "loadBalancer", "-", "-", shown))
    return _aligned(rows)


def infra_table(desired: DesiredObjects) -> str:
    """One line per object to apply (with its role, Gateway and what matters of its spec),
    then one per object to delete."""
    rows: list[tuple[str, ...]] = [("ACTION", "KIND", "NAME", "ROLE", "GATEWAY", "DETAIL")]
    for o in desired.objects:
        body: dict[str, Any] = json.loads(o.body)
        meta = body.get("metadata", {})
        rows.append(
            (
                "apply",
                o.kind,
                f"{o.namespace}/{o.name}" if o.namespace else o.name,
                meta.get("labels", {}).get(_ROLE_LABEL, "-"),
                meta.get("annotations", {}).get(_GATEWAY_ANNOTATION, "-"),
                _detail(o.kind, body.get("spec", {})),
            )
        )
    for key in desired.deletions:
        rows.append(("delete", key.kind, key.ref, "-", "-", ""))
    return _aligned(rows)


def _detail(kind: str, spec: dict[str, Any]) -> str:
    if kind == "Service":
        ports = ", ".join(f"{p['port']}->{p.get('targetPort', p['port'])}" for p in spec["ports"])
        external = "".join(f", external {ip}" for ip in spec.get("externalIPs", ()))
        return f"{spec.get('type', 'ClusterIP')} {ports}{external}"
    if kind == "Deployment":
        images = [c["image"] for c in spec["template"]["spec"]["containers"]]
        replicas = f", {spec['replicas']} replicas" if "replicas" in spec else ""
        return f"image {', '.join(images)}{replicas}"
    if kind == "HorizontalPodAutoscaler":
        return f"{spec.get('minReplicas', 1)}-{spec['maxReplicas']} replicas"
    return ""


def _parent(ref: dict[str, Any]) -> str:
    section = f"/{ref['sectionName']}" if "sectionName" in ref else ""
    port = f":{ref['port']}" if "port" in ref else ""
    return f"{ref.get('kind', 'Gateway')} {ref.get('namespace', '')}/{ref['name']}{section}{port}"


def _aligned(rows: list[tuple[str, ...]]) -> str:
    """Columns padded to their widest cell, two spaces apart; the last one is not padded, and
    no line ends in spaces."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = (
        "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
        + "  "
        + row[-1]
        for row in rows
    )
    return "".join(line.rstrip() + "\n" for line in lines)


def _route(route: RouteRef) -> str:
    return f"{route.kind} {route.namespace}/{route.name} {route.rule}"


def _backends(backends: tuple[Backend, ...]) -> str:
    if not backends:
        return "(none: 500)"
    return ", ".join(
        f"{b.namespace}/{b.service}:{b.port}"
        + (f"*{b.weight}" if len(backends) > 1 else "")
        + ("" if b.protocol is BackendProtocol.HTTP1 else f" {b.protocol}")
        + (" cluster-ip" if b.cluster_ip else "")
        + ("" if b.valid else " (invalid)")
        for b in backends
    )
