"""Decoding of Ingress and IngressClass bodies (``networking.k8s.io/v1``) into the compiler's
objects (``model.objects``); ``model.decode`` dispatches to them. Pure and total: a bad field is
a diagnostic on the object, never an exception (docs/architecture.md, "Rules of the core")."""

from __future__ import annotations

from sys import intern
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pvector

from coxswain.compile.hostnames import ascii_lower, is_hostname, is_wildcard
from coxswain.compile.model.objects import (
    Ingress,
    IngressBackend,
    IngressClass,
    IngressPath,
    IngressRule,
    IngressTLS,
    Meta,
    ServiceBackendRef,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader

__all__ = [
    "DEFAULT_CLASS_ANNOTATION",
    "LEGACY_CLASS_ANNOTATION",
    "PATH_TYPES",
    "decode_ingress",
    "decode_ingress_class",
]

LEGACY_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"
PATH_TYPES: Final = frozenset({"Exact", "Prefix", "ImplementationSpecific"})
_PORT_MAX: Final = 65535


def decode_ingress(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> Ingress:
    del raw
    default = spec.get("defaultBackend")
    raw_rules = fields.items(spec.get("rules"), "spec.rules")
    rules = [
        rule
        for index, item in enumerate(raw_rules)
        if (rule := _ingress_rule(fields, item, f"spec.rules[{index}]")) is not None
    ]
    tls = [
        entry
        for index, item in enumerate(fields.items(spec.get("tls"), "spec.tls"))
        if (entry := _ingress_tls(fields, item, f"spec.tls[{index}]")) is not None
    ]
    return Ingress(
        meta=meta,
        class_name=fields.string(spec.get("ingressClassName"), "spec.ingressClassName") or None,
        legacy_class=meta.annotations.get(LEGACY_CLASS_ANNOTATION) or None,
        default_backend=(
            None if default is None else _ingress_backend(fields, default, "spec.defaultBackend")
        ),
        rules=pvector(rules),
        has_rules=bool(raw_rules),
        tls=pvector(tls),
        diagnostics=fields.diagnostics(),
    )


def _ingress_rule(fields: FieldReader, raw: object, field: str) -> IngressRule | None:
    rule = fields.mapping(raw, field)
    if rule is None:
        return None
    host = fields.string(rule.get("host"), f"{field}.host")
    if host is None and rule.get("host") is not None:
        return None  # reported as a wrong type; serving it on every host would be worse
    if host:
        host = ascii_lower(host)
        if not (is_hostname(host) or is_wildcard(host)):
            fields.problem(
                f"{field}.host",
                "InvalidHostname",
                f"{host!r} is not a DNS name or a '*.' wildcard; the rule is ignored",
            )
            return None
    http = fields.mapping(rule.get("http"), f"{field}.http") or {}
    paths = [
        path
        for index, item in enumerate(fields.items(http.get("paths"), f"{field}.http.paths"))
        if (path := _ingress_path(fields, item, f"{field}.http.paths[{index}]")) is not None
    ]
    return IngressRule(field=intern(field), host=host or None, paths=pvector(paths))


def _ingress_path(fields: FieldReader, raw: object, field: str) -> IngressPath | None:
    item = fields.mapping(raw, field)
    if item is None:
        return None
    path_type = fields.string(item.get("pathType"), f"{field}.pathType") or "ImplementationSpecific"
    if path_type not in PATH_TYPES:
        fields.problem(
            f"{field}.pathType",
            "UnsupportedPathType",
            f"{path_type!r} is not Exact, Prefix or ImplementationSpecific; the path is ignored",
        )
        return None
    path = fields.string(item.get("path"), f"{field}.path") or "/"
    if not path.startswith("/"):
        fields.problem(
            f"{field}.path", "InvalidPath", f"{path!r} is not an absolute path; the path is ignored"
        )
        return None
    if "?" in path or "#" in path or any(ord(c) < 0x21 or ord(c) == 0x7F for c in path):
        fields.problem(
            f"{field}.path",
            "InvalidPath",
            f"{path!r} holds a query, fragment, space or control character; the path is ignored",
        )
        return None
    backend = _ingress_backend(fields, item.get("backend"), f"{field}.backend")
    if backend is None:
        return None
    return IngressPath(field=intern(field), path=path, path_type=path_type, backend=backend)


def _ingress_backend(fields: FieldReader, raw: object, field: str) -> IngressBackend | None:
    backend = fields.mapping(raw, field)
    if backend is None:
        fields.problem(field, "MissingBackend", "no backend is given; the path is ignored")
        return None
    service = fields.mapping(backend.get("service"), f"{field}.service")
    resource = fields.mapping(backend.get("resource"), f"{field}.resource")
    if service is not None and resource is None:
        ref = _service_backend(fields, service, f"{field}.service")
        return None if ref is None else IngressBackend(field=intern(field), service=ref)
    if resource is not None and service is None:
        kind = fields.string(resource.get("kind"), f"{field}.resource.kind") or "?"
        name = fields.string(resource.get("name"), f"{field}.resource.name") or "?"
        return IngressBackend(field=intern(field), resource=f"{kind}/{name}")
    fields.problem(
        field, "InvalidBackend", "exactly one of service and resource must be set; ignored"
    )
    return None


def _service_backend(
    fields: FieldReader, service: Mapping[str, Any], field: str
) -> ServiceBackendRef | None:
    name = fields.string(service.get("name"), f"{field}.name")
    port = fields.mapping(service.get("port"), f"{field}.port") or {}
    number = fields.integer(port.get("number"), f"{field}.port.number", low=1, high=_PORT_MAX)
    port_name = fields.string(port.get("name"), f"{field}.port.name") or None
    if not name:
        fields.problem(f"{field}.name", "InvalidBackend", "the Service name is missing; ignored")
        return None
    if number is None and port.get("number") is not None:
        return None  # already reported: the number is not a valid port
    if (number is None) == (port_name is None):
        fields.problem(
            f"{field}.port",
            "InvalidBackend",
            "exactly one of port.number and port.name must be set; the path is ignored",
        )
        return None
    return ServiceBackendRef(name=name, port_number=number, port_name=port_name)


def _ingress_tls(fields: FieldReader, raw: object, field: str) -> IngressTLS | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    hosts = fields.hostnames(fields.items(entry.get("hosts"), f"{field}.hosts"), f"{field}.hosts")
    secret = fields.string(entry.get("secretName"), f"{field}.secretName") or None
    return IngressTLS(field=intern(field), hosts=pvector(hosts), secret_name=secret)


def decode_ingress_class(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> IngressClass:
    del raw
    return IngressClass(
        meta=meta,
        controller=fields.string(spec.get("controller"), "spec.controller") or "",
        # Exactly "true", as the DefaultIngressClass admission plugin compares it.
        is_default=meta.annotations.get(DEFAULT_CLASS_ANNOTATION) == "true",
        diagnostics=fields.diagnostics(),
    )
