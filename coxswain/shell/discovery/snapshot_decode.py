"""Protobuf → Snapshot: the decoding half of the discovery codec (``shell.discovery.codec``
holds the encoding half and the resource kinds' body fields).

Pure. A full decode and a resource decode share the piece readers (``_read_vhost``,
``_read_rules``, ...), so a snapshot patched from resources is built exactly as a full decode
builds it (docs/contracts.md).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.scope import GatewayScope, Scope, SharedPool
from coxswain.compile.snapshot import (
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

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pyrsistent.typing import PVector

from coxswain.shell.discovery.codec import RESOURCE_BODIES

__all__ = ["decode_resource", "decode_scope", "decode_snapshot"]

_PROTOCOL_FROM_WIRE: Final[dict[pb.BackendProtocol.ValueType, BackendProtocol]] = {
    pb.BACKEND_PROTOCOL_HTTP1: BackendProtocol.HTTP1,
    pb.BACKEND_PROTOCOL_H2C: BackendProtocol.H2C,
}
_PATH_MATCHES: Final[dict[str, PathMatch]] = {m.value: m for m in PathMatch}
"""``PathMatch`` by wire value, looked up per decoded rule: calling ``PathMatch(value)`` goes
through the enum's metaclass for every rule of a full decode."""


# --- record construction ------------------------------------------------------------------------
#
# A full decode at 10,000 routes builds about 60,000 records of the four kinds below (a path
# rule, its backend and route, three endpoints per backend). A frozen dataclass's ``__init__``
# sets each field through ``object.__setattr__``, a generic lookup per field: two thirds of the
# records' cost (docs/benchmarks.md, "Discovery"). Their readers below set the slots through
# the slots' descriptors instead, every field given: the same value ``__init__`` builds (none of
# these classes has a ``__post_init__``; tests/property/test_codec_props.py compares the two).


def _setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    names = [f.name for f in dataclasses.fields(cls)]
    if tuple(names) != getattr(cls, "__slots__", None):  # a change to compile.snapshot
        raise TypeError(f"{cls.__name__}: its slots are not its fields in order")
    return tuple(getattr(cls, name).__set__ for name in names)


_new: Final = object.__new__
_ep_address, _ep_port = _setters(Endpoint)
_ref_kind, _ref_namespace, _ref_name, _ref_rule = _setters(RouteRef)
(_pr_path, _pr_match, _pr_backend, _pr_route, _pr_redirect, _pr_actions, _pr_hsts) = _setters(
    PathRule
)
(
    _be_namespace,
    _be_service,
    _be_port,
    _be_weight,
    _be_valid,
    _be_request,
    _be_response,
    _be_tls,
    _be_protocol,
    _be_proxy_protocol,
    _be_cluster_ip,
) = _setters(Backend)


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
    route: RouteRef = _new(RouteRef)
    _ref_kind(route, message.kind)
    _ref_namespace(route, message.namespace)
    _ref_name(route, message.name)
    _ref_rule(route, message.rule)
    return route


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
        verify=not message.skip_verify,
        sni=not message.no_sni,
    )


def _read_backend(message: pb.Backend) -> Backend:
    protocol = _PROTOCOL_FROM_WIRE.get(message.protocol)
    if protocol is None:
        raise ValueError(f"backend protocol {message.protocol} is not HTTP1 or H2C")
    has = message.HasField
    backend: Backend = _new(Backend)
    _be_namespace(backend, message.namespace)
    _be_service(backend, message.service)
    _be_port(backend, message.port)
    _be_weight(backend, message.weight)
    _be_valid(backend, message.valid)
    _be_request(
        backend,
        _read_edits(message.request_headers) if has("request_headers") else None,
    )
    _be_response(
        backend,
        _read_edits(message.response_headers) if has("response_headers") else None,
    )
    _be_tls(backend, _read_upstream_tls(message.tls) if has("tls") else None)
    _be_protocol(backend, protocol)
    _be_proxy_protocol(backend, message.proxy_protocol)
    _be_cluster_ip(backend, message.cluster_ip)
    return backend


