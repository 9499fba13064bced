"""``select``: which rule and backend one request takes, or which answer the proxy gives.

The proxy calls it for every request; ``coxswain route`` calls it to explain a decision; the
property tests compare it with a naive matcher written from the spec. Pure.

Before any of these, an absolute-form target is put in origin form and its authority replaces
Host (``route.target``); a target that cannot be is answered 400.

Order of decisions for the Ingress ports:
1. Host: the Host header, lower-cased, port and trailing dot removed; exact host, then the
   one-label wildcard, then the catch-all; none → 404.
2. Path: normalised (``route.paths``); Exact, then the ingress-nginx regex paths in order
   (the first whose pattern matches from the start, case-insensitively), then the longest
   element-wise Prefix, then the host's default backend; none → 404.
2a. A path with ingress-nginx actions may answer a redirect itself, and changes what is
   forwarded (``route.ingress_actions``, whose steps 1 to 3 come before step 3 here); one
   whose security annotations cannot be honoured answers 503 (``denied``). Its per-request
   checks (``route.ingress_access``) travel in ``Decision.checks``: the proxy runs them on
   each request, since decisions are cached by method, target and host.
3. A plain-HTTP request on a rule with ``tls_redirect`` → 308 to ``https://`` on the same host
   and path. The port is the one the client would use for HTTPS: a request that named no port
   or HTTP's default (``Host: a.example.com`` or ``:80``) came through the advertised ports,
   and goes to the advertised HTTPS port (443, left out of the URL, RFC 9110 §4.2.2); one
   that named another port reached this proxy's port directly, and goes to the port this
   proxy serves Ingress HTTPS on (``Host: a.example.com:8080`` → ``https://a.example.com:8443``
   for ``--ingress-https-port 8443``).
4. An invalid backend or one without ready endpoints → 503 (ingress-nginx answers the same).
5. An HTTPS request on a rule with ``hsts`` (the ``hsts`` default, on a host with a
   certificate) gets ``Strict-Transport-Security`` on its response, whoever answers, in place
   of the backend's own (RFC 6797 §6.1; ingress-nginx sets it in its header phase).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from coxswain.route.decision import Decision
from coxswain.route.ingress_actions import answer, forwarding
from coxswain.route.paths import element_prefixes, normalize_path, split_target
from coxswain.route.select_gateway import select_gateway
from coxswain.route.target import origin_form

if TYPE_CHECKING:
    from coxswain.compile.regex import PrefixMatch
    from coxswain.compile.snapshot import Backend, Canary, PathRule
    from coxswain.route.request import RequestHead
    from coxswain.route.table import RouteTable

__all__ = ["Decision", "host_of", "port_of", "select"]

_HSTS = b"strict-transport-security"
_REDIRECT_STATUS = (
    308  # ingress-nginx's default http-redirect-code; keeps the method (RFC 9110 §15.4.9)
)


def host_of(header: str | None) -> str:
    """The host part of a Host header: lower-case, without port or trailing dot."""
    if not header:
        return ""
    host = header.strip().lower()
    if host.startswith("["):  # IPv6 literal, RFC 3986 §3.2.2
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0].rstrip(".") if ":" in host else host.rstrip(".")


def port_of(header: str | None) -> str:
    """The port part of a Host header as written ("" when it names none)."""
    if not header:
        return ""
    text = header.strip()
    after = text[text.find("]") + 1 :] if text.startswith("[") else text  # IPv6 literal
    return after.rpartition(":")[2] if ":" in after else ""


def select(table: RouteTable, head: RequestHead) -> Decision:
    """Decide one request against an indexed snapshot."""
    form = origin_form(head.target)
    if isinstance(form, str):
        return Decision(
            matched=False, status=400, reason=form, host=head.host or "", path=head.target
        )
    if form.authority is None:
        return _select(table, head)
    decision = _select(table, dataclasses.replace(head, target=form.target, host=form.authority))
    return dataclasses.replace(decision, authority=form.authority)


def _select(table: RouteTable, head: RequestHead) -> Decision:
    raw_path, query = split_target(head.target)
    path = normalize_path(raw_path)
    forwarded_path = path + query
    host = host_of(head.host)
    host_header = head.host or host
    if (gateway_port := table.gateway_ports.get(head.port)) is not None:
        return select_gateway(gateway_port, head, host, path, query, table.snapshot.endpoints)
    if head.port not in (table.ingress_http_port, table.ingress_https_port):
        return Decision(
            matched=False,
            status=404,
            reason=f"no listener of this snapshot is on port {head.port}",
            host=host_header,
            path=forwarded_path,
        )
    vhost = table.find_host(host)
    if vhost is None:
        return Decision(
            matched=False,
            status=404,
            reason=f"no Ingress rule matches host {host!r}",
            host=host_header,
            path=forwarded_path,
        )
    groups: tuple[str, ...] | None = None
    rule = vhost.exact.get(path)
    if rule is None and vhost.regex:
        rule, groups = _match_regex(vhost.regex, path)
    if rule is None:
        rule = _match_prefix(vhost.prefix, path) or vhost.default
    if rule is None:
        return Decision(
            matched=False,
            status=404,
            reason=f"no path of host {vhost.host!r} matches {path!r} and it has no default backend",
            host=host_header,
            path=forwarded_path,
        )
    how = "default backend" if rule is vhost.default else f"{rule.match} path {rule.path!r}"
    where = f"host {vhost.host!r}, {how} of Ingress {rule.route.namespace}/{rule.route.name}"
    decision = _ruled(table, head, rule, groups, where, host, host_header, path, query)
    if rule.hsts and head.tls:  # docstring, step 5
        hsts = (_HSTS, rule.hsts.encode("latin-1"))
        return dataclasses.replace(decision, response_fields=(*decision.response_fields, hsts))
    return decision


def _ruled(
    table: RouteTable,
    head: RequestHead,
    rule: PathRule,
    groups: tuple[str, ...] | None,
    where: str,
    host: str,
    host_header: str,
    path: str,
    query: str,
) -> Decision:
    forwarded_path = path + query
    actions = rule.actions
    if actions is not None and actions.denied is not None:
        return Decision(
            matched=True,
            status=503,
            reason=f"{where}: {actions.denied}",
            host=host_header,
            path=forwarded_path,
            route=rule.route,
            backends=(rule.backend,),
        )
    if actions is not None:
        said = answer(
            actions,
            scheme="https" if head.tls else "http",
            host=host,
            host_header=host_header,
            path=path,
            query=query,
        )
        if said is not None:
            return Decision(
                matched=True,
                status=said.status,
                reason=f"{where}: {said.reason}",
                host=host_header,
                path=forwarded_path,
                route=rule.route,
                backends=(rule.backend,),
                redirect=said.location,
            )
    if rule.tls_redirect and not head.tls and head.port == table.ingress_http_port:
        port = _https_port(table, head.host)
        return Decision(
            matched=True,
            status=_REDIRECT_STATUS,
            reason=f"{where}: the host has a certificate, so plain HTTP is redirected to HTTPS",
            host=host_header,
            path=forwarded_path,
            route=rule.route,
            backends=(rule.backend,),
            redirect=f"https://{host}{port}{forwarded_path}",
        )
    if actions is None:
        return _forward(table, rule, where, host_header, forwarded_path)
    sent = forwarding(rule, groups, host_header=host_header, path=path, query=query)
    decision = _forward(table, rule, where, sent.host, sent.target)
    timeouts = (actions.connect_timeout, actions.read_timeout, actions.send_timeout)
    if sent.action is None and not actions.checks_each_request and not any(timeouts):
        return decision
    canary = actions.canary
    return dataclasses.replace(
        decision,
        action=sent.action,
        checks=actions if actions.checks_each_request else None,
        timeouts=timeouts if any(timeouts) else None,
        external_auth=actions.external_auth,
        backends=decision.backends
        if canary is None or decision.status is not None
        else _weighted(rule.backend, canary),
    )


def _weighted(main: Backend, canary: Canary) -> tuple[Backend, ...]:
    """The main and canary backends weighed for the proxy's draw (``route.canary``, rule 3)."""
    weight = min(canary.weight, canary.weight_total)
    return (
        dataclasses.replace(main, weight=canary.weight_total - weight),
        dataclasses.replace(canary.backend, weight=weight),
    )


