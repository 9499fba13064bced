"""GRPCRoute rules → match entries and actions (Gateway API v1 GRPCRoute, GEP-1016).

A gRPC call is an HTTP/2 POST to ``/{service}/{method}`` (gRPC over HTTP/2, "Requests": ``:path``
is ``/`` Service-Name ``/`` method name), so GEP-1016 defines a method match "as if a URI match
had been used" ("Matcher Types"). The tables the proxy matches with hold path matches, and a
GRPCRoute's rules become the same entries as an HTTPRoute's:

| ``method.type`` | service | method | path match |
|---|---|---|---|
| Exact | S | M | ``Exact`` ``/S/M`` |
| Exact | S | | ``PathPrefix`` ``/S`` (element-wise: ``/S/`` and below) |
| Exact | | M | ``RegularExpression`` ``/[^/]+/M`` |
| RegularExpression | S | M | ``RegularExpression`` ``/(?:S)/(?:M)`` |
| RegularExpression | S | | ``RegularExpression`` ``/(?:S)/[^/]+`` |
| RegularExpression | | M | ``RegularExpression`` ``/[^/]+/(?:M)`` |
| RegularExpression | | | ``PathPrefix`` ``/`` |
| (no ``method``) | | | ``PathPrefix`` ``/`` |

POLICY: where GEP-1016 writes ``.+`` for the part not given, ``[^/]+`` stands: a gRPC service
name holds no ``/``, so ``/a/b/M`` is no call of a method ``M``. Regular expressions are the
proxy's engine's (RE2, whole-path match, ``compile.regex``), as HTTPRoute's.

Rules:
1. Method matches: ``Exact`` values must be what the CRD admits (a service
   ``^(?i)\\.?[a-z_][a-z_0-9]*(\\.[a-z_][a-z_0-9]*)*$``, a method ``^[A-Za-z_][A-Za-z_0-9]*$``),
   and one of service and method must be given; ``RegularExpression`` values must compile.
   Header matches as HTTPRoute's (``route_rules``), the first of equivalent names only.
   A rule that cannot be honoured as written is invalid (``UnsupportedValue``).
2. Filters: RequestHeaderModifier, ResponseHeaderModifier, RequestMirror (and ExtensionRef, never
   skipped: ``route_rules``); any other type is ``UnsupportedValue``.
3. Precedence (``GRPCRouteRule.matches``): among the rules of a route host (the hostname part of
   the order is the tables': the most specific host first), the most characters of service,
   then of method (as written, a pattern's too), then the most header matches, then the oldest
   route, ``namespace/name``, rule order, match order. It is not HTTPRoute's: the proxy tries a
   gRPC host's rules in their order (``route.gateway``).
"""

from __future__ import annotations

from string import ascii_letters, digits
from typing import TYPE_CHECKING, Final

from coxswain.compile.gateway.route_rules import (
    CompiledRoute,
    compile_rules,
    filter_problems,
    finding,
    first_matches,
    header_match_problems,
    regex_error,
    rule_action,
)
from coxswain.compile.snapshot import RouteMatch

if TYPE_CHECKING:
    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.model.gateway_objects import (
        GRPCMethodMatch,
        GRPCRoute,
        GRPCRouteMatch,
        GRPCRouteRule,
    )
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.snapshot import RouteAction

__all__ = ["compile_grpc_route", "grpc_path_match", "grpc_precedence"]

_SUPPORTED_FILTERS: Final = frozenset(
    {"RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror"}
)
_ANY_PART: Final = "[^/]+"
_IDENTIFIER_START: Final = frozenset(ascii_letters + "_")
_IDENTIFIER: Final = _IDENTIFIER_START | frozenset(digits)


def compile_grpc_route(route: GRPCRoute, services: ServiceIndex, grants: Grants) -> CompiledRoute:
    """Compile one GRPCRoute's rules. Pure."""

    def action(rule: GRPCRouteRule, read: set[ObjectKey]) -> tuple[RouteAction, list[Diagnostic]]:
        return rule_action(route, rule, services, grants, read)

    def matches(index: int, rule: GRPCRouteRule) -> list[tuple[tuple[object, ...], RouteMatch]]:
        return [
            (grpc_precedence(route, match, index, i), grpc_path_match(match))
            for i, match in enumerate(rule.matches)
        ]

    return compile_rules(
        route,
        route.rules,
        problems=lambda rule: _rule_problems(route, rule),
        action=action,
        matches=matches,
    )


