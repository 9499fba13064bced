"""What compiling a rule shares across route kinds: filters, backends, and the route's conditions.

HTTPRoute and GRPCRoute rules differ in their matches and precedence (``httproute``,
``grpcroute``) and in which filters they take; the rest is one piece of code (GEP-1016: GRPCRoute
mirrors HTTPRoute "in all other cases").

Rules:
1. Filters: a type outside the kind's supported set is ``UnsupportedValue``. An ExtensionRef
   filter cannot be resolved here: "the filter MUST NOT be skipped", so its rule is served
   with a 500 (a gRPC error on a GRPCRoute) and the route gets ``ResolvedRefs=False/InvalidKind``.
   What a filter writes into a request or a response is checked as HTTP syntax
   (``compile.http_fields``): header names are RFC 9110 tokens, values RFC 9110 field values
   (no CR, LF or NUL), redirect and rewrite hostnames RFC 1123 names (Gateway API
   ``PreciseHostname``), replacement paths visible ASCII; anything else makes the rule invalid.
2. backendRefs and mirrors: core Services (others, and ExternalName Services as the spec advises
   for CVE-2021-25740, ``InvalidKind``), with a port, that exist (``BackendNotFound``); another
   namespace needs a ReferenceGrant from the route's kind (``RefNotPermitted``). An invalid
   backend keeps its weight: its share of requests is answered 500 (UNAVAILABLE on a
   GRPCRoute). An invalid mirror backend is dropped. A GRPCRoute's backends and mirrors speak
   HTTP/2 (``BackendProtocol.H2C``): gRPC is defined over HTTP/2 only.
3. Conditions: an invalid rule is not served; when some rules are invalid the route carries
   ``PartiallyInvalid=True`` ("Dropped Rule…"); when all are, ``Accepted=False``. The
   ``ResolvedRefs`` condition names the first reference that does not resolve; each one is a
   diagnostic on its own field, and so is each problem of an invalid rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from pyrsistent import pvector

from coxswain.compile.backends import resolve_backend
from coxswain.compile.cors import cors_problem
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.hostnames import is_hostname
from coxswain.compile.http_fields import is_field_name, is_field_value
from coxswain.compile.model.gateway_objects import GATEWAY_GROUP, GRPCRoute
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.limits import preview
from coxswain.compile.regex import FullMatch, compile_pattern
from coxswain.compile.snapshot import (
    Backend,
    BackendProtocol,
    GatewayRule,
    Mirror,
    RouteAction,
    RouteRef,
)
from coxswain.compile.snapshot import ValueMatch as SnapshotValueMatch
from coxswain.compile.status import Condition

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from pyrsistent.typing import PVector

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.model.gateway_objects import (
        BackendRef,
        CommonRoute,
        HTTPFilter,
        ObjectRef,
        ValueMatch,
    )
    from coxswain.compile.snapshot import HeaderEdits, Retry, RouteMatch

__all__ = [
    "CompiledRoute",
    "Entry",
    "Rule",
    "compile_rules",
    "filter_problems",
    "finding",
    "first_matches",
    "header_match_problems",
    "regex_error",
    "rule_action",
]

_Rule = TypeVar("_Rule", bound="Rule")

Entry = tuple[tuple[object, ...], GatewayRule]
"""A rule's match with its precedence key: entries of one route host sort by the key."""

# What a path written into a request line or a Location header may hold: visible ASCII.
_PATH_CHARS: Final = frozenset(chr(c) for c in range(0x21, 0x7F))
_NO_MATCHES: Final[PVector[SnapshotValueMatch]] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class CompiledRoute:
    """A route's entries in precedence order, and its route-level conditions.

    ``accepted`` is None when the route can be served (attachment decides), else the
    ``Accepted=False`` condition (every rule is invalid); ``partially_invalid`` is the
    ``PartiallyInvalid=True`` condition when only some rules are; ``resolved_refs`` is the
    ``ResolvedRefs`` condition.
    """

    route: CommonRoute
    entries: tuple[Entry, ...]
    accepted: Condition | None
    partially_invalid: Condition | None
    resolved_refs: Condition
    backends: tuple[Backend, ...]
    read: frozenset[ObjectKey]


