"""Snapshot ↔ protobuf (``coxswain.discovery.v1.Snapshot``): the discovery stream's payload.

Pure conversions, in both directions, round-trip tested against the JSON form: the protobuf
form carries the same content (ARCHITECTURE §3). ``version`` travels as computed by the
compiler; a decoded snapshot keeps it, and the receiving proxy Acks or Nacks that string.
Optional fields map to None; maps keyed by port use the port number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.scope import GatewayScope, Scope, SharedPool
from coxswain.compile.snapshot import (
    Backend,
    Certificate,
    ClientValidation,
    Endpoint,
    GatewayRule,
    HeaderEdits,
    IngressTable,
    ListenerHealth,
    ListenerTable,
    Mirror,
    PathEdit,
    PathMatch,
    PathRule,
    Redirect,
    Rewrite,
    RouteAction,
    RouteMatch,
    RouteRef,
    Snapshot,
    ValueMatch,
    VirtualHost,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["decode_scope", "decode_snapshot", "encode_scope", "encode_snapshot"]


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
        target = message.ingress.hosts[host]
        target.paths.extend(_path_rule(r) for r in vhost.paths)
        if vhost.default is not None:
            target.default_backend.CopyFrom(_path_rule(vhost.default))
    for port, tables in snapshot.gateways.items():
        for hostname, table in tables.items():
            listener = message.gateways[port].by_hostname[hostname]
            listener.gateway = table.gateway
            listener.listener = table.listener
            listener.port = table.port
            listener.protocol = table.protocol
            listener.hostname = table.hostname
            for host, rules in table.hosts.items():
                listener.hosts[host].rules.extend(_gateway_rule(r) for r in rules)
    for port, certificates in snapshot.tls.items():
        entry = message.tls[port]
        for host, c in certificates.items():
            entry.by_host[host].CopyFrom(
                pb.Certificate(cert_chain=c.chain_pem, private_key=c.key_pem, secret=c.secret)
            )
    for port, validations in snapshot.client_certs.items():
        by_port = message.client_certs[port]
        for host, v in validations.items():
            by_port.by_host[host].CopyFrom(pb.ClientValidation(ca_bundle=v.ca_pem, mode=v.mode))
    for key, endpoints in snapshot.endpoints.items():
        message.endpoints[key].endpoints.extend(
            pb.Endpoint(address=e.address, port=e.port) for e in endpoints
        )
    return message


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
    return message


def _path_rule(rule: PathRule) -> pb.PathRule:
    return pb.PathRule(
        path=rule.path,
        match=str(rule.match),
        backend=_backend(rule.backend),
        route=_route(rule.route),
        tls_redirect=rule.tls_redirect,
    )


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
    return out


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
            hosts=pmap(
                {
                    host: VirtualHost(
                        host=host,
                        paths=pvector(_read_path_rule(r) for r in vhost.paths),
                        default=_read_path_rule(vhost.default_backend)
                        if vhost.HasField("default_backend")
                        else None,
                    )
                    for host, vhost in message.ingress.hosts.items()
                }
            ),
        ),
        gateways=pmap(
            {
                port: pmap({h: _read_listener(t) for h, t in tables.by_hostname.items()})
                for port, tables in message.gateways.items()
            }
        ),
        tls=pmap(
            {
                port: pmap(
                    {
                        host: Certificate(
                            chain_pem=c.cert_chain, key_pem=c.private_key, secret=c.secret
                        )
                        for host, c in certificates.by_host.items()
                    }
                )
                for port, certificates in message.tls.items()
            }
        ),
        client_certs=pmap(
            {
                port: pmap(
                    {
                        host: ClientValidation(ca_pem=v.ca_bundle, mode=v.mode)
                        for host, v in validations.by_host.items()
                    }
                )
                for port, validations in message.client_certs.items()
            }
        ),
        listener_health=pvector(_read_health(h) for h in message.listener_health),
        endpoints=pmap(
            {
                key: pvector(Endpoint(e.address, e.port) for e in endpoints.endpoints)
                for key, endpoints in message.endpoints.items()
            }
        ),
    )


def _read_route(message: pb.RouteRef) -> RouteRef:
    return RouteRef(message.kind, message.namespace, message.name, message.rule)


def _read_edits(message: pb.HeaderEdits) -> HeaderEdits:
    return HeaderEdits(
        set=pvector((p.name, p.value) for p in message.set),
        add=pvector((p.name, p.value) for p in message.add),
        remove=pvector(message.remove),
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
    )


def _read_path_rule(message: pb.PathRule) -> PathRule:
    if message.match not in PathMatch.__members__.values():
        raise ValueError(f"path rule match {message.match!r} is not Exact or Prefix")
    return PathRule(
        path=message.path,
        match=PathMatch(message.match),
        backend=_read_backend(message.backend),
        route=_read_route(message.route),
        tls_redirect=message.tls_redirect,
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
            problem=action.problem if action.HasField("problem") else None,
        ),
    )


def _read_listener(message: pb.ListenerTable) -> ListenerTable:
    return ListenerTable(
        gateway=message.gateway,
        listener=message.listener,
        port=message.port,
        protocol=message.protocol,
        hostname=message.hostname,
        hosts=pmap(
            {
                host: pvector(_read_gateway_rule(r) for r in rules.rules)
                for host, rules in message.hosts.items()
            }
        ),
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
