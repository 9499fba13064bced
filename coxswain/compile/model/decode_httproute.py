"""Raw HTTPRoute bodies → typed objects (gateway.networking.k8s.io v1, v1beta1). Total.

CRD defaults (v1.6.1): a route without ``rules`` has one rule matching ``PathPrefix /``; a rule
without ``matches`` matches ``PathPrefix /``; header and query matches are ``Exact``. A
``retry`` without ``attempts`` tries twice more, without ``backoff`` waits 25 ms (both
implementation-specific). What HTTPRoute shares with GRPCRoute (parentRefs, hostnames, header
matches, filters, backendRefs) is read by ``decode_route_spec`` and ``decode_filters``.
"""

from __future__ import annotations

from sys import intern
from typing import TYPE_CHECKING, Any

from pyrsistent import pvector

from coxswain.compile.model.decode_filters import INT32_MAX
from coxswain.compile.model.decode_gateway import parse_duration
from coxswain.compile.model.decode_route_spec import (
    decode_hostnames,
    decode_parent_refs,
    decode_rule_parts,
    decode_value_matches,
)
from coxswain.compile.model.gateway_objects import HTTPRoute, HTTPRouteMatch, HTTPRouteRule
from coxswain.compile.snapshot import Retry

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader
    from coxswain.compile.model.objects import Meta

__all__ = ["decode_httproute"]

# HTTPRouteRetry leaves these to the implementation: Envoy Gateway's retries (2) and Envoy's
# base interval (25 ms).
_RETRY_ATTEMPTS = 2
_RETRY_BACKOFF = 0.025


def decode_httproute(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> HTTPRoute:
    del raw
    parents = decode_parent_refs(fields, spec)
    hostnames, has_hostnames = decode_hostnames(fields, spec)
    raw_rules = fields.items(spec.get("rules"), "spec.rules") if "rules" in spec else [{}]
    rules = [_rule(fields, item, f"spec.rules[{i}]") for i, item in enumerate(raw_rules)]
    return HTTPRoute(
        meta=meta,
        parent_refs=parents,
        hostnames=hostnames,
        has_hostnames=has_hostnames,
        rules=pvector(r for r in rules if r is not None),
        diagnostics=fields.diagnostics(),
    )


def _rule(fields: FieldReader, raw: object, field: str) -> HTTPRouteRule | None:
    parts = decode_rule_parts(fields, raw, field, _match)
    if parts is None:
        return None
    timeouts = fields.mapping(parts.body.get("timeouts"), f"{field}.timeouts") or {}
    return HTTPRouteRule(
        field=intern(field),
        name=parts.name,
        matches=parts.matches,
        filters=parts.filters,
        backend_refs=parts.backend_refs,
        request_timeout=_duration(fields, timeouts.get("request"), f"{field}.timeouts.request"),
        backend_timeout=_duration(
            fields, timeouts.get("backendRequest"), f"{field}.timeouts.backendRequest"
        ),
        retry=_retry(fields, parts.body.get("retry"), f"{field}.retry"),
    )


def _retry(fields: FieldReader, raw: object, field: str) -> Retry | None:
    retry = fields.mapping(raw, field)
    if retry is None:
        return None
    codes = [
        code
        for i, item in enumerate(fields.items(retry.get("codes"), f"{field}.codes"))
        if (code := fields.integer(item, f"{field}.codes[{i}]", low=400, high=599)) is not None
    ]
    attempts = fields.integer(retry.get("attempts"), f"{field}.attempts", low=1, high=INT32_MAX)
    backoff = _duration(fields, retry.get("backoff"), f"{field}.backoff")
    return Retry(
        codes=pvector(sorted(set(codes))),
        attempts=_RETRY_ATTEMPTS if attempts is None else attempts,
        backoff=_RETRY_BACKOFF if backoff is None else backoff,
    )


def _duration(fields: FieldReader, value: object, field: str) -> float | None:
    text = fields.string(value, field)
    if text is None:
        return None
    seconds = parse_duration(text)
    if seconds is None:
        fields.problem(field, "InvalidField", f"{text!r} is not a duration such as 10s or 1m30s")
    return seconds


def _match(fields: FieldReader, raw: object, field: str) -> HTTPRouteMatch | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    path = fields.mapping(entry.get("path"), f"{field}.path") or {}
    return HTTPRouteMatch(
        field=intern(field),
        path_type=fields.string(path.get("type"), f"{field}.path.type") or "PathPrefix",
        path=fields.string(path.get("value"), f"{field}.path.value") or "/",
        headers=decode_value_matches(fields, entry.get("headers"), f"{field}.headers", lower=True),
        query=decode_value_matches(
            fields, entry.get("queryParams"), f"{field}.queryParams", lower=False
        ),
        method=fields.string(entry.get("method"), f"{field}.method") or None,
    )