def _https_port(table: RouteTable, host_header: str | None) -> str:
    """``:port`` of an HTTP→HTTPS redirect's Location, or "" for 443 (the rule in the module
    docstring)."""
    named = port_of(host_header)
    https = table.snapshot.ingress.https_port
    if named.lstrip("0") not in ("", "80") and table.ingress_https_port is not None:
        https = table.ingress_https_port
    return "" if https == 443 else f":{https}"


def _match_regex(
    regex: tuple[tuple[PrefixMatch, PathRule], ...], path: str
) -> tuple[PathRule | None, tuple[str, ...] | None]:
    for pattern, rule in regex:
        groups = pattern.captures(path)
        if groups is not None:
            return rule, groups
    return None, None


def _match_prefix(prefix: dict[str, PathRule], path: str) -> PathRule | None:
    if not prefix:
        return None
    for candidate in element_prefixes(path):
        found = prefix.get(candidate)
        if found is not None:
            return found
    return None


def _forward(table: RouteTable, rule: PathRule, where: str, host: str, path: str) -> Decision:
    backend = rule.backend
    service = f"Service {backend.namespace}/{backend.service}"
    status: int | None = None
    if not backend.valid:
        problem = backend.tls.problem if backend.tls is not None else None
        status, reason = 503, f"{where}: {problem or f'{service} or its port does not exist'}"
    elif not table.snapshot.endpoints.get(backend.endpoints_key):
        status, reason = 503, f"{where}: {service} port {backend.port} has no ready endpoint"
    else:
        reason = f"{where}: forwarded to {service} port {backend.port}"
    return Decision(
        matched=True,
        status=status,
        reason=reason,
        host=host,
        path=path,
        route=rule.route,
        backends=(backend,),
    )
