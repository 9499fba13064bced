"""The parts of a route body that HTTPRoute and GRPCRoute share. Total.

``CommonRouteSpec.parentRefs``, ``hostnames``, header matches and backendRefs are the same
fields in both kinds (GEP-1016 mirrors HTTPRoute wherever gRPC needs nothing else), so they are
read once, here, into the same types. CRD defaults (v1.6.1): a parentRef is a Gateway of
``gateway.networking.k8s.io``; a header match is ``Exact``; a backendRef is a core ``Service``
of weight 1. Header names are lower-cased (RFC 9110 §5.1: field names are case-insensitive).
"""

from __future__ import annotations

from dataclasses import dataclass
from sys import intern
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pyrsistent import pvector

from coxswain.compile.model.decode_filters import decode_filter
from coxswain.compile.model.decode_gateway import object_ref, port_number
from coxswain.compile.model.fields import folded
from coxswain.compile.model.gateway_objects import (
    GATEWAY_GROUP,
    BackendRef,
    HTTPFilter,
    ParentRef,
    ValueMatch,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyrsistent.typing import PVector

    from coxswain.compile.model.fields import FieldReader

_Match = TypeVar("_Match")

__all__ = [
    "RuleParts",
    "decode_hostnames",
    "decode_parent_refs",
    "decode_rule_parts",
    "decode_value_matches",
]


def decode_parent_refs(fields: FieldReader, spec: Mapping[str, Any]) -> PVector[ParentRef]:
    """``spec.parentRefs``; an entry without a name is reported and ignored."""
    parents: list[ParentRef] = []
    for i, item in enumerate(fields.items(spec.get("parentRefs"), "spec.parentRefs")):
        field = f"spec.parentRefs[{i}]"
        entry = fields.mapping(item, field)
        if entry is None:
            fields.require(item, field, "a parentRef needs a name; ignored")
            continue
        name = fields.string(entry.get("name"), f"{field}.name")
        if not name:
            fields.require(entry.get("name"), f"{field}.name", "a parentRef needs a name; ignored")
            continue
        group = fields.string(entry.get("group"), f"{field}.group")
        parents.append(
            ParentRef(
                group=GATEWAY_GROUP if group is None else group,
                kind=fields.string(entry.get("kind"), f"{field}.kind") or "Gateway",
                name=name,
                namespace=fields.string(entry.get("namespace"), f"{field}.namespace") or None,
                section_name=fields.string(entry.get("sectionName"), f"{field}.sectionName")
                or None,
                port=port_number(fields, entry.get("port"), f"{field}.port"),
                field=intern(field),
            )
        )
    return pvector(parents)


def decode_hostnames(fields: FieldReader, spec: Mapping[str, Any]) -> tuple[PVector[str], bool]:
    """``spec.hostnames`` lower-cased, the invalid ones reported and dropped; and whether the
    field held anything (a route whose every hostname is invalid matches no host)."""
    raw = fields.items(spec.get("hostnames"), "spec.hostnames")
    return pvector(fields.hostnames(raw, "spec.hostnames")), bool(raw)


def decode_value_matches(
    fields: FieldReader, raw: object, field: str, *, lower: bool
) -> tuple[ValueMatch, ...]:
    """Header (``lower``: names lower-cased) or query parameter matches; an entry without a
    name or a value is reported and ignored."""
    found: list[ValueMatch] = []
    for i, item in enumerate(fields.items(raw, field)):
        entry = fields.mapping(item, f"{field}[{i}]") or {}
        name = fields.string(entry.get("name"), f"{field}[{i}].name")
        value = fields.string(entry.get("value"), f"{field}[{i}].value")
        if not name or value is None:
            fields.require(entry.get("name"), f"{field}[{i}].name", "a match needs a name; ignored")
            if entry.get("value") is None:  # "" is a value
                fields.problem(
                    f"{field}[{i}].value", "InvalidField", "a match needs a value; ignored"
                )
            continue
        found.append(
            ValueMatch(
                name=folded(name) if lower else name,
                type=fields.string(entry.get("type"), f"{field}[{i}].type") or "Exact",
                value=value,
            )
        )
    return tuple(found)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleParts(Generic[_Match]):
    """What every route kind's rule holds: ``name``, ``matches`` (one match of no condition
    when the rule has none: the kinds' defaults both match every request), ``filters``,
    ``backendRefs``; and the rule's body, for the fields of one kind."""

    body: Mapping[str, Any]
    name: str | None
    matches: tuple[_Match, ...]
    filters: tuple[HTTPFilter, ...]
    backend_refs: tuple[BackendRef, ...]


def decode_rule_parts(
    fields: FieldReader,
    raw: object,
    field: str,
    match: Callable[[FieldReader, object, str], _Match | None],
) -> RuleParts[_Match] | None:
    """The shared parts of one rule, its matches read by ``match``; None when it is not an
    object (reported)."""
    body = fields.mapping(raw, field)
    if body is None:
        return None
    raw_matches = fields.items(body.get("matches"), f"{field}.matches") or [{}]
    matches = [
        m
        for i, item in enumerate(raw_matches)
        if (m := match(fields, item, f"{field}.matches[{i}]")) is not None
    ]
    filters = _filters(fields, body.get("filters"), f"{field}.filters")
    backends = [
        b
        for i, item in enumerate(fields.items(body.get("backendRefs"), f"{field}.backendRefs"))
        if (b := _backend_ref(fields, item, f"{field}.backendRefs[{i}]")) is not None
    ]
    return RuleParts(
        body=body,
        name=fields.string(body.get("name"), f"{field}.name") or None,
        matches=tuple(matches),
        filters=tuple(filters),
        backend_refs=tuple(backends),
    )


def _backend_ref(fields: FieldReader, raw: object, field: str) -> BackendRef | None:
    """One backendRef with its weight and its own filters; None when it names nothing."""
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    ref = object_ref(fields, entry, field, group="", kind="Service")
    if ref is None:
        return None
    weight = fields.integer(entry.get("weight"), f"{field}.weight", low=0, high=1_000_000)
    filters = _filters(fields, entry.get("filters"), f"{field}.filters")
    return BackendRef(
        ref=ref,
        port=port_number(fields, entry.get("port"), f"{field}.port"),
        weight=1 if weight is None else weight,
        filters=tuple(filters),
    )


def _filters(fields: FieldReader, raw: object, field: str) -> list[HTTPFilter]:
    return [
        f
        for i, item in enumerate(fields.items(raw, field))
        if (f := decode_filter(fields, item, f"{field}[{i}]")) is not None
    ]
