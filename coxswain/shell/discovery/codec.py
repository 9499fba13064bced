"""Snapshot ↔ protobuf (``coxswain.discovery.v1.Snapshot``): the discovery stream's payload.

Pure conversions, in both directions, round-trip tested against the JSON form: the protobuf
form carries the same content (docs/contracts.md). ``version`` travels as computed by the
compiler; a decoded snapshot keeps it, and the receiving proxy Acks or Nacks that string.
Optional fields map to None; maps keyed by port use the port number.

``encode_resource``/``decode_resource`` do the same per keyed piece of a snapshot, for
incremental delivery (docs/contracts.md, ``shell.discovery.resources``). The full decode and
the resource decode share the piece readers (``_read_vhost``, ``_read_rules``, ...), so a
snapshot patched from resources is built exactly as a full decode builds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.scope import GatewayScope, Scope, SharedPool
from coxswain.compile.snapshot import (
    INGRESS_ACTION_FIELDS,
    Backend,
    BackendProtocol,
    Canary,
    Certificate,
    ClientValidation,
    Cors,
    Endpoint,
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

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from google.protobuf.message import Message
    from pyrsistent.typing import PVector

__all__ = [
    "RESOURCE_BODIES",
    "decode_resource",
    "decode_scope",
    "decode_snapshot",
    "encode_resource",
    "encode_scope",
    "encode_snapshot",
]

_PROTOCOL_TO_WIRE: Final[dict[BackendProtocol, pb.BackendProtocol.ValueType]] = {
    BackendProtocol.HTTP1: pb.BACKEND_PROTOCOL_HTTP1,
    BackendProtocol.H2C: pb.BACKEND_PROTOCOL_H2C,
}
_PROTOCOL_FROM_WIRE: Final[dict[pb.BackendProtocol.ValueType, BackendProtocol]] = {
    wire: protocol for protocol, wire in _PROTOCOL_TO_WIRE.items()
}
_PATH_MATCHES: Final = frozenset(m.value for m in PathMatch)
"""The wire values of ``PathMatch``, checked per decoded rule (a profile found that rebuilding
``PathMatch.__members__.values()`` per rule cost 5-120 ms of a 10,000-route decode)."""


# --- encoding -----------------------------------------------------------------------------------


def encode_scope(scope: Scope) -> pb.Scope:
    """A scope as its protobuf message."""
    if isinstance(scope, GatewayScope):
        return pb.Scope(gateway=pb.GatewayScope(namespace=scope.namespace, name=scope.name))
    return pb.Scope(shared_pool=pb.SharedPool())


def encode_snapshot(snapshot: Snapshot, sequence: int = 0) -> pb.Snapshot:
    """A snapshot as its protobuf message. Pure."""
    message = pb.Snapshot(
        version=snapshot.version,
        sequence=sequence,
        scope=encode_scope(snapshot.scope),
        ingress=pb.IngressTable(
            http_port=snapshot.ingress.http_port,
            https_port=snapshot.ingress.https_port,
        ),
        listener_health=[_health(h) for h in snapshot.listener_health],
    )
    for host, vhost in snapshot.ingress.hosts.items():
        message.ingress.hosts[host].CopyFrom(_vhost(vhost))
    for port, tables in snapshot.gateways.items():
        for hostname, table in tables.items():
            listener = message.gateways[port].by_hostname[hostname]
            listener.CopyFrom(_listener_head(table))
            for host, rules in table.hosts.items():
                listener.hosts[host].rules.extend(_gateway_rule(r) for r in rules)
    for port, certificates in snapshot.tls.items():
        entry = message.tls[port]
        for host, c in certificates.items():
            entry.by_host[host].CopyFrom(_certificate(c))
    for port, validations in snapshot.client_certs.items():
        by_port = message.client_certs[port]
        for host, v in validations.items():
            by_port.by_host[host].CopyFrom(_validation(v))
    for key, endpoints in snapshot.endpoints.items():
        message.endpoints[key].CopyFrom(_endpoints(endpoints))
    return message


# --- resources: the pieces of incremental delivery (shell.discovery.resources) --------------------


def encode_resource(kind: int, value: Any) -> bytes:
    """The serialised body message of one resource (``pb.Resource``'s oneof ``body``) of
    ``kind`` (a ``pb.ResourceKey.Kind``); ``value`` is what ``shell.discovery.resources`` splits out
    of a snapshot for that kind. Pure."""
    return _RESOURCE_ENCODERS[kind](value).SerializeToString()


def decode_resource(resource: pb.Resource) -> Any:
    """The value one resource carries, as ``encode_resource`` took it. Pure.

    Raises:
        ValueError: the body does not match the key's kind, or an unknown path match.
    """
    kind = resource.key.kind
    body = resource.WhichOneof("body")
    if body is None or body != RESOURCE_BODIES.get(kind):
        raise ValueError(f"resource kind {kind} carries body {body!r}")
    reader = _RESOURCE_DECODERS[kind]
    return reader(resource.key, getattr(resource, body))


def _head(head: tuple[int, int, tuple[int, ...], tuple[int, ...]]) -> pb.SnapshotHead:
    http_port, https_port, tls_ports, client_cert_ports = head
    return pb.SnapshotHead(
        http_port=http_port,
        https_port=https_port,
        tls_ports=tls_ports,
        client_cert_ports=client_cert_ports,
    )


def _vhost(vhost: VirtualHost) -> pb.VirtualHost:
    message = pb.VirtualHost(paths=[_path_rule(r) for r in vhost.paths])
    if vhost.default is not None:
        message.default_backend.CopyFrom(_path_rule(vhost.default))
    return message


def _listener_head(table: ListenerTable) -> pb.ListenerTable:
    return pb.ListenerTable(
        gateway=table.gateway,
        listener=table.listener,
        port=table.port,
        protocol=table.protocol,
        hostname=table.hostname,
    )


def _rules(rules: Iterable[GatewayRule]) -> pb.Rules:
    return pb.Rules(rules=[_gateway_rule(r) for r in rules])


def _certificate(c: Certificate) -> pb.Certificate:
    return pb.Certificate(cert_chain=c.chain_pem, private_key=c.key_pem, secret=c.secret)


def _validation(v: ClientValidation) -> pb.ClientValidation:
    return pb.ClientValidation(ca_bundle=v.ca_pem, mode=v.mode)


def _endpoints(endpoints: Iterable[Endpoint]) -> pb.Endpoints:
    return pb.Endpoints(endpoints=[pb.Endpoint(address=e.address, port=e.port) for e in endpoints])


def _route(route: RouteRef) -> pb.RouteRef:
    return pb.RouteRef(kind=route.kind, namespace=route.namespace, name=route.name, rule=route.rule)


def _edits(edits: HeaderEdits) -> pb.HeaderEdits:
    return pb.HeaderEdits(
        set=[pb.HeaderPair(name=n, value=v) for n, v in edits.set],
        add=[pb.HeaderPair(name=n, value=v) for n, v in edits.add],
        remove=list(edits.remove),
    )


def _backend(backend: Backend) -> pb.Backend:
    message = pb.Backend(
        namespace=backend.namespace,
        service=backend.service,
        port=backend.port,
        weight=backend.weight,
        valid=backend.valid,
    )
    if backend.request_headers is not None:
        message.request_headers.CopyFrom(_edits(backend.request_headers))
    if backend.response_headers is not None:
        message.response_headers.CopyFrom(_edits(backend.response_headers))
    if backend.tls is not None:
        message.tls.CopyFrom(_upstream_tls(backend.tls))
    if backend.protocol is not BackendProtocol.HTTP1:
        message.protocol = _PROTOCOL_TO_WIRE[backend.protocol]
    if backend.proxy_protocol:
        message.proxy_protocol = True
    return message


def _upstream_tls(tls: UpstreamTLS) -> pb.UpstreamTLS:
    message = pb.UpstreamTLS(
        policy=tls.policy,
        server_name=tls.server_name,
        subject_alt_names=[
            pb.SubjectAltName(type=n.type, value=n.value) for n in tls.subject_alt_names
        ],
    )
    if tls.ca_pem is not None:
        message.ca_bundle = tls.ca_pem
    if tls.client_certificate is not None:
        message.client_certificate.CopyFrom(_certificate(tls.client_certificate))
    if tls.problem is not None:
        message.problem = tls.problem
    return message


def _path_rule(rule: PathRule) -> pb.PathRule:
    message = pb.PathRule(
        path=rule.path,
        match=str(rule.match),
        backend=_backend(rule.backend),
        route=_route(rule.route),
        tls_redirect=rule.tls_redirect,
    )
    if rule.actions is not None:
        fields = {n: getattr(rule.actions, n) for n in INGRESS_ACTION_FIELDS}
        fields["auth_users"] = [pb.Credential(user=u, hash=h) for u, h in rule.actions.auth_users]
        fields["canary"] = None if rule.actions.canary is None else _canary(rule.actions.canary)
        fields["cors"] = None if rule.actions.cors is None else _cors(rule.actions.cors)
        message.actions.CopyFrom(
            pb.IngressActions(**{n: v for n, v in fields.items() if v is not None})
        )
    return message


def _value_matches(values: Iterable[ValueMatch]) -> list[pb.ValueMatch]:
    return [pb.ValueMatch(name=v.name, type=v.type, value=v.value) for v in values]


def _path_edit(edit: PathEdit) -> pb.PathEdit:
    return pb.PathEdit(type=edit.type, value=edit.value)


def _gateway_rule(rule: GatewayRule) -> pb.GatewayRule:
    match, action = rule.match, rule.action
    out = pb.GatewayRule(
        match=pb.RouteMatch(
            path_type=match.path_type,
            path=match.path,
            headers=_value_matches(match.headers),
            query=_value_matches(match.query),
        ),
        action=pb.RouteAction(
            route=_route(action.route),
            backends=[_backend(b) for b in action.backends],
            mirrors=[
                pb.Mirror(backend=_backend(m.backend), percent=m.percent) for m in action.mirrors
            ],
        ),
    )
    if match.method is not None:
        out.match.method = match.method
    target = out.action
    if action.request_headers is not None:
        target.request_headers.CopyFrom(_edits(action.request_headers))
    if action.response_headers is not None:
        target.response_headers.CopyFrom(_edits(action.response_headers))
    if (r := action.redirect) is not None:
        target.redirect.status = r.status
        if r.scheme is not None:
            target.redirect.scheme = r.scheme
        if r.hostname is not None:
            target.redirect.hostname = r.hostname
        if r.port is not None:
            target.redirect.port = r.port
        if r.path is not None:
            target.redirect.path.CopyFrom(_path_edit(r.path))
    if (w := action.rewrite) is not None:
        target.rewrite.SetInParent()
        if w.hostname is not None:
            target.rewrite.hostname = w.hostname
        if w.path is not None:
            target.rewrite.path.CopyFrom(_path_edit(w.path))
    if action.request_timeout is not None:
        target.request_timeout = action.request_timeout
    if action.backend_timeout is not None:
        target.backend_timeout = action.backend_timeout
    if action.problem is not None:
        target.problem = action.problem
    if action.grpc:
        target.grpc = True
    if (retry := action.retry) is not None:
        target.retry.CopyFrom(
            pb.Retry(codes=retry.codes, attempts=retry.attempts, backoff=retry.backoff)
        )
    if action.cors is not None:
        target.cors.CopyFrom(_cors(action.cors))
    return out


def _cors(c: Cors) -> pb.Cors:
    return pb.Cors(
        allow_origins=c.allow_origins,
        allow_methods=c.allow_methods,
        allow_headers=c.allow_headers,
        expose_headers=c.expose_headers,
        allow_credentials=c.allow_credentials,
        max_age=c.max_age,
    )


def _health(health: ListenerHealth) -> pb.ListenerHealth:
    message = pb.ListenerHealth(
        gateway=health.gateway,
        listener=health.listener,
        port=health.port,
        target_port=health.target_port,
        protocol=health.protocol,
        attached_routes=health.attached_routes,
        ready=health.ready,
        reason=health.reason,
    )
    if health.hostname is not None:
        message.hostname = health.hostname
    return message


# --- decoding -----------------------------------------------------------------------------------


def decode_scope(message: pb.Scope) -> Scope | None:
    """The scope a message names; None when no kind is set (a zero-value scope)."""
    kind = message.WhichOneof("kind")
    if kind == "shared_pool":
        return SharedPool()
    if kind == "gateway":
        return GatewayScope(message.gateway.namespace, message.gateway.name)
    return None


def decode_snapshot(message: pb.Snapshot) -> Snapshot:
    """The snapshot a message carries. Pure.

    Raises:
        ValueError: the message names no scope or an unknown path match.
    """
    scope = decode_scope(message.scope)
    if scope is None:
        raise ValueError("snapshot.scope: no kind is set")
    return Snapshot(
        version=message.version,
        scope=scope,
        ingress=IngressTable(
            http_port=message.ingress.http_port,
            https_port=message.ingress.https_port,
            hosts=pmap({h: _read_vhost(h, v) for h, v in message.ingress.hosts.items()}),
        ),
        gateways=pmap(
            {
                port: pmap({h: _read_listener(t) for h, t in tables.by_hostname.items()})
                for port, tables in message.gateways.items()
            }
        ),
        tls=pmap(
            {
                port: pmap({h: _read_certificate(c) for h, c in certificates.by_host.items()})
                for port, certificates in message.tls.items()
            }
        ),
        client_certs=pmap(
            {
                port: pmap({h: _read_validation(v) for h, v in validations.by_host.items()})
                for port, validations in message.client_certs.items()
            }
        ),
        listener_health=pvector(_read_health(h) for h in message.listener_health),
        endpoints=pmap({k: _read_endpoints(e) for k, e in message.endpoints.items()}),
    )


def _read_route(message: pb.RouteRef) -> RouteRef:
    return RouteRef(message.kind, message.namespace, message.name, message.rule)


def _read_edits(message: pb.HeaderEdits) -> HeaderEdits:
    return HeaderEdits(
        set=pvector((p.name, p.value) for p in message.set),
        add=pvector((p.name, p.value) for p in message.add),
        remove=pvector(message.remove),
    )


def _read_upstream_tls(message: pb.UpstreamTLS) -> UpstreamTLS:
    return UpstreamTLS(
        policy=message.policy,
        server_name=message.server_name,
        ca_pem=message.ca_bundle if message.HasField("ca_bundle") else None,
        subject_alt_names=pvector(
            SubjectAltName(type=n.type, value=n.value) for n in message.subject_alt_names
        ),
        client_certificate=_read_certificate(message.client_certificate)
        if message.HasField("client_certificate")
        else None,
        problem=message.problem if message.HasField("problem") else None,
    )


def _read_backend(message: pb.Backend) -> Backend:
    return Backend(
        namespace=message.namespace,
        service=message.service,
        port=message.port,
        weight=message.weight,
        valid=message.valid,
        request_headers=_read_edits(message.request_headers)
        if message.HasField("request_headers")
        else None,
        response_headers=_read_edits(message.response_headers)
        if message.HasField("response_headers")
        else None,
        tls=_read_upstream_tls(message.tls) if message.HasField("tls") else None,
        protocol=_read_protocol(message.protocol),
        proxy_protocol=message.proxy_protocol,
    )


def _read_protocol(value: pb.BackendProtocol.ValueType) -> BackendProtocol:
    found = _PROTOCOL_FROM_WIRE.get(value)
    if found is None:
        raise ValueError(f"backend protocol {value} is not HTTP1 or H2C")
    return found


def _read_path_rule(message: pb.PathRule) -> PathRule:
    if message.match not in _PATH_MATCHES:
        raise ValueError(f"path rule match {message.match!r} is not Exact, Prefix or Regex")
    actions = _read_ingress_actions(message.actions) if message.HasField("actions") else None
    return PathRule(
        path=message.path,
        match=PathMatch(message.match),
        backend=_read_backend(message.backend),
        route=_read_route(message.route),
        tls_redirect=message.tls_redirect,
        actions=actions,
    )


def _canary(canary: Canary) -> pb.Canary:
    return pb.Canary(
        backend=_backend(canary.backend),
        route=_route(canary.route),
        header=canary.header,
        header_value=canary.header_value,
        header_pattern=canary.header_pattern,
        cookie=canary.cookie,
        weight=canary.weight,
        weight_total=canary.weight_total,
    )


def _read_canary(wire: pb.Canary) -> Canary:
    return Canary(
        backend=_read_backend(wire.backend),
        route=_read_route(wire.route),
        header=wire.header if wire.HasField("header") else None,
        header_value=wire.header_value if wire.HasField("header_value") else None,
        header_pattern=wire.header_pattern if wire.HasField("header_pattern") else None,
        cookie=wire.cookie if wire.HasField("cookie") else None,
        weight=wire.weight,
        weight_total=wire.weight_total,
    )


def _read_ingress_actions(wire: pb.IngressActions) -> IngressActions:
    return IngressActions(
        app_root=wire.app_root if wire.HasField("app_root") else None,
        redirect=wire.redirect if wire.HasField("redirect") else None,
        redirect_status=wire.redirect_status,
        host_redirect=wire.host_redirect if wire.HasField("host_redirect") else None,
        rewrite_target=wire.rewrite_target if wire.HasField("rewrite_target") else None,
        x_forwarded_prefix=wire.x_forwarded_prefix if wire.HasField("x_forwarded_prefix") else None,
        upstream_vhost=wire.upstream_vhost if wire.HasField("upstream_vhost") else None,
        denied=wire.denied if wire.HasField("denied") else None,
        allow_sources=pvector(wire.allow_sources),
        deny_sources=pvector(wire.deny_sources),
        auth_realm=wire.auth_realm if wire.HasField("auth_realm") else None,
        auth_users=pvector((c.user, c.hash) for c in wire.auth_users),
        max_body=wire.max_body,
        connect_timeout=wire.connect_timeout,
        send_timeout=wire.send_timeout,
        read_timeout=wire.read_timeout,
        next_upstream_tries=wire.next_upstream_tries,
        next_upstream_codes=pvector(wire.next_upstream_codes),
        next_upstream_timeout=wire.next_upstream_timeout,
        canary=_read_canary(wire.canary) if wire.HasField("canary") else None,
        cors=_read_cors(wire.cors) if wire.HasField("cors") else None,
    )


def _read_values(messages: Iterable[pb.ValueMatch]) -> list[ValueMatch]:
    return [ValueMatch(name=m.name, type=m.type, value=m.value) for m in messages]


def _read_path_edit(message: pb.PathEdit) -> PathEdit:
    return PathEdit(type=message.type, value=message.value)


def _read_gateway_rule(message: pb.GatewayRule) -> GatewayRule:
    match, action = message.match, message.action
    redirect = None
    if action.HasField("redirect"):
        r = action.redirect
        redirect = Redirect(
            status=r.status,
            scheme=r.scheme if r.HasField("scheme") else None,
            hostname=r.hostname if r.HasField("hostname") else None,
            port=r.port if r.HasField("port") else None,
            path=_read_path_edit(r.path) if r.HasField("path") else None,
        )
    rewrite = None
    if action.HasField("rewrite"):
        w = action.rewrite
        rewrite = Rewrite(
            hostname=w.hostname if w.HasField("hostname") else None,
            path=_read_path_edit(w.path) if w.HasField("path") else None,
        )
    return GatewayRule(
        match=RouteMatch(
            path_type=match.path_type,
            path=match.path,
            headers=pvector(_read_values(match.headers)),
            query=pvector(_read_values(match.query)),
            method=match.method if match.HasField("method") else None,
        ),
        action=RouteAction(
            route=_read_route(action.route),
            backends=pvector(_read_backend(b) for b in action.backends),
            request_headers=_read_edits(action.request_headers)
            if action.HasField("request_headers")
            else None,
            response_headers=_read_edits(action.response_headers)
            if action.HasField("response_headers")
            else None,
            redirect=redirect,
            rewrite=rewrite,
            mirrors=pvector(
                Mirror(backend=_read_backend(m.backend), percent=m.percent) for m in action.mirrors
            ),
            request_timeout=action.request_timeout if action.HasField("request_timeout") else None,
            backend_timeout=action.backend_timeout if action.HasField("backend_timeout") else None,
            cors=_read_cors(action.cors) if action.HasField("cors") else None,
            retry=Retry(
                codes=pvector(action.retry.codes),
                attempts=action.retry.attempts,
                backoff=action.retry.backoff,
            )
            if action.HasField("retry")
            else None,
            problem=action.problem if action.HasField("problem") else None,
            grpc=action.grpc,
        ),
    )


def _read_cors(message: pb.Cors) -> Cors:
    return Cors(
        allow_origins=pvector(message.allow_origins),
        allow_methods=pvector(message.allow_methods),
        allow_headers=pvector(message.allow_headers),
        expose_headers=pvector(message.expose_headers),
        allow_credentials=message.allow_credentials,
        max_age=message.max_age,
    )


def _read_listener(message: pb.ListenerTable) -> ListenerTable:
    return ListenerTable(
        gateway=message.gateway,
        listener=message.listener,
        port=message.port,
        protocol=message.protocol,
        hostname=message.hostname,
        hosts=pmap({host: _read_rules(rules) for host, rules in message.hosts.items()}),
    )


def _read_health(message: pb.ListenerHealth) -> ListenerHealth:
    return ListenerHealth(
        gateway=message.gateway,
        listener=message.listener,
        port=message.port,
        target_port=message.target_port,
        protocol=message.protocol,
        hostname=message.hostname if message.HasField("hostname") else None,
        attached_routes=message.attached_routes,
        ready=message.ready,
        reason=message.reason,
    )


def _read_vhost(host: str, message: pb.VirtualHost) -> VirtualHost:
    return VirtualHost(
        host=host,
        paths=pvector(_read_path_rule(r) for r in message.paths),
        default=_read_path_rule(message.default_backend)
        if message.HasField("default_backend")
        else None,
    )


def _read_rules(message: pb.Rules) -> PVector[GatewayRule]:
    return pvector(_read_gateway_rule(r) for r in message.rules)


def _read_certificate(message: pb.Certificate) -> Certificate:
    return Certificate(
        chain_pem=message.cert_chain, key_pem=message.private_key, secret=message.secret
    )


def _read_validation(message: pb.ClientValidation) -> ClientValidation:
    return ClientValidation(ca_pem=message.ca_bundle, mode=message.mode)


def _read_endpoints(message: pb.Endpoints) -> PVector[Endpoint]:
    return pvector(Endpoint(e.address, e.port) for e in message.endpoints)


def _read_head(message: pb.SnapshotHead) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    return (
        message.http_port,
        message.https_port,
        tuple(message.tls_ports),
        tuple(message.client_cert_ports),
    )


_Kind = pb.ResourceKey
_RESOURCE_ENCODERS: Final[dict[int, Callable[[Any], Message]]] = {
    _Kind.HEAD: _head,
    _Kind.INGRESS_HOST: _vhost,
    _Kind.LISTENER: _listener_head,
    _Kind.ROUTE_HOST: _rules,
    _Kind.CERTIFICATE: _certificate,
    _Kind.CLIENT_CERT: _validation,
    _Kind.LISTENER_HEALTH: _health,
    _Kind.ENDPOINTS: _endpoints,
}
RESOURCE_BODIES: Final = {  # the body field of pb.Resource each kind carries
    _Kind.HEAD: "head",
    _Kind.INGRESS_HOST: "ingress_host",
    _Kind.LISTENER: "listener",
    _Kind.ROUTE_HOST: "route_host",
    _Kind.CERTIFICATE: "certificate",
    _Kind.CLIENT_CERT: "client_cert",
    _Kind.LISTENER_HEALTH: "listener_health",
    _Kind.ENDPOINTS: "endpoints",
}
_RESOURCE_DECODERS: Final[dict[int, Callable[[pb.ResourceKey, Any], Any]]] = {
    _Kind.HEAD: lambda _, m: _read_head(m),
    _Kind.INGRESS_HOST: lambda key, m: _read_vhost(key.name, m),
    _Kind.LISTENER: lambda _, m: _read_listener(m),
    _Kind.ROUTE_HOST: lambda _, m: _read_rules(m),
    _Kind.CERTIFICATE: lambda _, m: _read_certificate(m),
    _Kind.CLIENT_CERT: lambda _, m: _read_validation(m),
    _Kind.LISTENER_HEALTH: lambda _, m: _read_health(m),
    _Kind.ENDPOINTS: lambda _, m: _read_endpoints(m),
}
