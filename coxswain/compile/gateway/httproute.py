"""HTTPRoute rules → match entries and actions, with the route's reference problems.

Rules (Gateway API v1 HTTPRoute):
1. Matches: path ``Exact`` and ``PathPrefix`` must be absolute paths; ``RegularExpression``
   (paths, headers, query parameters) must compile with the engine the proxy matches with
   (``coxswain.compile.regex``: RE2 syntax, full match, linear time, bounded size; so no
   backreferences or lookaround). A rule the implementation cannot honour is invalid
   (``UnsupportedValue``, below), with a diagnostic naming the field.
2. Filters: RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite,
   RequestMirror, CORS (origins, methods and header names checked by ``compile.cors``; on a
   backendRef it is refused: a preflight is answered before a backend is chosen). Any other
   type is ``UnsupportedValue``; ``ReplacePrefixMatch`` is only valid
   when every match of the rule is a ``PathPrefix``; a redirect and a URL rewrite cannot be
   combined (``IncompatibleFilters``). What a filter writes into a request or a response is
   checked as HTTP syntax (``compile.http_fields``): header names are RFC 9110 tokens, values
   RFC 9110 field values (no CR, LF or NUL), redirect and rewrite hostnames RFC 1123 names
   (Gateway API ``PreciseHostname``), replacement paths visible ASCII; anything else makes the
   rule invalid. A redirect answers before any backend is chosen. An
   ExtensionRef filter cannot be resolved here: "the filter MUST NOT be skipped", so its rule
   is served with a 500 and the route gets ``ResolvedRefs=False/InvalidKind``.
   An invalid rule is not served: when some rules are invalid the route carries
   ``PartiallyInvalid=True``; when all are, ``Accepted=False``.
3. backendRefs: core Services (others, and ExternalName Services as the spec advises for
   CVE-2021-25740, ``InvalidKind``), with a port, that exist (``BackendNotFound``); another
   namespace needs a ReferenceGrant (``RefNotPermitted``). An invalid backend keeps its
   weight: its share of requests is answered 500. The ``ResolvedRefs`` condition names the
   first reference that does not resolve; each one is a diagnostic on its own field, and so is
   each problem of an invalid rule.
4. Precedence across every rule on a listener host (HTTPRoute "matches" field): Exact path,
   then RegularExpression (POLICY: before prefixes, as Envoy Gateway orders them, so that a
   ``/`` prefix cannot hide them), then the longest PathPrefix; then method; then the most
   header matches; then the most query matches; then the oldest route, ``ns/name``, rule order,
   match order. ``precedence_key`` is that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pyrsistent import pvector

from coxswain.compile.backends import resolve_backend
from coxswain.compile.cors import cors_problem
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.hostnames import is_hostname
from coxswain.compile.http_fields import is_field_name, is_field_value
from coxswain.compile.model.gateway_objects import GATEWAY_GROUP
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.limits import preview
from coxswain.compile.regex import FullMatch, compile_pattern
from coxswain.compile.snapshot import (
    Backend,
    GatewayRule,
    HeaderEdits,
    Mirror,
    RouteAction,
    RouteMatch,
    RouteRef,
    ValueMatch,
)
from coxswain.compile.status import Condition

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.model.gateway_objects import (
        BackendRef,
        HTTPRoute,
        HTTPRouteMatch,
        HTTPRouteRule,
        ObjectRef,
    )

__all__ = ["CompiledRoute", "compile_route"]

# What a path written into a request line or a Location header may hold: visible ASCII.
_PATH_CHARS: Final = frozenset(chr(c) for c in range(0x21, 0x7F))
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


@dataclass(frozen=True, slots=True, kw_only=True)
class CompiledRoute:
    """A route's entries in precedence order, and its route-level conditions.

    ``accepted`` is None when the route can be served (attachment decides), else the
    ``Accepted=False`` condition (every rule is invalid); ``partially_invalid`` is the
    ``PartiallyInvalid=True`` condition when only some rules are; ``resolved_refs`` is the
    ``ResolvedRefs`` condition.
    """

    route: HTTPRoute
    entries: tuple[tuple[tuple[object, ...], GatewayRule], ...]
    accepted: Condition | None
    partially_invalid: Condition | None
    resolved_refs: Condition
    backends: tuple[Backend, ...]
    read: frozenset[ObjectKey]


def compile_route(route: HTTPRoute, services: ServiceIndex, grants: Grants) -> CompiledRoute:
    """Compile one HTTPRoute's rules. Pure."""
    problems: list[Diagnostic] = []
    unresolved: list[Diagnostic] = []
    entries: list[tuple[tuple[object, ...], GatewayRule]] = []
    backends: list[Backend] = []
    read: set[ObjectKey] = set()
    invalid_rules = 0
    for rule_index, rule in enumerate(route.rules):
        rule_problems = _rule_problems(route, rule)
        problems.extend(rule_problems)
        if rule_problems:
            invalid_rules += 1
            continue
        action, rule_refs = _action(route, rule, services, grants, read)
        unresolved.extend(rule_refs)
        backends.extend(action.backends)
        backends.extend(m.backend for m in action.mirrors)
        for match_index, match in enumerate(rule.matches):
            compiled = _route_match(match)
            entries.append(
                (
                    _precedence(route, compiled, rule_index, match_index),
                    GatewayRule(match=compiled, action=action),
                )
            )
    accepted = partially = None
    if problems:
        reason = (
            "IncompatibleFilters"
            if all(p.reason == "IncompatibleFilters" for p in problems)
            else "UnsupportedValue"
        )
        if invalid_rules == len(route.rules):
            accepted = Condition(
                type="Accepted",
                status=False,
                reason=reason,
                message=_joined(problems),
                diagnostics=tuple(problems),
            )
        else:
            partially = Condition(
                type="PartiallyInvalid",
                status=True,
                reason=reason,
                # apis/v1 RouteConditionPartiallyInvalid: the message MUST start "Dropped Rule".
                message="Dropped Rule(s): " + _joined(problems),
                diagnostics=tuple(problems),
            )
    resolved = (
        Condition(type="ResolvedRefs", status=True, reason="ResolvedRefs")
        if not unresolved
        else Condition(
            type="ResolvedRefs",
            status=False,
            reason=unresolved[0].reason,
            message=_joined(unresolved[:1]),
            diagnostics=tuple(unresolved),
        )
    )
    return CompiledRoute(
        route=route,
        entries=tuple(sorted(entries, key=lambda e: e[0])),
        accepted=accepted,
        partially_invalid=partially,
        resolved_refs=resolved,
        backends=tuple(backends),
        read=frozenset(read),
    )