class Rule(Protocol):
    """What a rule of any kind holds besides its matches (``HTTPRouteRule``,
    ``GRPCRouteRule``): where it is (``field``, ``name``), its filters and backendRefs."""

    @property
    def field(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def filters(self) -> Sequence[HTTPFilter]: ...
    @property
    def backend_refs(self) -> Sequence[BackendRef]: ...


def finding(route: CommonRoute, field: str, reason: str, message: str) -> Diagnostic:
    """An error about ``field`` of the route: a part of it is not served as written."""
    return Diagnostic(
        key=route.meta.key, field=field, severity=Severity.ERROR, reason=reason, message=message
    )


def regex_error(pattern: str) -> str | None:
    """Why the proxy could not match with ``pattern``, or None when it can."""
    compiled = compile_pattern(pattern)
    if isinstance(compiled, FullMatch):
        return None
    return f"unsupported regular expression ({compiled})"


def first_matches(values: Sequence[ValueMatch]) -> PVector[SnapshotValueMatch]:
    """Header or query matches as the snapshot holds them: the first entry of each name only
    ("Subsequent entries with an equivalent ... name MUST be ignored"; names of header matches
    are lower-case already), sorted by name. Most matches have none: they share one empty
    vector."""
    if not values:
        return _NO_MATCHES
    first = {v.name: v for v in reversed(list(values))}
    return pvector(
        SnapshotValueMatch(name=v.name, type=v.type, value=v.value)
        for v in sorted(first.values(), key=lambda v: v.name)
    )


def header_match_problems(
    route: CommonRoute, headers: Sequence[ValueMatch], where: str
) -> list[Diagnostic]:
    """Why header matches (``where`` is their field) cannot be honoured: a type other than
    ``Exact`` and ``RegularExpression``, a pattern the proxy's engine refuses, a name that is
    not an HTTP field name."""
    problems: list[Diagnostic] = []
    for index, value in enumerate(headers):
        if value.type == "RegularExpression":
            if (error := regex_error(value.value)) is not None:
                problems.append(
                    finding(route, f"{where}[{index}].value", "UnsupportedValue", error)
                )
        elif value.type != "Exact":
            problems.append(
                finding(
                    route, where, "UnsupportedValue", f"match type {value.type!r} is not supported"
                )
            )
    if not all(is_field_name(v.name) for v in headers):
        problems.append(
            finding(
                route, where, "UnsupportedValue", "a header name is not a valid HTTP field name"
            )
        )
    return problems


def filter_problems(
    route: CommonRoute, filters: Iterable[HTTPFilter], supported: frozenset[str]
) -> list[Diagnostic]:
    """Why some of ``filters`` cannot be applied (rule 1), one diagnostic per problem."""
    problems: list[Diagnostic] = []

    def add(field: str, message: str) -> None:
        problems.append(finding(route, field, "UnsupportedValue", message))

    for item in filters:
        if item.type == "ExtensionRef":
            continue  # served as an error, never skipped: see rule_action
        if item.type not in supported:
            add(f"{item.field}.type", f"filter {item.type!r} is not supported")
            continue
        for modifier in (item.redirect, item.rewrite):
            path = None if modifier is None else modifier.path
            if path is None:
                continue
            if path.type not in ("ReplaceFullPath", "ReplacePrefixMatch"):
                add(item.field, f"path modifier {path.type!r} is not supported")
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


def rule_action(
    route: CommonRoute,
    rule: Rule,
    services: ServiceIndex,
    grants: Grants,
    read: set[ObjectKey],
    *,
    timeouts: tuple[float | None, float | None] = (None, None),
    retry: Retry | None = None,
) -> tuple[RouteAction, list[Diagnostic]]:
    """A valid rule's action, and its references that do not resolve (in the order written).

    ``timeouts`` are the rule's ``request`` and ``backendRequest`` timeouts in seconds and
    ``retry`` its retry policy (HTTPRoute's alone). The Services read go into ``read``.
    """
    key = route.meta.key
    grpc = isinstance(route, GRPCRoute)
    problems: list[Diagnostic] = []
    backends: list[Backend] = []

    def resolve(ref: ObjectRef, port: int | None, weight: int) -> Backend:
        backend, why = _backend(route, ref, port, weight, services, grants, read)
        problems.extend(why)
        return replace(backend, protocol=BackendProtocol.H2C) if grpc else backend

    for ref in rule.backend_refs:
        backends.append(_with_filters(resolve(ref.ref, ref.port, ref.weight), ref))
    mirrors: list[Mirror] = []
    request = response = None
    redirect = rewrite = None
    cors = None
    unresolved: str | None = None
    for item in (*rule.filters, *(f for b in rule.backend_refs for f in b.filters)):
        if item.type == "ExtensionRef":
            message = "ExtensionRef filters are not supported"
            unresolved = f"{item.field}: {message}"
            problems.append(finding(route, item.field, "InvalidKind", message))
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
            mirror = resolve(item.mirror, item.mirror_port, 1)
            if mirror.valid:  # an invalid mirror backend is dropped, not configured
                mirrors.append(Mirror(backend=mirror, percent=item.mirror_percent))
    action = RouteAction(
        route=RouteRef(key.kind, key.namespace, key.name, rule.name or rule.field),
        backends=pvector(backends),
        request_headers=request,
        response_headers=response,
        redirect=redirect,
        rewrite=rewrite,
        mirrors=pvector(mirrors),
        request_timeout=timeouts[0],
        backend_timeout=timeouts[1],
        cors=cors,
        retry=retry,
        problem=unresolved,
        grpc=grpc,
    )
    return action, problems


def _with_filters(backend: Backend, ref: BackendRef) -> Backend:
    if not ref.filters:
        return backend
    request = next((f.request_headers for f in ref.filters if f.request_headers), None)
    response = next((f.response_headers for f in ref.filters if f.response_headers), None)
    return replace(backend, request_headers=request, response_headers=response)


def _backend(
    route: CommonRoute,
    ref: ObjectRef,
    port: int | None,
    weight: int,
    services: ServiceIndex,
    grants: Grants,
    read: set[ObjectKey],
) -> tuple[Backend, tuple[Diagnostic, ...]]:
    """The backend ``ref`` names, and why it is invalid (nothing when it is valid)."""
    namespace = ref.namespace or route.meta.key.namespace

    def refused(reason: str, message: str) -> tuple[Backend, tuple[Diagnostic, ...]]:
        invalid = Backend(
            namespace=namespace, service=ref.name, port=port or 0, weight=weight, valid=False
        )
        return invalid, (
            finding(route, ref.field, reason, f"{ref.kind} {namespace}/{ref.name}: {message}"),
        )

    if (ref.group, ref.kind) != ("", "Service"):
        return refused("InvalidKind", "only core Services are supported backends")
    if not grants.allows(
        source=(GATEWAY_GROUP, route.meta.key.kind, route.meta.key.namespace),
        target=("", "Service", namespace, ref.name),
    ):
        return refused("RefNotPermitted", "no ReferenceGrant allows this reference")
    if port is None:
        return refused("UnsupportedValue", "a Service backend needs a port")
    read.add(ObjectKey("Service", namespace, ref.name))
    target = services.service(namespace, ref.name)
    if target is not None and target.type == "ExternalName":
        # "Implementations SHOULD NOT support ExternalName Services" (CVE-2021-25740).
        return refused("InvalidKind", "ExternalName Services are not supported")
    backend, problem = resolve_backend(
        services,
        namespace=namespace,
        service=ref.name,
        port_number=port,
        port_name=None,
        weight=weight,
    )
    if problem is not None:
        return backend, (finding(route, ref.field, "BackendNotFound", problem),)
    return backend, ()


def compile_rules(
    route: CommonRoute,
    rules: Sequence[_Rule],
    *,
    problems: Callable[[_Rule], list[Diagnostic]],
    action: Callable[[_Rule, set[ObjectKey]], tuple[RouteAction, list[Diagnostic]]],
    matches: Callable[[int, _Rule], Iterable[tuple[tuple[object, ...], RouteMatch]]],
) -> CompiledRoute:
    """Compile a route's rules, whatever their kind. Pure.

    Args:
        route: the route.
        rules: its rules.
        problems: why a rule cannot be served (rule 1 and the kind's own), empty when it can.
        action: a valid rule's action and its references that do not resolve, adding the
            Services it reads to the set given.
        matches: a valid rule's matches (by its index), each with its precedence key.
    """
    found: list[Diagnostic] = []
    unresolved: list[Diagnostic] = []
    entries: list[Entry] = []
    backends: list[Backend] = []
    read: set[ObjectKey] = set()
    invalid_rules = 0
    for index, rule in enumerate(rules):
        rule_problems = problems(rule)
        found.extend(rule_problems)
        if rule_problems:
            invalid_rules += 1
            continue
        served, refs = action(rule, read)
        unresolved.extend(refs)
        backends.extend(served.backends)
        backends.extend(m.backend for m in served.mirrors)
        entries.extend(
            (key, GatewayRule(match=match, action=served)) for key, match in matches(index, rule)
        )
    every_rule_invalid = bool(found) and invalid_rules == len(rules)
    return CompiledRoute(
        route=route,
        entries=tuple(sorted(entries, key=lambda e: e[0])),
        accepted=_invalid(found, every_rule=True) if every_rule_invalid else None,
        partially_invalid=None if every_rule_invalid else _invalid(found, every_rule=False),
        resolved_refs=_resolved_refs(unresolved),
        backends=tuple(backends),
        read=frozenset(read),
    )


def _invalid(problems: Sequence[Diagnostic], *, every_rule: bool) -> Condition | None:
    """With ``every_rule``, the ``Accepted=False`` condition of a route whose rules are all
    invalid; else the ``PartiallyInvalid=True`` condition of one whose rules are not; None
    without problems."""
    if not problems:
        return None
    reason = (
        "IncompatibleFilters"
        if all(p.reason == "IncompatibleFilters" for p in problems)
        else "UnsupportedValue"
    )
    if every_rule:
        return Condition(
            type="Accepted",
            status=False,
            reason=reason,
            message=_joined(problems),
            diagnostics=tuple(problems),
        )
    return Condition(
        type="PartiallyInvalid",
        status=True,
        reason=reason,
        # apis/v1 RouteConditionPartiallyInvalid: the message MUST start "Dropped Rule".
        message="Dropped Rule(s): " + _joined(problems),
        diagnostics=tuple(problems),
    )


def _resolved_refs(unresolved: Sequence[Diagnostic]) -> Condition:
    if not unresolved:
        return Condition(type="ResolvedRefs", status=True, reason="ResolvedRefs")
    return Condition(
        type="ResolvedRefs",
        status=False,
        reason=unresolved[0].reason,
        message=_joined(unresolved[:1]),
        diagnostics=tuple(unresolved),
    )


def _joined(problems: Sequence[Diagnostic]) -> str:
    """Problems as one condition message: ``field: message; field: message``."""
    return "; ".join(f"{p.field}: {p.message}" for p in problems)
