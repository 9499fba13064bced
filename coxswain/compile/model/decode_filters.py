"""Raw route filters → ``HTTPFilter`` values. Total.

One decoder for the filters of HTTPRoute and GRPCRoute, rules and backendRefs alike: GRPCRoute's
``GRPCRouteFilter`` is a subset of ``HTTPRouteFilter`` with the same fields (GEP-1016: the API
"deviates from HTTPRoute where it results in a better UX for gRPC users, while mirroring it in
all other cases"). A filter type a route kind does not support is decoded all the same and
refused by the compiler, which reports it on the route (``UnsupportedValue``).

CRD defaults (v1.6.1): a redirect's status is 302; a CORS filter's ``maxAge`` is 5; a mirror
without ``percent`` or ``fraction`` mirrors every request. Header names are lower-cased (RFC
9110 §5.1: field names are case-insensitive), and so are CORS origins (schemes and hosts are,
RFC 3986 §3.1, §3.2.2).
"""

from __future__ import annotations

from sys import intern
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pvector

from coxswain.compile.model.decode_gateway import object_ref, port_number
from coxswain.compile.model.fields import folded
from coxswain.compile.model.gateway_objects import HTTPFilter
from coxswain.compile.snapshot import Cors, HeaderEdits, PathEdit, Redirect, Rewrite

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader

__all__ = ["INT32_MAX", "decode_filter"]

INT32_MAX: Final = 2**31 - 1


def decode_filter(fields: FieldReader, raw: object, field: str) -> HTTPFilter | None:
    """One filter of a rule or a backendRef; None when it is not an object (reported)."""
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    kind = fields.string(entry.get("type"), f"{field}.type") or ""
    if kind in ("RequestHeaderModifier", "ResponseHeaderModifier"):
        key = kind[0].lower() + kind[1:]  # the field holding the edits: requestHeaderModifier
        edits = _header_modifier(fields, entry.get(key), f"{field}.{key}")
        request = kind == "RequestHeaderModifier"
        return HTTPFilter(
            field=intern(field),
            type=kind,
            request_headers=edits if request else None,
            response_headers=None if request else edits,
        )
    if kind == "RequestRedirect":
        where = f"{field}.requestRedirect"
        redirect = fields.mapping(entry.get("requestRedirect"), where) or {}
        status = fields.integer(
            redirect.get("statusCode"), f"{where}.statusCode", low=100, high=599
        )
        return HTTPFilter(
            field=intern(field),
            type=kind,
            redirect=Redirect(
                scheme=fields.string(redirect.get("scheme"), f"{where}.scheme") or None,
                hostname=folded(fields.string(redirect.get("hostname"), f"{where}.hostname") or "")
                or None,
                port=port_number(fields, redirect.get("port"), f"{where}.port"),
                path=_path_modifier(fields, redirect.get("path"), f"{where}.path"),
                status=302 if status is None else status,
            ),
        )
    if kind == "URLRewrite":
        where = f"{field}.urlRewrite"
        rewrite = fields.mapping(entry.get("urlRewrite"), where) or {}
        return HTTPFilter(
            field=intern(field),
            type=kind,
            rewrite=Rewrite(
                hostname=folded(fields.string(rewrite.get("hostname"), f"{where}.hostname") or "")
                or None,
                path=_path_modifier(fields, rewrite.get("path"), f"{where}.path"),
            ),
        )
    if kind == "CORS":
        return HTTPFilter(
            field=intern(field), type=kind, cors=_cors(fields, entry.get("cors"), field)
        )
    if kind == "RequestMirror":
        where = f"{field}.requestMirror"
        mirror = fields.mapping(entry.get("requestMirror"), where) or {}
        backend = fields.mapping(mirror.get("backendRef"), f"{where}.backendRef") or {}
        return HTTPFilter(
            field=intern(field),
            type=kind,
            mirror=object_ref(fields, backend, f"{where}.backendRef", group="", kind="Service"),
            mirror_port=port_number(fields, backend.get("port"), f"{where}.backendRef.port"),
            mirror_percent=_mirror_percent(fields, mirror, where),
        )
    return HTTPFilter(field=intern(field), type=kind)


def _header_modifier(fields: FieldReader, raw: object, field: str) -> HeaderEdits:
    entry = fields.mapping(raw, field) or {}

    def pairs(key: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for i, item in enumerate(fields.items(entry.get(key), f"{field}.{key}")):
            header = fields.mapping(item, f"{field}.{key}[{i}]") or {}
            name = fields.string(header.get("name"), f"{field}.{key}[{i}].name")
            value = fields.string(header.get("value"), f"{field}.{key}[{i}].value")
            if name and value is not None:
                out.append((folded(name), value))
        return out

    removed = [
        folded(name)
        for i, item in enumerate(fields.items(entry.get("remove"), f"{field}.remove"))
        if (name := fields.string(item, f"{field}.remove[{i}]"))
    ]
    return HeaderEdits(
        set=pvector(pairs("set")), add=pvector(pairs("add")), remove=pvector(removed)
    )


def _path_modifier(fields: FieldReader, raw: object, field: str) -> PathEdit | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    kind = fields.string(entry.get("type"), f"{field}.type") or ""
    key = {"ReplaceFullPath": "replaceFullPath", "ReplacePrefixMatch": "replacePrefixMatch"}.get(
        kind
    )
    value = fields.string(entry.get(key), f"{field}.{key}") if key else None
    return PathEdit(type=kind, value=value if value is not None else "/")


def _cors(fields: FieldReader, raw: object, field: str) -> Cors | None:
    where = f"{field}.cors"
    cors = fields.mapping(raw, where)
    if cors is None:
        return None

    def strings(key: str) -> list[str]:
        return [
            text
            for i, item in enumerate(fields.items(cors.get(key), f"{where}.{key}"))
            if (text := fields.string(item, f"{where}.{key}[{i}]")) is not None
        ]

    max_age = fields.integer(cors.get("maxAge"), f"{where}.maxAge", low=1, high=INT32_MAX)
    return Cors(
        allow_origins=pvector(folded(o) for o in strings("allowOrigins")),
        allow_methods=pvector(strings("allowMethods")),
        allow_headers=pvector(folded(h) for h in strings("allowHeaders")),
        expose_headers=pvector(folded(h) for h in strings("exposeHeaders")),
        allow_credentials=fields.boolean(cors.get("allowCredentials"), f"{where}.allowCredentials")
        or False,
        max_age=5 if max_age is None else max_age,
    )


def _mirror_percent(fields: FieldReader, mirror: Mapping[str, Any], where: str) -> float:
    percent = fields.integer(mirror.get("percent"), f"{where}.percent", low=0, high=100)
    if percent is not None:
        return float(percent)
    fraction = fields.mapping(mirror.get("fraction"), f"{where}.fraction")
    if fraction is None:
        return 100.0
    numerator = fields.integer(
        fraction.get("numerator"), f"{where}.fraction.numerator", low=0, high=2**31
    )
    denominator = fields.integer(
        fraction.get("denominator"), f"{where}.fraction.denominator", low=1, high=2**31
    )
    if numerator is None:
        return 100.0
    denominator = 100 if denominator is None else denominator
    return min(100.0, 100.0 * numerator / denominator)
