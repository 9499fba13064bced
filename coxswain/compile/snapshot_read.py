"""Reading the Snapshot's JSON form back (``coxswain route``, ``coxswain proxy --snapshot``).

``snapshot_from_data`` is the inverse of ``snapshot_json.snapshot_to_data``; a document that is
not a snapshot raises ``SnapshotFormatError`` naming the field, so that a proxy keeps serving its
last good snapshot and says why the new one was refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap, pvector

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
from coxswain.compile.snapshot_values import (
    SnapshotFormatError,
    flat,
    list_at,
    object_at,
    optional,
    pair,
    port_number,
    seconds,
    strings,
    typed,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["SnapshotFormatError", "snapshot_from_data"]

_PROTOCOLS: Final = frozenset(p.value for p in BackendProtocol)


def snapshot_from_data(data: object) -> Snapshot:
    """Read the JSON form back.

    Raises:
        SnapshotFormatError: the value is not a snapshot; the message names the field.
    """
    root = object_at(data, "snapshot")
    ingress = object_at(root.get("ingress"), "ingress")
    hosts = object_at(ingress.get("hosts"), "ingress.hosts")
    return Snapshot(
        version=typed(root.get("version"), str, "version"),
        scope=_scope(root.get("scope")),
        ingress=IngressTable(
            http_port=typed(ingress.get("http_port"), int, "ingress.http_port"),
            https_port=typed(ingress.get("https_port"), int, "ingress.https_port"),
            hosts=pmap(
                {
                    host: _vhost(host, object_at(value, f"ingress.hosts[{host!r}]"))
                    for host, value in hosts.items()
                }
            ),
        ),
        gateways=pmap(
            {
                port_number(port, "gateways"): pmap(
                    {
                        host: _listener(
                            object_at(t, f"gateways[{port}][{host!r}]"),
                            f"gateways[{port}][{host!r}]",
                        )
                        for host, t in object_at(tables, f"gateways[{port}]").items()
                    }
                )
                for port, tables in object_at(root.get("gateways", {}), "gateways").items()
            }
        ),
        client_certs=pmap(
            {
                port_number(port, "client_certs"): pmap(
                    {
                        host: _client(
                            object_at(c, f"client_certs[{port}][{host!r}]"),
                            f"client_certs[{port}][{host!r}]",
                        )
                        for host, c in object_at(by_host, f"client_certs[{port}]").items()
                    }
                )
                for port, by_host in object_at(root.get("client_certs", {}), "client_certs").items()
            }
        ),
        listener_health=pvector(
            _health(object_at(item, f"listener_health[{i}]"), f"listener_health[{i}]")
            for i, item in enumerate(list_at(root.get("listener_health", []), "listener_health"))
        ),
        tls=pmap(
            {
                port_number(port, "tls"): pmap(
                    {
                        host: _certificate(
                            object_at(cert, f"tls[{port}][{host!r}]"), f"tls[{port}][{host!r}]"
                        )
                        for host, cert in object_at(by_host, f"tls[{port}]").items()
                    }
                )
                for port, by_host in object_at(root.get("tls", {}), "tls").items()
            }
        ),
        endpoints=pmap(
            {
                key: pvector(
                    _endpoint(
                        object_at(item, f"endpoints[{key!r}][{i}]"), f"endpoints[{key!r}][{i}]"
                    )
                    for i, item in enumerate(list_at(items, f"endpoints[{key!r}]"))
                )
                for key, items in object_at(root.get("endpoints", {}), "endpoints").items()
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
            _rule(object_at(item, f"{where}.paths[{i}]"), f"{where}.paths[{i}]")
            for i, item in enumerate(list_at(data.get("paths", []), f"{where}.paths"))
        ),
        default=None
        if default is None
        else _rule(object_at(default, f"{where}.default_backend"), f"{where}.default_backend"),
        passthrough=None
        if passthrough is None
        else _rule(object_at(passthrough, f"{where}.passthrough"), f"{where}.passthrough"),
    )


def _rule(data: Mapping[str, Any], where: str) -> PathRule:
    match = typed(data.get("match"), str, f"{where}.match")
    if match not in PathMatch.__members__.values():
        raise SnapshotFormatError(
            f"{where}.match: expected Exact, Prefix or Regex, found {match!r}"
        )
    return PathRule(
        path=typed(data.get("path"), str, f"{where}.path"),
        match=PathMatch(match),
        backend=_backend(object_at(data.get("backend"), f"{where}.backend"), f"{where}.backend"),
        route=_path_route(data.get("route"), f"{where}.route"),
        tls_redirect=typed(data.get("tls_redirect", False), bool, f"{where}.tls_redirect"),
        actions=_ingress_actions(data.get("actions"), f"{where}.actions"),
        hsts=typed(data.get("hsts", ""), str, f"{where}.hsts"),
    )


def _path_route(value: object, where: str) -> RouteRef:
    route = object_at(value, where)
    return RouteRef(
        kind=typed(route.get("kind"), str, f"{where}.kind"),
        namespace=typed(route.get("namespace"), str, f"{where}.namespace"),
        name=typed(route.get("name"), str, f"{where}.name"),
        rule=typed(route.get("rule"), str, f"{where}.rule"),
    )


def _canary(value: object, where: str) -> Canary | None:
    if value is None:
        return None
    data = object_at(value, where)
    return Canary(
        backend=_backend(object_at(data.get("backend"), f"{where}.backend"), f"{where}.backend"),
        route=_path_route(data.get("route"), f"{where}.route"),
        header=optional(data.get("header"), str, f"{where}.header"),
        header_value=optional(data.get("header_value"), str, f"{where}.header_value"),
        header_pattern=optional(data.get("header_pattern"), str, f"{where}.header_pattern"),
        cookie=optional(data.get("cookie"), str, f"{where}.cookie"),
        weight=typed(data.get("weight", 0), int, f"{where}.weight"),
        weight_total=typed(data.get("weight_total", 100), int, f"{where}.weight_total"),
    )


def _ingress_actions(value: object, where: str) -> IngressActions | None:
    if value is None:
        return None
    data = object_at(value, where)
    unknown = set(data) - set(INGRESS_ACTION_FIELDS)
    if unknown:
        raise SnapshotFormatError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")

    def text(name: str) -> str | None:
        return optional(data.get(name), str, f"{where}.{name}")

    return IngressActions(
        app_root=text("app_root"),
        redirect=text("redirect"),
        redirect_status=typed(data.get("redirect_status", 0), int, f"{where}.redirect_status"),
        host_redirect=text("host_redirect"),
        rewrite_target=text("rewrite_target"),
        x_forwarded_prefix=text("x_forwarded_prefix"),
        upstream_vhost=text("upstream_vhost"),
        denied=text("denied"),
        allow_sources=strings(data.get("allow_sources", []), f"{where}.allow_sources"),
        deny_sources=strings(data.get("deny_sources", []), f"{where}.deny_sources"),
        auth_realm=text("auth_realm"),
        auth_users=pvector(
            pair(item, f"{where}.auth_users[{i}]")
            for i, item in enumerate(list_at(data.get("auth_users", []), f"{where}.auth_users"))
        ),
        max_body=typed(data.get("max_body", 0), int, f"{where}.max_body"),
        connect_timeout=seconds(data.get("connect_timeout"), f"{where}.connect_timeout") or 0,
        send_timeout=seconds(data.get("send_timeout"), f"{where}.send_timeout") or 0,
        read_timeout=seconds(data.get("read_timeout"), f"{where}.read_timeout") or 0,
        next_upstream_tries=typed(
            data.get("next_upstream_tries", 0), int, f"{where}.next_upstream_tries"
        ),
        next_upstream_codes=pvector(
            typed(v, int, f"{where}.next_upstream_codes[{i}]")
            for i, v in enumerate(
                list_at(data.get("next_upstream_codes", []), f"{where}.next_upstream_codes")
            )
        ),
        next_upstream_timeout=seconds(
            data.get("next_upstream_timeout"), f"{where}.next_upstream_timeout"
        )
        or 0,
        canary=_canary(data.get("canary"), f"{where}.canary"),
        cors=_cors(data.get("cors"), f"{where}.cors"),
        external_auth=flat(ExternalAuth, data.get("external_auth"), f"{where}.external_auth"),
        rate_limit=flat(RateLimit, data.get("rate_limit"), f"{where}.rate_limit"),
        affinity=flat(Affinity, data.get("affinity"), f"{where}.affinity"),
        client_tls=flat(ClientTLS, data.get("client_tls"), f"{where}.client_tls"),
    )


def _backend(data: Mapping[str, Any], where: str) -> Backend:
    return Backend(
        namespace=typed(data.get("namespace"), str, f"{where}.namespace"),
        service=typed(data.get("service"), str, f"{where}.service"),
        port=typed(data.get("port"), int, f"{where}.port"),
        weight=typed(data.get("weight", 1), int, f"{where}.weight"),
        valid=typed(data.get("valid", True), bool, f"{where}.valid"),
        request_headers=_edits(data.get("request_headers"), f"{where}.request_headers"),
        response_headers=_edits(data.get("response_headers"), f"{where}.response_headers"),
        tls=None if data.get("tls") is None else _upstream_tls(data["tls"], f"{where}.tls"),
        protocol=_protocol(data.get("protocol", "http1"), f"{where}.protocol"),
        proxy_protocol=typed(data.get("proxy_protocol", False), bool, f"{where}.proxy_protocol"),
        cluster_ip=typed(data.get("cluster_ip", False), bool, f"{where}.cluster_ip"),
    )


def _protocol(value: object, where: str) -> BackendProtocol:
    """A backend's ``protocol``; absent (a snapshot from before the field) is ``http1``."""
    text = typed(value, str, where)
    if text not in _PROTOCOLS:
        raise SnapshotFormatError(f"{where}: expected http1 or h2c, found {text!r}")
    return BackendProtocol(text)


