"""Raw GatewayClass, Gateway, ListenerSet, ReferenceGrant and ConfigMap bodies → typed objects.
Total.

gateway.networking.k8s.io v1 and v1beta1 (HTTPRoute has its own module). Field defaults are the
CRDs' (v1.6.1 standard channel); anything the schema would refuse is reported on the object by
field path, and what can still be used is kept.
"""

from __future__ import annotations

import re
from sys import intern
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap, pvector

from coxswain.compile.hostnames import ascii_lower
from coxswain.compile.model.gateway_objects import (
    GATEWAY_GROUP,
    AllowedListeners,
    AllowedRoutes,
    ConfigMap,
    FrontendValidation,
    Gateway,
    GatewayClass,
    LabelSelector,
    Listener,
    ListenerSet,
    ObjectRef,
    ReferenceGrant,
    SelectorRequirement,
)
from coxswain.compile.tls import parse_ca_bundle

if TYPE_CHECKING:
    from collections.abc import Mapping

    from coxswain.compile.model.fields import FieldReader
    from coxswain.compile.model.objects import Meta

__all__ = [
    "decode_config_map",
    "decode_gateway",
    "decode_gateway_class",
    "decode_listener_set",
    "decode_reference_grant",
    "object_ref",
    "parse_duration",
    "port_number",
]

_PORT_MAX: Final = 65535
_DURATION: Final = re.compile(r"([0-9]{1,5})(h|ms|m|s)")
_DURATION_WHOLE: Final = re.compile(r"([0-9]{1,5}(h|ms|m|s)){1,4}")
_UNIT_SECONDS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_SELECTOR_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_LISTENER_SET_MAX: Final = 64  # ListenerSetSpec.listeners: MaxItems=64


def parse_duration(text: str) -> float | None:
    """A Gateway API ``Duration`` (GEP-2257: ``1h30m``, ``500ms``) in seconds, or None."""
    if _DURATION_WHOLE.fullmatch(text) is None:
        return None
    return sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(text))


# --- references ---------------------------------------------------------------------------------


def object_ref(
    fields: FieldReader, raw: object, field: str, *, group: str, kind: str
) -> ObjectRef | None:
    """A reference as written (``group``/``kind`` defaulted), or None without a name."""
    ref = fields.mapping(raw, field)
    if ref is None:
        return None
    name = fields.string(ref.get("name"), f"{field}.name")
    if not name:
        fields.require(ref.get("name"), f"{field}.name", "the reference has no name; ignored")
        return None
    return ObjectRef(
        group=fields.string(ref.get("group"), f"{field}.group") or group,
        kind=fields.string(ref.get("kind"), f"{field}.kind") or kind,
        name=name,
        namespace=fields.string(ref.get("namespace"), f"{field}.namespace") or None,
        field=intern(field),
    )


def port_number(fields: FieldReader, value: object, field: str) -> int | None:
    """A port number in 1..65535, or None."""
    return fields.integer(value, field, low=1, high=_PORT_MAX)


# --- GatewayClass -------------------------------------------------------------------------------