def grpc_path_match(match: GRPCRouteMatch) -> RouteMatch:
    """The path match a valid GRPCRoute match is (the module's table), with its headers."""
    headers = first_matches(match.headers)
    method = match.method
    if method is None or (method.service is None and method.method is None):
        return RouteMatch(path_type="PathPrefix", path="/", headers=headers)
    if method.type == "Exact":
        if method.service is not None and method.method is not None:
            path = f"/{method.service}/{method.method}"
            return RouteMatch(path_type="Exact", path=path, headers=headers)
        if method.service is not None:
            return RouteMatch(path_type="PathPrefix", path=f"/{method.service}", headers=headers)
        # a valid Exact method is an identifier: nothing in it is special to RE2
        pattern = f"/{_ANY_PART}/{method.method}"
    else:
        pattern = _regex_path(method)
    return RouteMatch(path_type="RegularExpression", path=pattern, headers=headers)


def _regex_path(method: GRPCMethodMatch) -> str:
    service = _ANY_PART if method.service is None else f"(?:{method.service})"
    name = _ANY_PART if method.method is None else f"(?:{method.method})"
    return f"/{service}/{name}"


def grpc_precedence(
    route: GRPCRoute, match: GRPCRouteMatch, rule_index: int, match_index: int
) -> tuple[object, ...]:
    """Rule 3 as a sort key (smaller first), after the kind, which keeps each kind's keys apart
    (a route host holds one kind's rules: ``cross_serving``)."""
    method = match.method
    service = "" if method is None or method.service is None else method.service
    name = "" if method is None or method.method is None else method.method
    return (
        route.meta.key.kind,
        -len(service),
        -len(name),
        -len(first_matches(match.headers)),
        route.meta.age_order,
        rule_index,
        match_index,
    )


def _rule_problems(route: GRPCRoute, rule: GRPCRouteRule) -> list[Diagnostic]:
    """Why ``rule`` cannot be served (rules 1 and 2), one diagnostic per problem."""
    problems: list[Diagnostic] = []
    for match in rule.matches:
        if match.method is not None:
            problems.extend(_method_problems(route, match.method, f"{match.field}.method"))
        problems.extend(header_match_problems(route, match.headers, f"{match.field}.headers"))
    filters = [*rule.filters, *(f for b in rule.backend_refs for f in b.filters)]
    problems.extend(filter_problems(route, filters, _SUPPORTED_FILTERS))
    return problems


def _method_problems(route: GRPCRoute, method: GRPCMethodMatch, where: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []

    def add(field: str, message: str) -> None:
        problems.append(finding(route, field, "UnsupportedValue", message))

    if method.type == "Exact":
        if method.service is None and method.method is None:
            add(where, "one or both of service and method must be given")
        if method.service is not None and not _is_service(method.service):
            add(f"{where}.service", f"{method.service!r} is not a gRPC service name")
        if method.method is not None and not _is_identifier(method.method):
            add(f"{where}.method", f"{method.method!r} is not a gRPC method name")
    elif method.type == "RegularExpression":
        for name, value in (("service", method.service), ("method", method.method)):
            if value is not None and (error := regex_error(value)) is not None:
                add(f"{where}.{name}", error)
        if not problems and (error := regex_error(_regex_path(method))) is not None:
            add(where, error)  # each part compiles, but not the whole path (its length)
    else:
        add(f"{where}.type", f"match type {method.type!r} is not supported")
    return problems


def _is_identifier(text: str) -> bool:
    """``[A-Za-z_][A-Za-z_0-9]*``: a gRPC method name, or one label of a service name."""
    return bool(text) and text[0] in _IDENTIFIER_START and _IDENTIFIER.issuperset(text)


def _is_service(text: str) -> bool:
    """A gRPC service name as the CRD admits it: dot-separated identifiers, one leading dot
    allowed (a fully-qualified protobuf name)."""
    return all(_is_identifier(label) for label in text.removeprefix(".").split("."))