def _upstream_tls(value: object, where: str) -> UpstreamTLS:
    data = object_at(value, where)
    client = data.get("client_certificate")
    return UpstreamTLS(
        policy=typed(data.get("policy"), str, f"{where}.policy"),
        server_name=typed(data.get("server_name"), str, f"{where}.server_name"),
        ca_pem=optional(data.get("ca_bundle"), str, f"{where}.ca_bundle"),
        subject_alt_names=pvector(
            SubjectAltName(
                type=typed(n.get("type"), str, f"{where}.subject_alt_names[{i}].type"),
                value=typed(n.get("value"), str, f"{where}.subject_alt_names[{i}].value"),
            )
            for i, item in enumerate(
                list_at(data.get("subject_alt_names", []), f"{where}.subject_alt_names")
            )
            if (n := object_at(item, f"{where}.subject_alt_names[{i}]")) is not None
        ),
        client_certificate=None
        if client is None
        else _certificate(
            object_at(client, f"{where}.client_certificate"), f"{where}.client_certificate"
        ),
        problem=optional(data.get("problem"), str, f"{where}.problem"),
        verify=typed(data.get("verify", True), bool, f"{where}.verify"),
        sni=typed(data.get("sni", True), bool, f"{where}.sni"),
    )


def _edits(value: object, where: str) -> HeaderEdits | None:
    if value is None:
        return None
    data = object_at(value, where)

    def pairs(key: str) -> Any:
        found = []
        for i, item in enumerate(list_at(data.get(key, []), f"{where}.{key}")):
            pair = list_at(item, f"{where}.{key}[{i}]")
            if len(pair) != 2:
                raise SnapshotFormatError(f"{where}.{key}[{i}]: expected [name, value]")
            found.append(
                (
                    typed(pair[0], str, f"{where}.{key}[{i}][0]"),
                    typed(pair[1], str, f"{where}.{key}[{i}][1]"),
                )
            )
        return pvector(found)

    return HeaderEdits(
        set=pairs("set"),
        add=pairs("add"),
        remove=pvector(
            typed(v, str, f"{where}.remove[{i}]")
            for i, v in enumerate(list_at(data.get("remove", []), f"{where}.remove"))
        ),
    )