def decode_gateway_class(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> GatewayClass:
    del raw
    params = spec.get("parametersRef")
    return GatewayClass(
        meta=meta,
        controller_name=fields.string(spec.get("controllerName"), "spec.controllerName") or "",
        parameters_ref=None
        if params is None
        else object_ref(fields, params, "spec.parametersRef", group="", kind=""),
        diagnostics=fields.diagnostics(),
    )


# --- Gateway ------------------------------------------------------------------------------------


def decode_gateway(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> Gateway:
    del raw
    written = spec.get("listeners")
    items = fields.items(written, "spec.listeners")
    if not items and (written is None or isinstance(written, list | tuple)):  # not a type error
        fields.problem("spec.listeners", "InvalidField", "a Gateway needs at least one listener")
    listeners = [
        listener
        for index, item in enumerate(items)
        if (listener := _listener(fields, item, f"spec.listeners[{index}]")) is not None
    ]
    addresses: list[tuple[str, str]] = []
    for index, item in enumerate(fields.items(spec.get("addresses"), "spec.addresses")):
        entry = fields.mapping(item, f"spec.addresses[{index}]") or {}
        kind = fields.string(entry.get("type"), f"spec.addresses[{index}].type") or "IPAddress"
        value = fields.string(entry.get("value"), f"spec.addresses[{index}].value") or ""
        addresses.append((kind, value))
    infrastructure = fields.mapping(spec.get("infrastructure"), "spec.infrastructure") or {}
    params = infrastructure.get("parametersRef")
    tls = fields.mapping(spec.get("tls"), "spec.tls") or {}
    frontend = fields.mapping(tls.get("frontend"), "spec.tls.frontend") or {}
    backend = fields.mapping(tls.get("backend"), "spec.tls.backend") or {}
    default = fields.mapping(frontend.get("default"), "spec.tls.frontend.default")
    per_port: dict[int, FrontendValidation] = {}
    for index, item in enumerate(
        fields.items(frontend.get("perPort"), "spec.tls.frontend.perPort")
    ):
        field = f"spec.tls.frontend.perPort[{index}]"
        entry = fields.mapping(item, field) or {}
        port = port_number(fields, entry.get("port"), f"{field}.port")
        validation = _frontend(fields, entry.get("tls"), f"{field}.tls")
        if port is not None and validation is not None:
            per_port.setdefault(port, validation)
    return Gateway(
        meta=meta,
        class_name=fields.string(spec.get("gatewayClassName"), "spec.gatewayClassName") or "",
        listeners=pvector(listeners),
        addresses=pvector(addresses),
        frontend_default=None
        if default is None
        else _frontend(fields, default, "spec.tls.frontend.default"),
        frontend_per_port=pmap(per_port),
        backend_client_certificate=object_ref(
            fields,
            backend.get("clientCertificateRef"),
            "spec.tls.backend.clientCertificateRef",
            group="",
            kind="Secret",
        ),
        infrastructure_labels=fields.string_map(
            infrastructure.get("labels"), "spec.infrastructure.labels"
        ),
        infrastructure_annotations=fields.string_map(
            infrastructure.get("annotations"), "spec.infrastructure.annotations"
        ),
        parameters_ref=None
        if params is None
        else object_ref(fields, params, "spec.infrastructure.parametersRef", group="", kind=""),
        allowed_listeners=_allowed_listeners(fields, spec.get("allowedListeners")),
        diagnostics=fields.diagnostics(),
    )


def _allowed_listeners(fields: FieldReader, raw: object) -> AllowedListeners:
    """``spec.allowedListeners``: ``namespaces.from`` defaults to ``None`` (GEP-1713: "By
    default a Gateway MUST NOT allow ListenerSets to be attached")."""
    field = "spec.allowedListeners"
    entry = fields.mapping(raw, field) or {}
    origin, selector = _namespaces_from(fields, entry, field, default="None")
    return AllowedListeners(namespaces_from=origin, selector=selector)


def _namespaces_from(
    fields: FieldReader, entry: Mapping[str, Any], field: str, *, default: str
) -> tuple[str, LabelSelector | None]:
    """``namespaces.from`` (``default`` when unset) and, for ``Selector``, its selector: the
    same shape in ``allowedRoutes`` and ``allowedListeners``."""
    namespaces = fields.mapping(entry.get("namespaces"), f"{field}.namespaces") or {}
    origin = fields.string(namespaces.get("from"), f"{field}.namespaces.from") or default
    if origin != "Selector":
        return origin, None
    return origin, _selector(fields, namespaces.get("selector"), f"{field}.namespaces.selector")


# --- ListenerSet --------------------------------------------------------------------------------


def decode_listener_set(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> ListenerSet:
    """A ListenerSet (gateway.networking.k8s.io/v1, GEP-1713). As the CRD bounds them, at most
    64 listeners are read and a listener name is kept once (the first): a status lists its
    listeners by name, so the name is the listener's key within its ListenerSet."""
    del raw
    written = spec.get("listeners")
    items = fields.items(written, "spec.listeners")
    if not items and (written is None or isinstance(written, list | tuple)):  # not a type error
        fields.problem(
            "spec.listeners", "InvalidField", "a ListenerSet needs at least one listener"
        )
    if len(items) > _LISTENER_SET_MAX:
        fields.problem(
            "spec.listeners",
            "InvalidField",
            f"{len(items)} listeners, more than {_LISTENER_SET_MAX}; those past the "
            f"{_LISTENER_SET_MAX}th are ignored",
        )
    listeners: dict[str, Listener] = {}
    for index, item in enumerate(items[:_LISTENER_SET_MAX]):
        listener = _listener(fields, item, f"spec.listeners[{index}]")
        if listener is None:
            continue
        if listener.name in listeners:
            fields.problem(
                f"spec.listeners[{index}].name",
                "InvalidField",
                f"listener name {listener.name!r} is used twice; this listener is ignored",
            )
            continue
        listeners[listener.name] = listener
    return ListenerSet(
        meta=meta,
        parent=object_ref(
            fields, spec.get("parentRef"), "spec.parentRef", group=GATEWAY_GROUP, kind="Gateway"
        ),
        listeners=pvector(listeners.values()),
        diagnostics=fields.diagnostics(),
    )


def _frontend(fields: FieldReader, raw: object, field: str) -> FrontendValidation | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    validation = fields.mapping(entry.get("validation"), f"{field}.validation")
    if validation is None:
        return None
    where = f"{field}.validation"
    refs = [
        ref
        for i, item in enumerate(
            fields.items(validation.get("caCertificateRefs"), f"{where}.caCertificateRefs")
        )
        if (
            ref := object_ref(
                fields, item, f"{where}.caCertificateRefs[{i}]", group="", kind="ConfigMap"
            )
        )
        is not None
    ]
    mode = fields.string(validation.get("mode"), f"{where}.mode") or "AllowValidOnly"
    return FrontendValidation(field=where, ca_refs=pvector(refs), mode=mode)


def _listener(fields: FieldReader, raw: object, field: str) -> Listener | None:
    entry = fields.mapping(raw, field)
    if entry is None:
        return None
    name = fields.string(entry.get("name"), f"{field}.name")
    port = port_number(fields, entry.get("port"), f"{field}.port")
    protocol = fields.string(entry.get("protocol"), f"{field}.protocol")
    if not name or port is None or not protocol:
        for part in ("name", "port", "protocol"):
            fields.require(
                entry.get(part), f"{field}.{part}", f"a listener needs a {part}; it is ignored"
            )
        return None
    hostname = fields.string(entry.get("hostname"), f"{field}.hostname")
    tls = fields.mapping(entry.get("tls"), f"{field}.tls")
    refs: list[ObjectRef] = []
    mode: str | None = None
    if tls is not None:
        mode = fields.string(tls.get("mode"), f"{field}.tls.mode") or "Terminate"
        for i, item in enumerate(
            fields.items(tls.get("certificateRefs"), f"{field}.tls.certificateRefs")
        ):
            ref = object_ref(
                fields, item, f"{field}.tls.certificateRefs[{i}]", group="", kind="Secret"
            )
            if ref is not None:
                refs.append(ref)
    return Listener(
        field=intern(field),
        name=name,
        port=port,
        protocol=protocol,
        hostname=ascii_lower(hostname) if hostname else None,
        tls_mode=mode,
        certificate_refs=pvector(refs),
        allowed_routes=_allowed_routes(
            fields, entry.get("allowedRoutes"), f"{field}.allowedRoutes"
        ),
    )


def _allowed_routes(fields: FieldReader, raw: object, field: str) -> AllowedRoutes:
    entry = fields.mapping(raw, field) or {}
    origin, selector = _namespaces_from(fields, entry, field, default="Same")
    kinds: list[tuple[str, str]] | None = None
    if entry.get("kinds") is not None:
        kinds = []
        for i, item in enumerate(fields.items(entry.get("kinds"), f"{field}.kinds")):
            kind_entry = fields.mapping(item, f"{field}.kinds[{i}]") or {}
            group = fields.string(kind_entry.get("group"), f"{field}.kinds[{i}].group")
            kind = fields.string(kind_entry.get("kind"), f"{field}.kinds[{i}].kind") or ""
            kinds.append((GATEWAY_GROUP if group is None else group, kind))
    return AllowedRoutes(
        namespaces_from=origin,
        selector=selector,
        kinds=None if kinds is None else pvector(kinds),
    )


def _selector(fields: FieldReader, raw: object, field: str) -> LabelSelector:
    entry = fields.mapping(raw, field)
    if entry is None:
        return LabelSelector(problem="namespaces.from is Selector but no selector is given")
    labels = fields.string_map(entry.get("matchLabels"), f"{field}.matchLabels")
    requirements: list[SelectorRequirement] = []
    problem: str | None = None
    for i, item in enumerate(
        fields.items(entry.get("matchExpressions"), f"{field}.matchExpressions")
    ):
        where = f"{field}.matchExpressions[{i}]"
        req = fields.mapping(item, where) or {}
        key = fields.string(req.get("key"), f"{where}.key") or ""
        operator = fields.string(req.get("operator"), f"{where}.operator") or ""
        values = [
            v
            for j, v in enumerate(fields.items(req.get("values"), f"{where}.values"))
            if fields.string(v, f"{where}.values[{j}]") is not None
        ]
        if operator not in _SELECTOR_OPERATORS or not key:
            problem = f"{where}: operator {operator!r} on key {key!r} is not valid"
        elif (operator in ("In", "NotIn")) != bool(values):
            problem = f"{where}: {operator} needs values for In/NotIn and none otherwise"
        requirements.append(SelectorRequirement(key=key, operator=operator, values=pvector(values)))
    return LabelSelector(
        match_labels=labels, match_expressions=pvector(requirements), problem=problem
    )


# --- ReferenceGrant and ConfigMap ----------------------------------------------------------------


def decode_reference_grant(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> ReferenceGrant:
    del raw
    sources: list[tuple[str, str, str]] = []
    for i, item in enumerate(fields.items(spec.get("from"), "spec.from")):
        entry = fields.mapping(item, f"spec.from[{i}]") or {}
        group = fields.string(entry.get("group"), f"spec.from[{i}].group")
        kind = fields.string(entry.get("kind"), f"spec.from[{i}].kind")
        namespace = fields.string(entry.get("namespace"), f"spec.from[{i}].namespace")
        if group is not None and kind and namespace:
            sources.append((group, kind, namespace))
    targets: list[tuple[str, str, str | None]] = []
    for i, item in enumerate(fields.items(spec.get("to"), "spec.to")):
        entry = fields.mapping(item, f"spec.to[{i}]") or {}
        group = fields.string(entry.get("group"), f"spec.to[{i}].group")
        kind = fields.string(entry.get("kind"), f"spec.to[{i}].kind")
        name = fields.string(entry.get("name"), f"spec.to[{i}].name") or None
        if group is not None and kind:
            targets.append((group, kind, name))
    return ReferenceGrant(
        meta=meta,
        sources=pvector(sources),
        targets=pvector(targets),
        diagnostics=fields.diagnostics(),
    )


def decode_config_map(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> ConfigMap:
    del spec
    data = fields.mapping(raw.get("data"), "data") or {}
    bundle = fields.string(data.get("ca.crt"), "data['ca.crt']")
    if bundle is None:
        return ConfigMap(meta=meta, problem="has no ca.crt key", diagnostics=fields.diagnostics())
    problem = parse_ca_bundle(bundle.encode())
    return ConfigMap(
        meta=meta,
        ca_bundle=bundle if problem is None else None,
        problem=None if problem is None else f"ca.crt {problem}",
        diagnostics=fields.diagnostics(),
    )
