"""HTTPRoute rules → match entries and actions, with the route's reference problems.

Rules (Gateway API v1 HTTPRoute), besides those every route kind shares (``route_rules``):
1. Matches: path ``Exact`` and ``PathPrefix`` must be absolute paths; ``RegularExpression``
   (paths, headers, query parameters) must compile with the engine the proxy matches with
   (``coxswain.compile.regex``: RE2 syntax, full match, linear time, bounded size; so no
   backreferences or lookaround). A rule the implementation cannot honour is invalid
   (``UnsupportedValue``), with a diagnostic naming the field.
2. Filters: RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite,
   RequestMirror, CORS (origins, methods and header names checked by ``compile.cors``; on a
   backendRef it is refused: a preflight is answered before a backend is chosen).
   ``ReplacePrefixMatch`` is only valid when every match of the rule is a ``PathPrefix``; a
   redirect and a URL rewrite cannot be combined (``IncompatibleFilters``). A redirect answers
   before any backend is chosen.
3. Precedence across every rule on a listener host (HTTPRoute "matches" field): Exact path,
   then RegularExpression (POLICY: before prefixes, as Envoy Gateway orders them, so that a
   ``/`` prefix cannot hide them), then the longest PathPrefix; then method; then the most
   header matches; then the most query matches; then the oldest route, ``ns/name``, rule order,
   match order. ``_precedence`` is that order, after the kind, which keeps each kind's keys
   apart (a route host holds one kind's rules: ``cross_serving``).
"""

from __future__ import annotations

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
    from coxswain.compile.model.gateway_objects import HTTPRoute, HTTPRouteMatch, HTTPRouteRule
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.snapshot import RouteAction

__all__ = ["compile_route"]

_PATH_RANK: Final = {"Exact": 0, "RegularExpression": 1, "PathPrefix": 2}
_SUPPORTED_FILTERS: Final = frozenset(
    {
        "RequestHeaderModifier",
        "ResponseHeaderModifier",
        "RequestRedirect",
        "URLRewrite",
        "RequestMirror",
        "CORS",
    }
)


def compile_route(route: HTTPRoute, services: ServiceIndex, grants: Grants) -> CompiledRoute:
    """Compile one HTTPRoute's rules. Pure."""

    def action(rule: HTTPRouteRule, read: set[ObjectKey]) -> tuple[RouteAction, list[Diagnostic]]:
        return rule_action(
            route,
            rule,
            services,
            grants,
            read,
            timeouts=(rule.request_timeout, rule.backend_timeout),
            retry=rule.retry,
        )

    def matches(index: int, rule: HTTPRouteRule) -> list[tuple[tuple[object, ...], RouteMatch]]:
        compiled = [_route_match(m) for m in rule.matches]
        return [(_precedence(route, m, index, i), m) for i, m in enumerate(compiled)]

    return compile_rules(
        route,
        route.rules,
        problems=lambda rule: _rule_problems(route, rule),
        action=action,
        matches=matches,
    )


def _precedence(
    route: HTTPRoute, match: RouteMatch, rule_index: int, match_index: int
) -> tuple[object, ...]:
    length = len(match.path)
    return (
        route.meta.key.kind,
        _PATH_RANK.get(match.path_type, 3),
        -length,
        match.method is None,
        -len(match.headers),
        -len(match.query),
        route.meta.age_order,
        rule_index,
        match_index,
    )


def _rule_problems(route: HTTPRoute, rule: HTTPRouteRule) -> list[Diagnostic]:
    """Why ``rule`` cannot be served, one diagnostic per problem (none when it can)."""
    problems: list[Diagnostic] = []

    def add(field: str, message: str, reason: str = "UnsupportedValue") -> None:
        problems.append(finding(route, field, reason, message))

    for match in rule.matches:
        where = match.field
        if match.path_type in ("Exact", "PathPrefix"):
            if not match.path.startswith("/"):
                add(f"{where}.path", f"{match.path!r} is not an absolute path")
        elif match.path_type == "RegularExpression":
            if (error := regex_error(match.path)) is not None:
                add(f"{where}.path.value", error)
        else:
            add(f"{where}.path.type", f"{match.path_type!r} is not supported")
        problems.extend(header_match_problems(route, match.headers, f"{where}.headers"))
        for index, value in enumerate(match.query):
            if value.type == "RegularExpression":
                if (error := regex_error(value.value)) is not None:
                    add(f"{where}.queryParams[{index}].value", error)
            elif value.type != "Exact":
                add(f"{where}.queryParams", f"match type {value.type!r} is not supported")
    filters = list(rule.filters) + [f for b in rule.backend_refs for f in b.filters]
    problems.extend(filter_problems(route, filters, _SUPPORTED_FILTERS))
    for item in filters:
        for modifier in (item.redirect, item.rewrite):
            path = None if modifier is None else modifier.path
            if (
                path is not None
                and path.type == "ReplacePrefixMatch"
                and any(m.path_type != "PathPrefix" for m in rule.matches)
            ):
                add(item.field, "ReplacePrefixMatch needs every match to be a PathPrefix")
    for backend_filter in (f for b in rule.backend_refs for f in b.filters):
        if backend_filter.type == "CORS":
            add(
                f"{backend_filter.field}.type",
                "a CORS filter applies to the whole rule: write it in the rule's filters",
            )
    kinds = {f.type for f in rule.filters}
    if "RequestRedirect" in kinds and ("URLRewrite" in kinds or rule.backend_refs):
        add(
            rule.field,
            "a RequestRedirect cannot be combined with a URLRewrite or backendRefs",
            "IncompatibleFilters",
        )
    return problems


def _route_match(match: HTTPRouteMatch) -> RouteMatch:
    path = match.path
    if match.path_type == "PathPrefix":
        path = path.rstrip("/") or "/"
    return RouteMatch(
        path_type=match.path_type,
        path=path,
        headers=first_matches(match.headers),
        query=first_matches(match.query),
        method=match.method,
    )
