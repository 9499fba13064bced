"""Snapshot ↔ protobuf (``coxswain.discovery.v1.Snapshot``): the discovery stream's payload.

Pure conversions, in both directions, round-trip tested against the JSON form: the protobuf
form carries the same content (docs/contracts.md). ``version`` travels as computed by the
compiler; a decoded snapshot keeps it, and the receiving proxy Acks or Nacks that string.
Optional fields map to None; maps keyed by port use the port number.

``encode_resource`` does the same per keyed piece of a snapshot, for incremental delivery
(docs/contracts.md, ``shell.discovery.resources``). This module is the encoding half;
``shell.discovery.snapshot_decode`` is the decoding half (``decode_snapshot``,
``decode_resource``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Final, TypeVar

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.scope import GatewayScope, Scope
from coxswain.compile.snapshot import (
    INGRESS_ACTION_FIELDS,
    Backend,
    BackendProtocol,
    Canary,
    Certificate,
    ClientValidation,
    Cors,
    Endpoint,
    ExternalAuth,
    GatewayRule,
    HeaderEdits,
    ListenerHealth,
    ListenerTable,
    PathEdit,
    PathRule,
    RouteRef,
    Snapshot,
    UpstreamTLS,
    ValueMatch,
    VirtualHost,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from google.protobuf.message import Message

__all__ = [
    "RESOURCE_BODIES",
    "encode_resource",
    "encode_rule",
    "encode_scope",
    "encode_snapshot",
]

_M = TypeVar("_M", bound="Message")

_PROTOCOL_TO_WIRE: Final[dict[BackendProtocol, pb.BackendProtocol.ValueType]] = {
    BackendProtocol.HTTP1: pb.BACKEND_PROTOCOL_HTTP1,
    BackendProtocol.H2C: pb.BACKEND_PROTOCOL_H2C,
}
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


def encode_rule(rule: GatewayRule) -> bytes:
    """One serialised ``pb.GatewayRule``: a route host's body (``pb.Rules``) is these, each as
    its field 1 (``shell.discovery.resources`` splices them). Pure."""
    return _gateway_rule(rule).SerializeToString()


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
    if vhost.passthrough is not None:
        message.passthrough.CopyFrom(_path_rule(vhost.passthrough))
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
    if backend.cluster_ip:
        message.cluster_ip = True
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
    message.skip_verify = not tls.verify
    message.no_sni = not tls.sni
    return message


def _path_rule(rule: PathRule) -> pb.PathRule:
    message = pb.PathRule(
        path=rule.path,
        match=str(rule.match),
        backend=_backend(rule.backend),
        route=_route(rule.route),
        tls_redirect=rule.tls_redirect,
        hsts=rule.hsts,
    )
    if rule.actions is not None:
        fields = {n: getattr(rule.actions, n) for n in INGRESS_ACTION_FIELDS}
        fields["auth_users"] = [pb.Credential(user=u, hash=h) for u, h in rule.actions.auth_users]
        fields["canary"] = None if rule.actions.canary is None else _canary(rule.actions.canary)
        fields["cors"] = None if rule.actions.cors is None else _cors(rule.actions.cors)
        auth = rule.actions.external_auth
        fields["external_auth"] = None if auth is None else _external_auth(auth)
        limit = rule.actions.rate_limit
        fields["rate_limit"] = None if limit is None else _flat(pb.RateLimit, limit)
        sticky = rule.actions.affinity
        fields["affinity"] = None if sticky is None else _flat(pb.Affinity, sticky)
        mtls = rule.actions.client_tls
        fields["client_tls"] = None if mtls is None else _flat(pb.ClientTLS, mtls)
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


def _external_auth(auth: ExternalAuth) -> pb.ExternalAuth:
    return _flat(pb.ExternalAuth, auth)


def _flat(kind: Callable[..., _M], value: Any) -> _M:
    """The message of a dataclass whose fields are scalars and lists of them, by name."""
    fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return kind(**{n: v for n, v in fields.items() if v is not None})


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