def _read_path_rule(message: pb.PathRule) -> PathRule:
    match = _PATH_MATCHES.get(message.match)
    if match is None:
        raise ValueError(f"path rule match {message.match!r} is not Exact, Prefix or Regex")
    rule: PathRule = _new(PathRule)
    _pr_path(rule, message.path)
    _pr_match(rule, match)
    _pr_backend(rule, _read_backend(message.backend))
    _pr_route(rule, _read_route(message.route))
    _pr_redirect(rule, message.tls_redirect)
    _pr_actions(
        rule, _read_ingress_actions(message.actions) if message.HasField("actions") else None
    )
    _pr_hsts(rule, message.hsts)
    return rule


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
        external_auth=(
            _read_external_auth(wire.external_auth) if wire.HasField("external_auth") else None
        ),
        rate_limit=_read_rate_limit(wire.rate_limit) if wire.HasField("rate_limit") else None,
        affinity=_read_affinity(wire.affinity) if wire.HasField("affinity") else None,
        client_tls=_read_client_tls(wire.client_tls) if wire.HasField("client_tls") else None,
    )


def _read_client_tls(wire: pb.ClientTLS) -> ClientTLS:
    return ClientTLS(
        ca_pem=wire.ca_pem,
        verify=wire.verify,
        depth=wire.depth,
        error_page=wire.error_page if wire.HasField("error_page") else None,
        pass_certificate=wire.pass_certificate,
        match_cn=wire.match_cn if wire.HasField("match_cn") else None,
    )


def _read_affinity(wire: pb.Affinity) -> Affinity:
    return Affinity(
        mode=wire.mode,
        cookie_name=wire.cookie_name,
        path=wire.path if wire.HasField("path") else None,
        domain=wire.domain if wire.HasField("domain") else None,
        expires=wire.expires,
        max_age=wire.max_age,
        samesite=wire.samesite if wire.HasField("samesite") else None,
        secure=wire.secure if wire.HasField("secure") else None,
        conditional_samesite_none=wire.conditional_samesite_none,
        change_on_failure=wire.change_on_failure,
    )


def _read_rate_limit(wire: pb.RateLimit) -> RateLimit:
    return RateLimit(
        zone=wire.zone,
        rps=wire.rps,
        rpm=wire.rpm,
        connections=wire.connections,
        burst_multiplier=wire.burst_multiplier,
        whitelist=pvector(wire.whitelist),
    )


def _read_external_auth(wire: pb.ExternalAuth) -> ExternalAuth:
    return ExternalAuth(
        url=wire.url,
        host=wire.host,
        port=wire.port,
        target=wire.target,
        tls=wire.tls,
        method=wire.method if wire.HasField("method") else None,
        signin=wire.signin if wire.HasField("signin") else None,
        signin_param=wire.signin_param,
        response_headers=pvector(wire.response_headers),
        request_redirect=wire.request_redirect if wire.HasField("request_redirect") else None,
        always_set_cookie=wire.always_set_cookie,
        cache_key=wire.cache_key if wire.HasField("cache_key") else None,
        cache_durations=pvector(wire.cache_durations),
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
        paths=pvector([_read_path_rule(r) for r in message.paths]),
        default=_read_path_rule(message.default_backend)
        if message.HasField("default_backend")
        else None,
        passthrough=_read_path_rule(message.passthrough)
        if message.HasField("passthrough")
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
    endpoints = []
    for wire in message.endpoints:  # the maker inlined: 30,000 calls at 10,000 routes
        endpoint: Endpoint = _new(Endpoint)
        _ep_address(endpoint, wire.address)
        _ep_port(endpoint, wire.port)
        endpoints.append(endpoint)
    return pvector(endpoints)


def _read_head(message: pb.SnapshotHead) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    return (
        message.http_port,
        message.https_port,
        tuple(message.tls_ports),
        tuple(message.client_cert_ports),
    )


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


_Kind = pb.ResourceKey
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
