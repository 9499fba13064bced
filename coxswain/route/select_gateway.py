"""``select_gateway``: the decision for a request on a Gateway listener port.

Answers the proxy gives itself (Gateway API v1 HTTPRoute and GRPCRoute; on a GRPCRoute's rule
the proxy sends them as gRPC statuses, ``route.grpc_status``):
- 404 when no listener or rule matches;
- 421 when, on a TLS port, the Host header selects another listener than the TLS server name
  did (Gateway API ``Listener.hostname``: "the Gateway SHOULD return a 421"; RFC 9110
  §15.5.20). The certificate served, and on a port that validates client certificates the
  check made (GEP-91), were those of the SNI's listener. A client that sent no server name is
  held to the catch-all listener only on a port that validates client certificates: elsewhere
  it got the default certificate and its Host decides;
- 204 or 403 to a CORS preflight on a rule with a CORS filter (``route.cors``);
- the redirect status for RequestRedirect;
- 500 when the matched rule cannot be served (an unsupported filter, no backendRefs, every
  weight zero, or every weighted backend invalid: "requests that would have been sent to an
  invalid backend MUST receive a 500");
- 503 when no weighted valid backend has a ready endpoint.
Otherwise the request is forwarded, with the URLRewrite host and path applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coxswain.route.cors import cors_outcome
from coxswain.route.decision import Decision
from coxswain.route.gateway import matches_request, parse_query

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from coxswain.compile.snapshot import (
        Endpoint,
        GatewayRule,
        ListenerTable,
        PathEdit,
        RouteMatch,
    )
    from coxswain.route.gateway import GatewayPortIndex
    from coxswain.route.request import RequestHead

__all__ = ["listener_label", "select_gateway"]

_WELL_KNOWN = {"http": 80, "https": 443}


def select_gateway(
    index: GatewayPortIndex,
    head: RequestHead,
    host: str,
    path: str,
    query: str,
    endpoints: Mapping[str, Sequence[Endpoint]],
) -> Decision:
    """Decide a request arriving on a Gateway port. Pure."""
    host_header = head.host or host
    listener = index.find_listener(host)
    if listener is None:
        return Decision(
            matched=False,
            status=404,
            reason=f"no listener on port {head.port} matches host {host!r}",
            host=host_header,
            path=path + query,
        )
    if head.tls and (head.sni or index.client_validation):
        sni = (head.sni or "").lower().rstrip(".")
        if index.find_listener(sni) is not listener:
            return Decision(
                matched=False,
                status=421,
                reason=f"the TLS server name {sni!r} chose another listener than host {host!r} "
                "(RFC 9110 §15.5.20)",
                host=host_header,
                path=path + query,
            )
    headers: dict[str, str] = {}
    for name, value in head.headers:
        lower = name.lower()
        headers[lower] = f"{headers[lower]},{value}" if lower in headers else value
    params = parse_query(query)
    for route_host, rules in listener.host_rules(host):
        for rule in rules.candidates(path):
            if matches_request(rule.match, head.method, headers, params, rules.patterns):
                return _decide(
                    listener.table, rule, route_host, head, (host, path, query), endpoints, headers
                )
    table = listener.table
    return Decision(
        matched=False,
        status=404,
        reason=f"no route rule attached to {listener_label(table)} "
        f"matches {head.method} {host}{path}",
        host=host_header,
        path=path + query,
    )


def _decide(
    table: ListenerTable,
    rule: GatewayRule,
    route_host: str,
    head: RequestHead,
    request: tuple[str, str, str],
    endpoints: Mapping[str, Sequence[Endpoint]],
    headers: Mapping[str, str],
) -> Decision:
    host, path, query = request
    action, match = rule.action, rule.match
    ref = action.route
    where = (
        f"{listener_label(table)}, host {route_host!r}, "
        f"{ref.kind} {ref.namespace}/{ref.name} {ref.rule}"
    )
    host_header = head.host or host

    def decided(
        status: int | None,
        reason: str,
        *,
        to_host: str = host_header,
        to_path: str = path + query,
        redirect: str | None = None,
        fields: tuple[tuple[bytes, bytes], ...] = (),
    ) -> Decision:
        return Decision(
            matched=True,
            status=status,
            reason=f"{where}: {reason}",
            host=to_host,
            path=to_path,
            route=ref,
            backends=tuple(action.backends),
            redirect=redirect,
            action=action,
            response_fields=fields,
        )

    if action.problem is not None:
        return decided(500, action.problem)
    cors_fields: tuple[tuple[bytes, bytes], ...] = ()
    if action.cors is not None and (origin := headers.get("origin")) is not None:
        cors = cors_outcome(action.cors, head.method, origin, headers)
        if cors.status is not None:
            return decided(cors.status, cors.reason, fields=cors.fields)
        cors_fields = cors.fields
    if action.redirect is not None:
        r = action.redirect
        scheme = r.scheme or ("https" if head.tls else "http")
        if r.port is not None:
            port = r.port
        elif r.scheme is not None:
            port = _WELL_KNOWN.get(r.scheme, table.port)
        else:
            port = table.port
        suffix = "" if _WELL_KNOWN.get(scheme) == port else f":{port}"
        new_path = _edit_path(r.path, match, path)
        location = f"{scheme}://{r.hostname or host}{suffix}{new_path}{query}"
        return decided(r.status, f"redirected to {location}", redirect=location, fields=cors_fields)
    forwarded_host = host_header
    forwarded_path = path
    if action.rewrite is not None:
        forwarded_host = action.rewrite.hostname or host_header
        forwarded_path = _edit_path(action.rewrite.path, match, path)
    weighted = [b for b in action.backends if b.weight > 0]
    status: int | None = None
    if not action.backends:
        status, reason = 500, "the rule has no backendRefs"
    elif not weighted:
        status, reason = 500, "every backend has weight 0"
    elif not any(b.valid for b in weighted):
        status, reason = 500, "every weighted backend is invalid"
    elif not any(b.valid and endpoints.get(b.endpoints_key) for b in weighted):
        status, reason = 503, "no weighted backend has a ready endpoint"
    else:
        reason = f"forwarded to {len(weighted)} weighted backend(s)"
    return decided(
        status,
        reason,
        to_host=forwarded_host,
        to_path=forwarded_path + query,
        fields=() if status is not None else cors_fields,
    )


def listener_label(table: ListenerTable) -> str:
    """How a reason names a listener: ``listener ns/gateway/name``; a ListenerSet's (named
    ``ns/set/name`` in the snapshot, docs/contracts.md) by its ListenerSet and its Gateway."""
    namespace, slash, rest = table.listener.partition("/")
    if not slash:
        return f"listener {table.gateway}/{table.listener}"
    owner, _, name = rest.partition("/")
    return f"listener {name} of ListenerSet {namespace}/{owner} (Gateway {table.gateway})"


def _edit_path(edit: PathEdit | None, match: RouteMatch, path: str) -> str:
    """Apply ReplaceFullPath or ReplacePrefixMatch (Gateway API HTTPPathModifier)."""
    if edit is None:
        return path
    if edit.type == "ReplaceFullPath":
        return edit.value
    rest = path if match.path == "/" else path[len(match.path) :]
    replaced = edit.value.rstrip("/") + rest
    return replaced if replaced.startswith("/") else "/" + replaced