def _path_edit(value: object, where: str) -> PathEdit | None:
    if value is None:
        return None
    data = object_at(value, where)
    return PathEdit(
        type=typed(data.get("type"), str, f"{where}.type"),
        value=typed(data.get("value"), str, f"{where}.value"),
    )


def _value_matches(value: object, where: str) -> Any:
    return pvector(
        ValueMatch(
            name=typed(m.get("name"), str, f"{where}[{i}].name"),
            type=typed(m.get("type"), str, f"{where}[{i}].type"),
            value=typed(m.get("value"), str, f"{where}[{i}].value"),
        )
        for i, item in enumerate(list_at(value, where))
        for m in (object_at(item, f"{where}[{i}]"),)
    )


def _gateway_rule(data: Mapping[str, Any], where: str) -> GatewayRule:
    match = object_at(data.get("match"), f"{where}.match")
    route = object_at(data.get("route"), f"{where}.route")
    redirect = data.get("redirect")
    rewrite = data.get("rewrite")
    timeouts = object_at(data.get("timeouts", {}), f"{where}.timeouts")
    return GatewayRule(
        match=RouteMatch(
            path_type=typed(match.get("path_type"), str, f"{where}.match.path_type"),
            path=typed(match.get("path"), str, f"{where}.match.path"),
            headers=_value_matches(match.get("headers", []), f"{where}.match.headers"),
            query=_value_matches(match.get("query", []), f"{where}.match.query"),
            method=optional(match.get("method"), str, f"{where}.match.method"),
        ),
        action=RouteAction(
            route=RouteRef(
                kind=typed(route.get("kind"), str, f"{where}.route.kind"),
                namespace=typed(route.get("namespace"), str, f"{where}.route.namespace"),
                name=typed(route.get("name"), str, f"{where}.route.name"),
                rule=typed(route.get("rule"), str, f"{where}.route.rule"),
            ),
            backends=pvector(
                _backend(object_at(b, f"{where}.backends[{i}]"), f"{where}.backends[{i}]")
                for i, b in enumerate(list_at(data.get("backends", []), f"{where}.backends"))
            ),
            request_headers=_edits(data.get("request_headers"), f"{where}.request_headers"),
            response_headers=_edits(data.get("response_headers"), f"{where}.response_headers"),
            redirect=None
            if redirect is None
            else _redirect(object_at(redirect, f"{where}.redirect"), f"{where}.redirect"),
            rewrite=None
            if rewrite is None
            else Rewrite(
                hostname=optional(
                    object_at(rewrite, f"{where}.rewrite").get("hostname"),
                    str,
                    f"{where}.rewrite.hostname",
                ),
                path=_path_edit(
                    object_at(rewrite, f"{where}.rewrite").get("path"), f"{where}.rewrite.path"
                ),
            ),
            mirrors=pvector(
                Mirror(
                    backend=_backend(
                        object_at(m.get("backend"), f"{where}.mirrors[{i}].backend"),
                        f"{where}.mirrors[{i}].backend",
                    ),
                    percent=seconds(m.get("percent", 100), f"{where}.mirrors[{i}].percent") or 0.0,
                )
                for i, item in enumerate(list_at(data.get("mirrors", []), f"{where}.mirrors"))
                for m in (object_at(item, f"{where}.mirrors[{i}]"),)
            ),
            request_timeout=seconds(timeouts.get("request"), f"{where}.timeouts.request"),
            backend_timeout=seconds(
                timeouts.get("backend_request"), f"{where}.timeouts.backend_request"
            ),
            cors=_cors(data.get("cors"), f"{where}.cors"),
            retry=_retry(data.get("retry"), f"{where}.retry"),
            problem=optional(data.get("problem"), str, f"{where}.problem"),
            grpc=typed(data.get("grpc", False), bool, f"{where}.grpc"),
        ),
    )


