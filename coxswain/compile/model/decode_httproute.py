"""Raw HTTPRoute bodies → typed objects (gateway.networking.k8s.io v1, v1beta1). Total.

CRD defaults (v1.6.1): a route without ``rules`` has one rule matching ``PathPrefix /``; a rule
without ``matches`` matches ``PathPrefix /``; header and query matches are ``Exact``; a
backendRef is a core ``Service`` of weight 1; a redirect's status is 302; a CORS filter's
``maxAge`` is 5. A ``retry`` without ``attempts`` tries twice more, without ``backoff`` waits
25 ms (both implementation-specific). Header names are lower-cased (RFC 9110 §5.1: field names are
case-insensitive), and so are CORS origins (schemes and hosts are, RFC 3986 §3.1, §3.2.2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyrsistent import pvector

from coxswain.compile.hostnames import ascii_lower, is_hostname, is_wildcard
from coxswain.compile.model.decode_gateway import object_ref, parse_duration, port_number
from coxswain.compile.model.gateway_objects import (
    GATEWAY_GROUP,
    BackendRef,
    HTTPFilter,
    HTTPRoute,
    HTTPRouteMatch,
    HTTPRouteRule,
    ParentRef,
    ValueMatch,
)
from coxswain.compile.snapshot import Cors, HeaderEdits, PathEdit, Redirect, Retry, Rewrite

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader
    from coxswain.compile.model.objects import Meta

__all__ = ["decode_httproute"]

_INT32_MAX = 2**31 - 1
# HTTPRouteRetry leaves these to the implementation: Envoy Gateway's retries (2) and Envoy's
# base interval (25 ms).
_RETRY_ATTEMPTS = 2
_RETRY_BACKOFF = 0.025


def decode_httproute(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> HTTPRoute:
    del raw
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
        parents.append(
            ParentRef(
                group=_group(fields, entry.get("group"), f"{field}.group", GATEWAY_GROUP),
                kind=fields.string(entry.get("kind"), f"{field}.kind") or "Gateway",
                name=name,
                namespace=fields.string(entry.get("namespace"), f"{field}.namespace") or None,
                section_name=fields.string(entry.get("sectionName"), f"{field}.sectionName")
                or None,
                port=port_number(fields, entry.get("port"), f"{field}.port"),
                field=field,
            )
        )
    hostnames: list[str] = []
    raw_hostnames = fields.items(spec.get("hostnames"), "spec.hostnames")
    for i, item in enumerate(raw_hostnames):
        host = fields.string(item, f"spec.hostnames[{i}]")
        if host is None:
            continue
        host = ascii_lower(host)
        if is_hostname(host) or is_wildcard(host):
            hostnames.append(host)
        else:
            fields.problem(
                f"spec.hostnames[{i}]",
                "InvalidHostname",
                f"{host!r} is not a DNS name or a '*.' wildcard; ignored",
            )
    raw_rules = fields.items(spec.get("rules"), "spec.rules") if "rules" in spec else [{}]
    rules = [_rule(fields, item, f"spec.rules[{i}]") for i, item in enumerate(raw_rules)]
    return HTTPRoute(
        meta=meta,
        parent_refs=pvector(parents),
        hostnames=pvector(hostnames),
        has_hostnames=bool(raw_hostnames),
        rules=pvector(r for r in rules if r is not None),
        diagnostics=fields.diagnostics(),
    )


def _group(fields: FieldReader, value: object, field: str, default: str) -> str:
    group = fields.string(value, field)
    return default if group is None else group


def _rule(fields: FieldReader, raw: object, field: str) -> HTTPRouteRule | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    raw_matches = fields.items(entry.get("matches"), f"{field}.matches") or [{}]
    matches = [
        m
        for i, item in enumerate(raw_matches)
        if (m := _match(fields, item, f"{field}.matches[{i}]")) is not None
    ]
    filters = [
        f
        for i, item in enumerate(fields.items(entry.get("filters"), f"{field}.filters"))
        if (f := _filter(fields, item, f"{field}.filters[{i}]")) is not None
    ]
    backends = [
        b
        for i, item in enumerate(fields.items(entry.get("backendRefs"), f"{field}.backendRefs"))
        if (b := _backend_ref(fields, item, f"{field}.backendRefs[{i}]")) is not None
    ]
    timeouts = fields.mapping(entry.get("timeouts"), f"{field}.timeouts") or {}
    return HTTPRouteRule(
        field=field,
        name=fields.string(entry.get("name"), f"{field}.name") or None,
        matches=pvector(matches),
        filters=pvector(filters),
        backend_refs=pvector(backends),
        request_timeout=_duration(fields, timeouts.get("request"), f"{field}.timeouts.request"),
        backend_timeout=_duration(
            fields, timeouts.get("backendRequest"), f"{field}.timeouts.backendRequest"
        ),
        retry=_retry(fields, entry.get("retry"), f"{field}.retry"),
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
    attempts = fields.integer(retry.get("attempts"), f"{field}.attempts", low=1, high=_INT32_MAX)
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
        field=field,
        path_type=fields.string(path.get("type"), f"{field}.path.type") or "PathPrefix",
        path=fields.string(path.get("value"), f"{field}.path.value") or "/",
        headers=pvector(_value_matches(fields, entry.get("headers"), f"{field}.headers", True)),
        query=pvector(
            _value_matches(fields, entry.get("queryParams"), f"{field}.queryParams", False)
        ),
        method=fields.string(entry.get("method"), f"{field}.method") or None,
    )


def _value_matches(fields: FieldReader, raw: object, field: str, lower: bool) -> list[ValueMatch]:
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
                name=ascii_lower(name) if lower else name,
                type=fields.string(entry.get("type"), f"{field}[{i}].type") or "Exact",
                value=value,
            )
        )
    return found


def _header_modifier(fields: FieldReader, raw: object, field: str) -> HeaderEdits:
    entry = fields.mapping(raw, field) or {}

    def pairs(key: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for i, item in enumerate(fields.items(entry.get(key), f"{field}.{key}")):
            header = fields.mapping(item, f"{field}.{key}[{i}]") or {}
            name = fields.string(header.get("name"), f"{field}.{key}[{i}].name")
            value = fields.string(header.get("value"), f"{field}.{key}[{i}].value")
            if name and value is not None:
                out.append((ascii_lower(name), value))
        return out

    removed = [
        ascii_lower(name)
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


def _filter(fields: FieldReader, raw: object, field: str) -> HTTPFilter | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    kind = fields.string(entry.get("type"), f"{field}.type") or ""
    if kind == "RequestHeaderModifier":
        return HTTPFilter(
            field=field,
            type=kind,
            request_headers=_header_modifier(
                fields, entry.get("requestHeaderModifier"), f"{field}.requestHeaderModifier"
            ),
        )
    if kind == "ResponseHeaderModifier":
        return HTTPFilter(
            field=field,
            type=kind,
            response_headers=_header_modifier(
                fields, entry.get("responseHeaderModifier"), f"{field}.responseHeaderModifier"
            ),
        )
    if kind == "RequestRedirect":
        where = f"{field}.requestRedirect"
        redirect = fields.mapping(entry.get("requestRedirect"), where) or {}
        status = fields.integer(
            redirect.get("statusCode"), f"{where}.statusCode", low=100, high=599
        )
        return HTTPFilter(
            field=field,
            type=kind,
            redirect=Redirect(
                scheme=fields.string(redirect.get("scheme"), f"{where}.scheme") or None,
                hostname=ascii_lower(
                    fields.string(redirect.get("hostname"), f"{where}.hostname") or ""
                )
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
            field=field,
            type=kind,
            rewrite=Rewrite(
                hostname=ascii_lower(
                    fields.string(rewrite.get("hostname"), f"{where}.hostname") or ""
                )
                or None,
                path=_path_modifier(fields, rewrite.get("path"), f"{where}.path"),
            ),
        )
    if kind == "CORS":
        return HTTPFilter(field=field, type=kind, cors=_cors(fields, entry.get("cors"), field))
    if kind == "RequestMirror":
        where = f"{field}.requestMirror"
        mirror = fields.mapping(entry.get("requestMirror"), where) or {}
        backend = fields.mapping(mirror.get("backendRef"), f"{where}.backendRef") or {}
        return HTTPFilter(
            field=field,
            type=kind,
            mirror=object_ref(fields, backend, f"{where}.backendRef", group="", kind="Service"),
            mirror_port=port_number(fields, backend.get("port"), f"{where}.backendRef.port"),
            mirror_percent=_mirror_percent(fields, mirror, where),
        )
    return HTTPFilter(field=field, type=kind)


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

    max_age = fields.integer(cors.get("maxAge"), f"{where}.maxAge", low=1, high=_INT32_MAX)
    return Cors(
        allow_origins=pvector(ascii_lower(o) for o in strings("allowOrigins")),
        allow_methods=pvector(strings("allowMethods")),
        allow_headers=pvector(ascii_lower(h) for h in strings("allowHeaders")),
        expose_headers=pvector(ascii_lower(h) for h in strings("exposeHeaders")),
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


def _backend_ref(fields: FieldReader, raw: object, field: str) -> BackendRef | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    ref = object_ref(fields, entry, field, group="", kind="Service")
    if ref is None:
        return None
    weight = fields.integer(entry.get("weight"), f"{field}.weight", low=0, high=1_000_000)
    filters = [
        f
        for i, item in enumerate(fields.items(entry.get("filters"), f"{field}.filters"))
        if (f := _filter(fields, item, f"{field}.filters[{i}]")) is not None
    ]
    return BackendRef(
        ref=ref,
        port=port_number(fields, entry.get("port"), f"{field}.port"),
        weight=1 if weight is None else weight,
        filters=pvector(filters),
    )
