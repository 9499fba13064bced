"""Raw TLSRoute, TCPRoute and UDPRoute bodies → typed objects (gateway.networking.k8s.io v1).
Total.

The three v1 CRDs (v1.6.1) share one shape: ``parentRefs`` and ``rules[]`` of ``name`` and
``backendRefs`` (a core Service of weight 1 by default); TLSRoute adds ``hostnames``, which the
SNI of a ClientHello is matched against. What they share with HTTPRoute (parentRefs,
hostnames, backendRefs) is read by ``decode_route_spec``.
"""

from __future__ import annotations

from sys import intern
from typing import TYPE_CHECKING, Any

from pyrsistent import pvector

from coxswain.compile.model.decode_route_spec import (
    RuleParts,
    decode_hostnames,
    decode_parent_refs,
    decode_rule_parts,
)
from coxswain.compile.model.gateway_objects import StreamRoute, StreamRule

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader
    from coxswain.compile.model.objects import Meta

__all__ = ["decode_stream_route"]


def decode_stream_route(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> StreamRoute:
    del raw
    parents = decode_parent_refs(fields, spec)
    hostnames, has_hostnames = (
        decode_hostnames(fields, spec) if meta.key.kind == "TLSRoute" else (pvector(), False)
    )
    rules = []
    for i, item in enumerate(fields.items(spec.get("rules"), "spec.rules")):
        field = f"spec.rules[{i}]"
        parts: RuleParts[None] | None = decode_rule_parts(fields, item, field, _no_match)
        if parts is not None:
            rules.append(
                StreamRule(field=intern(field), name=parts.name, backend_refs=parts.backend_refs)
            )
    return StreamRoute(
        meta=meta,
        parent_refs=parents,
        hostnames=hostnames,
        has_hostnames=has_hostnames,
        rules=pvector(rules),
        diagnostics=fields.diagnostics(),
    )


def _no_match(fields: FieldReader, raw: object, field: str) -> None:
    """A layer-4 rule has no matches."""
    del fields, raw, field