def _retry(value: object, where: str) -> Retry | None:
    if value is None:
        return None
    data = object_at(value, where)
    codes = list_at(data.get("codes", []), f"{where}.codes")
    return Retry(
        codes=pvector(typed(c, int, f"{where}.codes[{i}]") for i, c in enumerate(codes)),
        attempts=typed(data.get("attempts", 2), int, f"{where}.attempts"),
        backoff=seconds(data.get("backoff", 0.025), f"{where}.backoff") or 0.0,
    )


def _cors(value: object, where: str) -> Cors | None:
    if value is None:
        return None
    data = object_at(value, where)

    def strings(key: str) -> Any:
        items = list_at(data.get(key, []), f"{where}.{key}")
        return pvector(typed(item, str, f"{where}.{key}[{i}]") for i, item in enumerate(items))

    return Cors(
        allow_origins=strings("allow_origins"),
        allow_methods=strings("allow_methods"),
        allow_headers=strings("allow_headers"),
        expose_headers=strings("expose_headers"),
        allow_credentials=typed(
            data.get("allow_credentials", False), bool, f"{where}.allow_credentials"
        ),
        max_age=typed(data.get("max_age", 5), int, f"{where}.max_age"),
    )


def _redirect(data: Mapping[str, Any], where: str) -> Redirect:
    return Redirect(
        status=typed(data.get("status"), int, f"{where}.status"),
        scheme=optional(data.get("scheme"), str, f"{where}.scheme"),
        hostname=optional(data.get("hostname"), str, f"{where}.hostname"),
        port=optional(data.get("port"), int, f"{where}.port"),
        path=_path_edit(data.get("path"), f"{where}.path"),
    )


