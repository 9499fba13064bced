"""Reading the Snapshot's JSON form back (``coxswain route``, ``coxswain proxy --snapshot``).

``snapshot_from_data`` is the inverse of ``snapshot_json.snapshot_to_data``; a document that is
not a snapshot raises ``SnapshotFormatError`` naming the field, so that a proxy keeps serving its
last good snapshot and says why the new one was refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pyrsistent import pmap, pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PVector

from coxswain.compile.scope import Scope, parse_scope
from coxswain.compile.snapshot import (
    INGRESS_ACTION_FIELDS,
    Affinity,
    Backend,
    BackendProtocol,
    Canary,
    Certificate,
    ClientTLS,
    ClientValidation,
    Cors,
    Endpoint,
    ExternalAuth,
    GatewayRule,
    HeaderEdits,
    IngressActions,
    IngressTable,
    ListenerHealth,
    ListenerTable,
    Mirror,
    PathEdit,
    PathMatch,
    PathRule,
    RateLimit,
    Redirect,
    Retry,
    Rewrite,
    RouteAction,
    RouteMatch,
    RouteRef,
    Snapshot,
    SubjectAltName,
    UpstreamTLS,
    ValueMatch,
    VirtualHost,
)

__all__ = ["SnapshotFormatError", "snapshot_from_data"]

_T = TypeVar("_T")
_PROTOCOLS: Final = frozenset(p.value for p in BackendProtocol)


class SnapshotFormatError(ValueError):
    """A JSON document that is not a snapshot; the message names the field."""


def snapshot_from_data(data: object) -> Snapshot:
    """Read the JSON form back.

    Raises:
        SnapshotFormatError: the value is not a snapshot; the message names the field.
    """
    root = _object(data, "snapshot")
    ingress = _object(root.get("ingress"), "ingress")
    hosts = _object(ingress.get("hosts"), "ingress.hosts")
    return Snapshot(
        version=_typed(root.get("version"), str, "version"),
        scope=_scope(root.get("scope")),
        ingress=IngressTable(
            http_port=_typed(ingress.get("http_port"), int, "ingress.http_port"),
            https_port=_typed(ingress.get("https_port"), int, "ingress.https_port"),
            hosts=pmap(
                {
                    host: _vhost(host, _object(value, f"ingress.hosts[{host!r}]"))
                    for host, value in hosts.items()
                }
            ),
        ),
        gateways=pmap(
            {
                _port(port, "gateways"): pmap(
                    {
                        host: _listener(
                            _object(t, f"gateways[{port}][{host!r}]"), f"gateways[{port}][{host!r}]"
                        )
                        for host, t in _object(tables, f"gateways[{port}]").items()
                    }
                )
                for port, tables in _object(root.get("gateways", {}), "gateways").items()
            }
        ),
        client_certs=pmap(
            {
                _port(port, "client_certs"): pmap(
                    {
                        host: _client(
                            _object(c, f"client_certs[{port}][{host!r}]"),
                            f"client_certs[{port}][{host!r}]",
                        )
                        for host, c in _object(by_host, f"client_certs[{port}]").items()
                    }
                )
                for port, by_host in _object(root.get("client_certs", {}), "client_certs").items()
            }
        ),
        listener_health=pvector(
            _health(_object(item, f"listener_health[{i}]"), f"listener_health[{i}]")
            for i, item in enumerate(_list(root.get("listener_health", []), "listener_health"))
        ),
        tls=pmap(
            {
                _port(port, "tls"): pmap(
                    {
                        host: _certificate(
                            _object(cert, f"tls[{port}][{host!r}]"), f"tls[{port}][{host!r}]"
                        )
                        for host, cert in _object(by_host, f"tls[{port}]").items()
                    }
                )
                for port, by_host in _object(root.get("tls", {}), "tls").items()
            }
        ),
        endpoints=pmap(
            {
                key: pvector(
                    _endpoint(_object(item, f"endpoints[{key!r}][{i}]"), f"endpoints[{key!r}][{i}]")
                    for i, item in enumerate(_list(items, f"endpoints[{key!r}]"))
                )
                for key, items in _object(root.get("endpoints", {}), "endpoints").items()
            }
        ),
    )


def _scope(value: object) -> Scope:
    scope = parse_scope(value) if isinstance(value, str) else None
    if scope is None:
        raise SnapshotFormatError(f"scope: expected 'shared' or 'namespace/name', found {value!r}")
    return scope


def _vhost(host: str, data: Mapping[str, Any]) -> VirtualHost:
    where = f"ingress.hosts[{host!r}]"
    default = data.get("default_backend")
    passthrough = data.get("passthrough")
    return VirtualHost(
        host=host,
        paths=pvector(
            _rule(_object(item, f"{where}.paths[{i}]"), f"{where}.paths[{i}]")
            for i, item in enumerate(_list(data.get("paths", []), f"{where}.paths"))
        ),
        default=None
        if default is None
        else _rule(_object(default, f"{where}.default_backend"), f"{where}.default_backend"),
        passthrough=None
        if passthrough is None
        else _rule(_object(passthrough, f"{where}.passthrough"), f"{where}.passthrough"),
    )


def _rule(data: Mapping[str, Any], where: str) -> PathRule:
    match = _typed(data.get("match"), str, f"{where}.match")
    if match not in PathMatch.__members__.values():
        raise SnapshotFormatError(
            f"{where}.match: expected Exact, Prefix or Regex, found {match!r}"
        )
    return PathRule(
        path=_typed(data.get("path"), str, f"{where}.path"),
        match=PathMatch(match),
        backend=_backend(_object(data.get("backend"), f"{where}.backend"), f"{where}.backend"),
        route=_path_route(data.get("route"), f"{where}.route"),
        tls_redirect=_typed(data.get("tls_redirect", False), bool, f"{where}.tls_redirect"),
        actions=_ingress_actions(data.get("actions"), f"{where}.actions"),
        hsts=_typed(data.get("hsts", ""), str, f"{where}.hsts"),
    )


def _path_route(value: object, where: str) -> RouteRef:
    route = _object(value, where)
    return RouteRef(
        kind=_typed(route.get("kind"), str, f"{where}.kind"),
        namespace=_typed(route.get("namespace"), str, f"{where}.namespace"),
        name=_typed(route.get("name"), str, f"{where}.name"),
        rule=_typed(route.get("rule"), str, f"{where}.rule"),
    )


def _canary(value: object, where: str) -> Canary | None:
    if value is None:
        return None
    data = _object(value, where)
    return Canary(
        backend=_backend(_object(data.get("backend"), f"{where}.backend"), f"{where}.backend"),
        route=_path_route(data.get("route"), f"{where}.route"),
        header=_optional(data.get("header"), str, f"{where}.header"),
        header_value=_optional(data.get("header_value"), str, f"{where}.header_value"),
        header_pattern=_optional(data.get("header_pattern"), str, f"{where}.header_pattern"),
        cookie=_optional(data.get("cookie"), str, f"{where}.cookie"),
        weight=_typed(data.get("weight", 0), int, f"{where}.weight"),
        weight_total=_typed(data.get("weight_total", 100), int, f"{where}.weight_total"),
    )


def _ingress_actions(value: object, where: str) -> IngressActions | None:
    if value is None:
        return None
    data = _object(value, where)
    unknown = set(data) - set(INGRESS_ACTION_FIELDS)
    if unknown:
        raise SnapshotFormatError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")

    def text(name: str) -> str | None:
        return _optional(data.get(name), str, f"{where}.{name}")

    return IngressActions(
        app_root=text("app_root"),
        redirect=text("redirect"),
        redirect_status=_typed(data.get("redirect_status", 0), int, f"{where}.redirect_status"),
        host_redirect=text("host_redirect"),
        rewrite_target=text("rewrite_target"),
        x_forwarded_prefix=text("x_forwarded_prefix"),
        upstream_vhost=text("upstream_vhost"),
        denied=text("denied"),
        allow_sources=_strings(data.get("allow_sources", []), f"{where}.allow_sources"),
        deny_sources=_strings(data.get("deny_sources", []), f"{where}.deny_sources"),
        auth_realm=text("auth_realm"),
        auth_users=pvector(
            _pair(item, f"{where}.auth_users[{i}]")
            for i, item in enumerate(_list(data.get("auth_users", []), f"{where}.auth_users"))
        ),
        max_body=_typed(data.get("max_body", 0), int, f"{where}.max_body"),
        connect_timeout=_seconds(data.get("connect_timeout"), f"{where}.connect_timeout") or 0,
        send_timeout=_seconds(data.get("send_timeout"), f"{where}.send_timeout") or 0,
        read_timeout=_seconds(data.get("read_timeout"), f"{where}.read_timeout") or 0,
        next_upstream_tries=_typed(
            data.get("next_upstream_tries", 0), int, f"{where}.next_upstream_tries"
        ),
        next_upstream_codes=pvector(
            _typed(v, int, f"{where}.next_upstream_codes[{i}]")
            for i, v in enumerate(
                _list(data.get("next_upstream_codes", []), f"{where}.next_upstream_codes")
            )
        ),
        next_upstream_timeout=_seconds(
            data.get("next_upstream_timeout"), f"{where}.next_upstream_timeout"
        )
        or 0,
        canary=_canary(data.get("canary"), f"{where}.canary"),
        cors=_cors(data.get("cors"), f"{where}.cors"),
        external_auth=_flat(ExternalAuth, data.get("external_auth"), f"{where}.external_auth"),
        rate_limit=_flat(RateLimit, data.get("rate_limit"), f"{where}.rate_limit"),
        affinity=_flat(Affinity, data.get("affinity"), f"{where}.affinity"),
        client_tls=_flat(ClientTLS, data.get("client_tls"), f"{where}.client_tls"),
    )


def _flat(kind: type[_T], value: object, where: str) -> _T | None:
    """A dataclass of ``IngressActions`` whose fields are text, numbers, flags, optional ones
    of those and lists of text (``ExternalAuth``, ``RateLimit``, ``Affinity``,
    ``ClientTLS``), read by its fields' names and types; absent fields take their defaults."""
    if value is None:
        return None
    data = _object(value, where)
    unknown = set(data) - {f.name for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
    if unknown:
        raise SnapshotFormatError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    read: dict[str, Any] = {}
    for field in dataclasses.fields(kind):  # type: ignore[arg-type]
        if field.name not in data:
            continue
        named, written = f"{where}.{field.name}", data[field.name]
        if field.type == "PVector[str]":
            read[field.name] = _strings(written, named)
        elif str(field.type).endswith(" | None"):
            read[field.name] = _optional(written, _FLAT_TYPES[field.type[:-7]], named)
        else:
            read[field.name] = _typed(written, _FLAT_TYPES[str(field.type)], named)
    return kind(**read)


_FLAT_TYPES: Final[Mapping[str, type]] = {"str": str, "int": int, "bool": bool}


def _strings(value: object, where: str) -> PVector[str]:
    return pvector(_typed(v, str, f"{where}[{i}]") for i, v in enumerate(_list(value, where)))


def _pair(value: object, where: str) -> tuple[str, str]:
    items = _list(value, where)
    if len(items) != 2:
        raise SnapshotFormatError(f"{where}: expected [user, hash]")
    return _typed(items[0], str, f"{where}[0]"), _typed(items[1], str, f"{where}[1]")


def _backend(data: Mapping[str, Any], where: str) -> Backend:
    return Backend(
        namespace=_typed(data.get("namespace"), str, f"{where}.namespace"),
        service=_typed(data.get("service"), str, f"{where}.service"),
        port=_typed(data.get("port"), int, f"{where}.port"),
        weight=_typed(data.get("weight", 1), int, f"{where}.weight"),
        valid=_typed(data.get("valid", True), bool, f"{where}.valid"),
        request_headers=_edits(data.get("request_headers"), f"{where}.request_headers"),
        response_headers=_edits(data.get("response_headers"), f"{where}.response_headers"),
        tls=None if data.get("tls") is None else _upstream_tls(data["tls"], f"{where}.tls"),
        protocol=_protocol(data.get("protocol", "http1"), f"{where}.protocol"),
        proxy_protocol=_typed(data.get("proxy_protocol", False), bool, f"{where}.proxy_protocol"),
        cluster_ip=_typed(data.get("cluster_ip", False), bool, f"{where}.cluster_ip"),
    )


def _protocol(value: object, where: str) -> BackendProtocol:
    """A backend's ``protocol``; absent (a snapshot from before the field) is ``http1``."""
    text = _typed(value, str, where)
    if text not in _PROTOCOLS:
        raise SnapshotFormatError(f"{where}: expected http1 or h2c, found {text!r}")
    return BackendProtocol(text)


def _upstream_tls(value: object, where: str) -> UpstreamTLS:
    data = _object(value, where)
    client = data.get("client_certificate")
    return UpstreamTLS(
        policy=_typed(data.get("policy"), str, f"{where}.policy"),
        server_name=_typed(data.get("server_name"), str, f"{where}.server_name"),
        ca_pem=_optional(data.get("ca_bundle"), str, f"{where}.ca_bundle"),
        subject_alt_names=pvector(
            SubjectAltName(
                type=_typed(n.get("type"), str, f"{where}.subject_alt_names[{i}].type"),
                value=_typed(n.get("value"), str, f"{where}.subject_alt_names[{i}].value"),
            )
            for i, item in enumerate(
                _list(data.get("subject_alt_names", []), f"{where}.subject_alt_names")
            )
            if (n := _object(item, f"{where}.subject_alt_names[{i}]")) is not None
        ),
        client_certificate=None
        if client is None
        else _certificate(
            _object(client, f"{where}.client_certificate"), f"{where}.client_certificate"
        ),
        problem=_optional(data.get("problem"), str, f"{where}.problem"),
        verify=_typed(data.get("verify", True), bool, f"{where}.verify"),
        sni=_typed(data.get("sni", True), bool, f"{where}.sni"),
    )


def _edits(value: object, where: str) -> HeaderEdits | None:
    if value is None:
        return None
    data = _object(value, where)

    def pairs(key: str) -> Any:
        found = []
        for i, item in enumerate(_list(data.get(key, []), f"{where}.{key}")):
            pair = _list(item, f"{where}.{key}[{i}]")
            if len(pair) != 2:
                raise SnapshotFormatError(f"{where}.{key}[{i}]: expected [name, value]")
            found.append(
                (
                    _typed(pair[0], str, f"{where}.{key}[{i}][0]"),
                    _typed(pair[1], str, f"{where}.{key}[{i}][1]"),
                )
            )
        return pvector(found)

    return HeaderEdits(
        set=pairs("set"),
        add=pairs("add"),
        remove=pvector(
            _typed(v, str, f"{where}.remove[{i}]")
            for i, v in enumerate(_list(data.get("remove", []), f"{where}.remove"))
        ),
    )


def _optional(value: object, kind: type[_T], where: str) -> _T | None:
    return None if value is None else _typed(value, kind, where)


def _seconds(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SnapshotFormatError(f"{where}: expected a number, found {type(value).__name__}")
    return float(value)


def _path_edit(value: object, where: str) -> PathEdit | None:
    if value is None:
        return None
    data = _object(value, where)
    return PathEdit(
        type=_typed(data.get("type"), str, f"{where}.type"),
        value=_typed(data.get("value"), str, f"{where}.value"),
    )


def _value_matches(value: object, where: str) -> Any:
    return pvector(
        ValueMatch(
            name=_typed(m.get("name"), str, f"{where}[{i}].name"),
            type=_typed(m.get("type"), str, f"{where}[{i}].type"),
            value=_typed(m.get("value"), str, f"{where}[{i}].value"),
        )
        for i, item in enumerate(_list(value, where))
        for m in (_object(item, f"{where}[{i}]"),)
    )


def _gateway_rule(data: Mapping[str, Any], where: str) -> GatewayRule:
    match = _object(data.get("match"), f"{where}.match")
    route = _object(data.get("route"), f"{where}.route")
    redirect = data.get("redirect")
    rewrite = data.get("rewrite")
    timeouts = _object(data.get("timeouts", {}), f"{where}.timeouts")
    return GatewayRule(
        match=RouteMatch(
            path_type=_typed(match.get("path_type"), str, f"{where}.match.path_type"),
            path=_typed(match.get("path"), str, f"{where}.match.path"),
            headers=_value_matches(match.get("headers", []), f"{where}.match.headers"),
            query=_value_matches(match.get("query", []), f"{where}.match.query"),
            method=_optional(match.get("method"), str, f"{where}.match.method"),
        ),
        action=RouteAction(
            route=RouteRef(
                kind=_typed(route.get("kind"), str, f"{where}.route.kind"),
                namespace=_typed(route.get("namespace"), str, f"{where}.route.namespace"),
                name=_typed(route.get("name"), str, f"{where}.route.name"),
                rule=_typed(route.get("rule"), str, f"{where}.route.rule"),
            ),
            backends=pvector(
                _backend(_object(b, f"{where}.backends[{i}]"), f"{where}.backends[{i}]")
                for i, b in enumerate(_list(data.get("backends", []), f"{where}.backends"))
            ),
            request_headers=_edits(data.get("request_headers"), f"{where}.request_headers"),
            response_headers=_edits(data.get("response_headers"), f"{where}.response_headers"),
            redirect=None
            if redirect is None
            else _redirect(_object(redirect, f"{where}.redirect"), f"{where}.redirect"),
            rewrite=None
            if rewrite is None
            else Rewrite(
                hostname=_optional(
                    _object(rewrite, f"{where}.rewrite").get("hostname"),
                    str,
                    f"{where}.rewrite.hostname",
                ),
                path=_path_edit(
                    _object(rewrite, f"{where}.rewrite").get("path"), f"{where}.rewrite.path"
                ),
            ),
            mirrors=pvector(
                Mirror(
                    backend=_backend(
                        _object(m.get("backend"), f"{where}.mirrors[{i}].backend"),
                        f"{where}.mirrors[{i}].backend",
                    ),
                    percent=_seconds(m.get("percent", 100), f"{where}.mirrors[{i}].percent") or 0.0,
                )
                for i, item in enumerate(_list(data.get("mirrors", []), f"{where}.mirrors"))
                for m in (_object(item, f"{where}.mirrors[{i}]"),)
            ),
            request_timeout=_seconds(timeouts.get("request"), f"{where}.timeouts.request"),
            backend_timeout=_seconds(
                timeouts.get("backend_request"), f"{where}.timeouts.backend_request"
            ),
            cors=_cors(data.get("cors"), f"{where}.cors"),
            retry=_retry(data.get("retry"), f"{where}.retry"),
            problem=_optional(data.get("problem"), str, f"{where}.problem"),
            grpc=_typed(data.get("grpc", False), bool, f"{where}.grpc"),
        ),
    )


def _retry(value: object, where: str) -> Retry | None:
    if value is None:
        return None
    data = _object(value, where)
    codes = _list(data.get("codes", []), f"{where}.codes")
    return Retry(
        codes=pvector(_typed(c, int, f"{where}.codes[{i}]") for i, c in enumerate(codes)),
        attempts=_typed(data.get("attempts", 2), int, f"{where}.attempts"),
        backoff=_seconds(data.get("backoff", 0.025), f"{where}.backoff") or 0.0,
    )


def _cors(value: object, where: str) -> Cors | None:
    if value is None:
        return None
    data = _object(value, where)

    def strings(key: str) -> Any:
        items = _list(data.get(key, []), f"{where}.{key}")
        return pvector(_typed(item, str, f"{where}.{key}[{i}]") for i, item in enumerate(items))

    return Cors(
        allow_origins=strings("allow_origins"),
        allow_methods=strings("allow_methods"),
        allow_headers=strings("allow_headers"),
        expose_headers=strings("expose_headers"),
        allow_credentials=_typed(
            data.get("allow_credentials", False), bool, f"{where}.allow_credentials"
        ),
        max_age=_typed(data.get("max_age", 5), int, f"{where}.max_age"),
    )


def _redirect(data: Mapping[str, Any], where: str) -> Redirect:
    return Redirect(
        status=_typed(data.get("status"), int, f"{where}.status"),
        scheme=_optional(data.get("scheme"), str, f"{where}.scheme"),
        hostname=_optional(data.get("hostname"), str, f"{where}.hostname"),
        port=_optional(data.get("port"), int, f"{where}.port"),
        path=_path_edit(data.get("path"), f"{where}.path"),
    )


def _listener(data: Mapping[str, Any], where: str) -> ListenerTable:
    hosts = _object(data.get("hosts", {}), f"{where}.hosts")
    return ListenerTable(
        gateway=_typed(data.get("gateway"), str, f"{where}.gateway"),
        listener=_typed(data.get("listener"), str, f"{where}.listener"),
        port=_typed(data.get("port"), int, f"{where}.port"),
        protocol=_typed(data.get("protocol"), str, f"{where}.protocol"),
        hostname=_typed(data.get("hostname"), str, f"{where}.hostname"),
        hosts=pmap(
            {
                host: pvector(
                    _gateway_rule(
                        _object(r, f"{where}.hosts[{host!r}][{i}]"), f"{where}.hosts[{host!r}][{i}]"
                    )
                    for i, r in enumerate(_list(rules, f"{where}.hosts[{host!r}]"))
                )
                for host, rules in hosts.items()
            }
        ),
    )


def _client(data: Mapping[str, Any], where: str) -> ClientValidation:
    return ClientValidation(
        ca_pem=_typed(data.get("ca_bundle"), str, f"{where}.ca_bundle"),
        mode=_typed(data.get("mode"), str, f"{where}.mode"),
    )


def _health(data: Mapping[str, Any], where: str) -> ListenerHealth:
    return ListenerHealth(
        gateway=_typed(data.get("gateway"), str, f"{where}.gateway"),
        listener=_typed(data.get("listener"), str, f"{where}.listener"),
        port=_typed(data.get("port"), int, f"{where}.port"),
        target_port=_typed(data.get("target_port"), int, f"{where}.target_port"),
        protocol=_typed(data.get("protocol"), str, f"{where}.protocol"),
        hostname=_optional(data.get("hostname"), str, f"{where}.hostname"),
        attached_routes=_typed(data.get("attached_routes"), int, f"{where}.attached_routes"),
        ready=_typed(data.get("ready"), bool, f"{where}.ready"),
        reason=_typed(data.get("reason"), str, f"{where}.reason"),
    )


def _certificate(data: Mapping[str, Any], where: str) -> Certificate:
    return Certificate(
        chain_pem=_typed(data.get("cert_chain"), str, f"{where}.cert_chain"),
        key_pem=_typed(data.get("private_key"), str, f"{where}.private_key"),
        secret=_typed(data.get("secret", ""), str, f"{where}.secret"),
    )


def _endpoint(data: Mapping[str, Any], where: str) -> Endpoint:
    return Endpoint(
        address=_typed(data.get("address"), str, f"{where}.address"),
        port=_typed(data.get("port"), int, f"{where}.port"),
    )


def _port(text: str, where: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise SnapshotFormatError(f"{where}: {text!r} is not a port number")
    return int(text)


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SnapshotFormatError(f"{where}: expected an object, found {type(value).__name__}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise SnapshotFormatError(f"{where}: expected a list, found {type(value).__name__}")
    return value


def _typed(value: object, kind: type[_T], where: str) -> _T:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SnapshotFormatError(
            f"{where}: expected {kind.__name__}, found {type(value).__name__}"
        )
    return value
