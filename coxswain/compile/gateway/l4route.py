"""TLSRoute, TCPRoute and UDPRoute rules → stream entries (Gateway API v1 TLSRoute, TCPRoute,
UDPRoute).

A layer-4 route forwards whole connections (TLSRoute, TCPRoute) or datagram sessions
(UDPRoute) to its weighted ``backendRefs``; nothing in a stream is matched but, for a
TLSRoute, the server name of the ClientHello (``hostnames``, intersected with the listener's
by ``attach``). Its backends resolve as every route kind's do (``route_rules``, rule 2:
core Services, ReferenceGrant from the route's kind, ``BackendNotFound``, an invalid backend
keeping its weight so that its share of connections is refused).

Rules:
1. The v1 CRDs hold one rule (``maxItems: 1``); a rule past the first, possible only in
   hand-written input, is ``UnsupportedValue`` and dropped (``PartiallyInvalid``).
2. A backend whose Service carries ``coxswain-labs.dev/proxy-protocol: v2`` is marked
   ``proxy_protocol``: the proxy sends it a PROXY protocol v2 header first
   (``route.proxy_protocol``).
3. Precedence among the routes of one listener host: the oldest route, then ``namespace/name``
   (Gateway API's tie-break for conflicting routes), so that one connection is given to one
   route, and the same one on every proxy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pyrsistent import pvector

from coxswain.compile.gateway.route_rules import CompiledRoute, compile_rules, finding, rule_action
from coxswain.compile.model.objects import PROXY_PROTOCOL_ANNOTATION
from coxswain.compile.snapshot import RouteMatch

if TYPE_CHECKING:
    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.model.gateway_objects import StreamRoute, StreamRule
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.snapshot import Backend, RouteAction

__all__ = ["compile_stream_route", "stream_precedence"]

_EVERY_STREAM = RouteMatch(path_type="PathPrefix", path="/")
"""The match a stream entry carries: none is read (a layer-4 rule has no matches)."""


def compile_stream_route(
    route: StreamRoute, services: ServiceIndex, grants: Grants
) -> CompiledRoute:
    """Compile one TLSRoute, TCPRoute or UDPRoute. Pure."""

    def problems(rule: StreamRule) -> list[Diagnostic]:
        if rule is route.rules[0]:
            return []
        message = f"a {route.meta.key.kind} holds one rule (v1); this one is not served"
        return [finding(route, rule.field, "UnsupportedValue", message)]

    def action(rule: StreamRule, read: set[ObjectKey]) -> tuple[RouteAction, list[Diagnostic]]:
        return rule_action(route, rule, services, grants, read)

    def matches(index: int, rule: StreamRule) -> list[tuple[tuple[object, ...], RouteMatch]]:
        del rule
        return [(stream_precedence(route, index), _EVERY_STREAM)]

    compiled = compile_rules(route, route.rules, problems=problems, action=action, matches=matches)
    return _with_proxy_protocol(compiled, services)


def _with_proxy_protocol(compiled: CompiledRoute, services: ServiceIndex) -> CompiledRoute:
    """Rule 2: the backends whose Service asks for the PROXY protocol, marked."""

    def marked(backend: Backend) -> Backend:
        service = services.service(backend.namespace, backend.service)
        if (
            backend.valid
            and service is not None
            and service.meta.annotations.get(PROXY_PROTOCOL_ANNOTATION) == "v2"
        ):
            return replace(backend, proxy_protocol=True)
        return backend

    if all(marked(b) is b for b in compiled.backends):
        return compiled
    entries = tuple(
        (
            key,
            replace(
                rule,
                action=replace(
                    rule.action, backends=pvector(marked(b) for b in rule.action.backends)
                ),
            ),
        )
        for key, rule in compiled.entries
    )
    backends = tuple(b for _, rule in entries for b in rule.action.backends)
    return replace(compiled, entries=entries, backends=backends)


def stream_precedence(route: StreamRoute, rule_index: int) -> tuple[object, ...]:
    """Rule 2 as a sort key (smaller first), after the kind."""
    return (route.meta.key.kind, route.meta.age_order, rule_index)