def _listener(data: Mapping[str, Any], where: str) -> ListenerTable:
    hosts = object_at(data.get("hosts", {}), f"{where}.hosts")
    return ListenerTable(
        gateway=typed(data.get("gateway"), str, f"{where}.gateway"),
        listener=typed(data.get("listener"), str, f"{where}.listener"),
        port=typed(data.get("port"), int, f"{where}.port"),
        protocol=typed(data.get("protocol"), str, f"{where}.protocol"),
        hostname=typed(data.get("hostname"), str, f"{where}.hostname"),
        hosts=pmap(
            {
                host: pvector(
                    _gateway_rule(
                        object_at(r, f"{where}.hosts[{host!r}][{i}]"),
                        f"{where}.hosts[{host!r}][{i}]",
                    )
                    for i, r in enumerate(list_at(rules, f"{where}.hosts[{host!r}]"))
                )
                for host, rules in hosts.items()
            }
        ),
    )


def _client(data: Mapping[str, Any], where: str) -> ClientValidation:
    return ClientValidation(
        ca_pem=typed(data.get("ca_bundle"), str, f"{where}.ca_bundle"),
        mode=typed(data.get("mode"), str, f"{where}.mode"),
    )


def _health(data: Mapping[str, Any], where: str) -> ListenerHealth:
    return ListenerHealth(
        gateway=typed(data.get("gateway"), str, f"{where}.gateway"),
        listener=typed(data.get("listener"), str, f"{where}.listener"),
        port=typed(data.get("port"), int, f"{where}.port"),
        target_port=typed(data.get("target_port"), int, f"{where}.target_port"),
        protocol=typed(data.get("protocol"), str, f"{where}.protocol"),
        hostname=optional(data.get("hostname"), str, f"{where}.hostname"),
        attached_routes=typed(data.get("attached_routes"), int, f"{where}.attached_routes"),
        ready=typed(data.get("ready"), bool, f"{where}.ready"),
        reason=typed(data.get("reason"), str, f"{where}.reason"),
    )


def _certificate(data: Mapping[str, Any], where: str) -> Certificate:
    return Certificate(
        chain_pem=typed(data.get("cert_chain"), str, f"{where}.cert_chain"),
        key_pem=typed(data.get("private_key"), str, f"{where}.private_key"),
        secret=typed(data.get("secret", ""), str, f"{where}.secret"),
    )


def _endpoint(data: Mapping[str, Any], where: str) -> Endpoint:
    return Endpoint(
        address=typed(data.get("address"), str, f"{where}.address"),
        port=typed(data.get("port"), int, f"{where}.port"),
    )
