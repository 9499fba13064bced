"""Raw GRPCRoute bodies → typed objects (gateway.networking.k8s.io v1, GEP-1016). Total.

CRD defaults (v1.6.1): a method match is ``Exact``; a header match is ``Exact``. A rule without
``matches`` matches every gRPC request ("If no matches are specified, the implementation MUST
match every gRPC request"), and so does a match without ``method``. An empty ``service`` or
``method`` is an omitted one ("If left empty or omitted, will match any"). The values are
checked when the route is compiled (``compile.gateway.grpc_matches``), where a problem is a
condition on the route. What GRPCRoute shares with HTTPRoute is read by ``decode_route_spec``
and ``decode_filters``.
"""

from __future__ import annotations

from sys import intern
from typing import TYPE_CHECKING, Any

from pyrsistent import pvector

from coxswain.compile.model.decode_route_spec import (
    decode_hostnames,
    decode_parent_refs,
    decode_rule_parts,
    decode_value_matches,
)
from coxswain.compile.model.gateway_objects import (
    GRPCMethodMatch,
    GRPCRoute,
    GRPCRouteMatch,
    GRPCRouteRule,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader
    from coxswain.compile.model.objects import Meta

__all__ = ["decode_grpcroute"]


def decode_grpcroute(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> GRPCRoute:
    del raw
    parents = decode_parent_refs(fields, spec)
    hostnames, has_hostnames = decode_hostnames(fields, spec)
    rules = [
        r
        for i, item in enumerate(fields.items(spec.get("rules"), "spec.rules"))
        if (r := _rule(fields, item, f"spec.rules[{i}]")) is not None
    ]
    return GRPCRoute(
        meta=meta,
        parent_refs=parents,
        hostnames=hostnames,
        has_hostnames=has_hostnames,
        rules=pvector(rules),
        diagnostics=fields.diagnostics(),
    )


def _rule(fields: FieldReader, raw: object, field: str) -> GRPCRouteRule | None:
    parts = decode_rule_parts(fields, raw, field, _match)
    if parts is None:
        return None
    return GRPCRouteRule(
        field=intern(field),
        name=parts.name,
        matches=parts.matches,
        filters=parts.filters,
        backend_refs=parts.backend_refs,
    )


def _match(fields: FieldReader, raw: object, field: str) -> GRPCRouteMatch | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    method = fields.mapping(entry.get("method"), f"{field}.method")
    return GRPCRouteMatch(
        field=intern(field),
        method=None
        if method is None
        else GRPCMethodMatch(
            type=fields.string(method.get("type"), f"{field}.method.type") or "Exact",
            service=fields.string(method.get("service"), f"{field}.method.service") or None,
            method=fields.string(method.get("method"), f"{field}.method.method") or None,
        ),
        headers=decode_value_matches(fields, entry.get("headers"), f"{field}.headers", lower=True),
    )