def _joined(problems: Sequence[Diagnostic]) -> str:
    """Problems as one condition message: ``field: message; field: message``."""
    return "; ".join(f"{p.field}: {p.message}" for p in problems)


def _precedence(
    route: HTTPRoute, match: RouteMatch, rule_index: int, match_index: int
) -> tuple[object, ...]:
    length = len(match.path)
    return (
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
        problems.append(_finding(route, field, reason, message))

    for match in rule.matches:
        where = match.field
        if match.path_type in ("Exact", "PathPrefix"):
            if not match.path.startswith("/"):
                add(f"{where}.path", f"{match.path!r} is not an absolute path")
        elif match.path_type == "RegularExpression":
            if (error := _regex_error(match.path)) is not None:
                add(f"{where}.path.value", error)
        else:
            add(f"{where}.path.type", f"{match.path_type!r} is not supported")
        for kind, values in (("headers", match.headers), ("queryParams", match.query)):
            for index, value in enumerate(values):
                if value.type == "RegularExpression":
                    if (error := _regex_error(value.value)) is not None:
                        add(f"{where}.{kind}[{index}].value", error)
                elif value.type != "Exact":
                    add(f"{where}.{kind}", f"match type {value.type!r} is not supported")
            if kind == "headers" and not all(is_field_name(v.name) for v in values):
                add(f"{where}.headers", "a header name is not a valid HTTP field name")
    filters = list(rule.filters) + [f for b in rule.backend_refs for f in b.filters]
    for item in filters:
        if item.type == "ExtensionRef":
            continue  # served as an error, never skipped: see _action
        if item.type not in _SUPPORTED_FILTERS:
            add(f"{item.field}.type", f"filter {item.type!r} is not supported")
        for modifier in (item.redirect, item.rewrite):
            path = None if modifier is None else modifier.path
            if path is None:
                continue
            if path.type not in ("ReplaceFullPath", "ReplacePrefixMatch"):
                add(item.field, f"path modifier {path.type!r} is not supported")
            elif path.type == "ReplacePrefixMatch" and any(
                m.path_type != "PathPrefix" for m in rule.matches
            ):
                add(item.field, "ReplacePrefixMatch needs every match to be a PathPrefix")
            if not _PATH_CHARS.issuperset(path.value):
                add(
                    item.field,
                    f"path {preview(path.value)} holds a space, a control or non-ASCII character",
                )
        for name, modifier in (("urlRewrite", item.rewrite), ("requestRedirect", item.redirect)):
            hostname = None if modifier is None else modifier.hostname
            if hostname is not None and not is_hostname(hostname):
                add(
                    f"{item.field}.{name}.hostname",
                    f"{preview(hostname)} is not an RFC 1123 DNS name (PreciseHostname)",
                )
        for name, edits in (
            ("requestHeaderModifier", item.request_headers),
            ("responseHeaderModifier", item.response_headers),
        ):
            if edits is not None and (problem := _header_edits_problem(edits)) is not None:
                add(f"{item.field}.{name}", problem)
        if item.type == "CORS" and item.cors is None:
            add(f"{item.field}.cors", "a CORS filter needs its cors field")
        if item.cors is not None and (problem := cors_problem(item.cors)) is not None:
            add(f"{item.field}.cors", problem)
        if item.redirect is not None and item.redirect.status not in (301, 302, 303, 307, 308):
            add(item.field, f"redirect status {item.redirect.status} is not supported")
        if item.redirect is not None and item.redirect.scheme not in (None, "http", "https"):
            add(item.field, f"redirect scheme {item.redirect.scheme!r} is not supported")
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


def _header_edits_problem(edits: HeaderEdits) -> str | None:
    """Why a header modifier cannot be applied: the first name or value that RFC 9110 field
    syntax refuses (a CR or LF in a value would write a header of the tenant's choosing)."""
    for verb, pairs in (("set", edits.set), ("add", edits.add)):
        for name, value in pairs:
            if not is_field_name(name):
                return f"{verb} header name {preview(name)} is not an RFC 9110 token"
            if not is_field_value(value):
                return (
                    f"{verb} header {name} value {preview(value)} is not an RFC 9110 field "
                    "value (control characters, or white space at either end)"
                )
    for name in edits.remove:
        if not is_field_name(name):
            return f"remove header name {preview(name)} is not an RFC 9110 token"
    return None


def _regex_error(pattern: str) -> str | None:
    """Why the proxy could not match with ``pattern``, or None when it can."""
    compiled = compile_pattern(pattern)
    if isinstance(compiled, FullMatch):
        return None
    return f"unsupported regular expression ({compiled})"


def _route_match(match: HTTPRouteMatch) -> RouteMatch:
    path = match.path
    if match.path_type == "PathPrefix":
        path = path.rstrip("/") or "/"
    first_headers = {v.name: v for v in reversed(match.headers)}
    first_query = {v.name: v for v in reversed(match.query)}
    return RouteMatch(
        path_type=match.path_type,
        path=path,
        headers=pvector(
            ValueMatch(name=v.name, type=v.type, value=v.value)
            for v in sorted(first_headers.values(), key=lambda v: v.name)
        ),
        query=pvector(
            ValueMatch(name=v.name, type=v.type, value=v.value)
            for v in sorted(first_query.values(), key=lambda v: v.name)
        ),
        method=match.method,
    )


def _action(
    route: HTTPRoute,
    rule: HTTPRouteRule,
    services: ServiceIndex,
    grants: Grants,
    read: set[ObjectKey],
) -> tuple[RouteAction, list[Diagnostic]]:
    """The rule's action, and its references that do not resolve (in the order written)."""
    key = route.meta.key
    problems: list[Diagnostic] = []
    backends: list[Backend] = []
    for ref in rule.backend_refs:
        backend, why = _backend(route, ref.ref, ref.port, ref.weight, services, grants, read)
        backends.append(_with_filters(backend, ref))
        problems.extend(why)
    mirrors: list[Mirror] = []
    request = response = None
    redirect = rewrite = None
    cors = None
    unresolved: str | None = None
    for item in (*rule.filters, *(f for b in rule.backend_refs for f in b.filters)):
        if item.type == "ExtensionRef":
            message = "ExtensionRef filters are not supported"
            unresolved = f"{item.field}: {message}"
            problems.append(_finding(route, item.field, "InvalidKind", message))
    for item in rule.filters:
        if item.request_headers is not None:
            request = item.request_headers
        elif item.response_headers is not None:
            response = item.response_headers
        elif item.redirect is not None:
            redirect = item.redirect
        elif item.rewrite is not None:
            rewrite = item.rewrite
        elif item.cors is not None:
            cors = item.cors
        elif item.mirror is not None:
            mirror, why = _backend(route, item.mirror, item.mirror_port, 1, services, grants, read)
            problems.extend(why)
            if mirror.valid:  # an invalid mirror backend is dropped, not configured
                mirrors.append(Mirror(backend=mirror, percent=item.mirror_percent))
    rule_name = rule.name or rule.field
    action = RouteAction(
        route=RouteRef("HTTPRoute", key.namespace, key.name, rule_name),
        backends=pvector(backends),
        request_headers=request,
        response_headers=response,
        redirect=redirect,
        rewrite=rewrite,
        mirrors=pvector(mirrors),
        request_timeout=rule.request_timeout,
        backend_timeout=rule.backend_timeout,
        cors=cors,
        retry=rule.retry,
        problem=unresolved,
    )
    return action, problems


def _finding(route: HTTPRoute, field: str, reason: str, message: str) -> Diagnostic:
    """An error about ``field`` of the route: a part of it is not served as written."""
    return Diagnostic(
        key=route.meta.key, field=field, severity=Severity.ERROR, reason=reason, message=message
    )


def _with_filters(backend: Backend, ref: BackendRef) -> Backend:
    if not ref.filters:
        return backend
    request = next((f.request_headers for f in ref.filters if f.request_headers), None)
    response = next((f.response_headers for f in ref.filters if f.response_headers), None)
    return Backend(
        namespace=backend.namespace,
        service=backend.service,
        port=backend.port,
        weight=backend.weight,
        valid=backend.valid,
        request_headers=request,
        response_headers=response,
    )


def _backend(
    route: HTTPRoute,
    ref: ObjectRef,
    port: int | None,
    weight: int,
    services: ServiceIndex,
    grants: Grants,
    read: set[ObjectKey],
) -> tuple[Backend, tuple[Diagnostic, ...]]:
    """The backend ``ref`` names, and why it is invalid (nothing when it is valid)."""
    namespace = ref.namespace or route.meta.key.namespace
    where = f"{ref.kind} {namespace}/{ref.name}"
    invalid = Backend(
        namespace=namespace, service=ref.name, port=port or 0, weight=weight, valid=False
    )

    def refused(reason: str, message: str) -> tuple[Backend, tuple[Diagnostic, ...]]:
        return invalid, (_finding(route, ref.field, reason, message),)

    if (ref.group, ref.kind) != ("", "Service"):
        return refused("InvalidKind", f"{where}: only core Services are supported backends")
    if not grants.allows(
        source=(GATEWAY_GROUP, "HTTPRoute", route.meta.key.namespace),
        target=("", "Service", namespace, ref.name),
    ):
        return refused("RefNotPermitted", f"{where}: no ReferenceGrant allows this reference")
    if port is None:
        return refused("UnsupportedValue", f"{where}: a Service backend needs a port")
    read.add(ObjectKey("Service", namespace, ref.name))
    target = services.service(namespace, ref.name)
    if target is not None and target.type == "ExternalName":
        # "Implementations SHOULD NOT support ExternalName Services" (CVE-2021-25740).
        return refused("InvalidKind", f"{where}: ExternalName Services are not supported")
    backend, problem = resolve_backend(
        services,
        namespace=namespace,
        service=ref.name,
        port_number=port,
        port_name=None,
        weight=weight,
    )
    if problem is not None:
        return backend, (_finding(route, ref.field, "BackendNotFound", problem),)
    return backend, ()
