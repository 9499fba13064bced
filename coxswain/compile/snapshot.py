"""The Snapshot: the routing slice one proxy serves, for one scope.

Its JSON form is described in docs/contracts.md, "The snapshot JSON".

Every collection is in canonical order, so equal states give equal snapshots and equal
``version`` hashes (computed by ``snapshot_json.seal``). Nothing here is ever mutated: a proxy
applies a new snapshot by swapping one reference.

Cells:
- ``ingress``: the Ingress table, virtual hosts keyed by host (``foo.example.com``,
  ``*.example.com``, or ``*`` for the catch-all), served on the Ingress ports;
- ``tls``: bind port → SNI host (``*`` for the port's default) → certificate;
- ``endpoints``: ``namespace/service/port`` → ready endpoints, so that endpoint churn never
  rewrites a route.
- ``gateways``: bind port → listener hostname (``*`` when none) → the listener's table;
- ``client_certs``: bind port → SNI host → client-certificate validation;
- ``listener_health``: one entry per listener of every Gateway in scope.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain.compile.snapshot_filters import (
    Cors,
    HeaderEdits,
    PathEdit,
    Redirect,
    Retry,
    Rewrite,
    RouteMatch,
    ValueMatch,
)

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.scope import Scope

__all__ = [
    "CATCH_ALL",
    "INGRESS_ACTION_FIELDS",
    "Affinity",
    "Backend",
    "BackendProtocol",
    "Canary",
    "Certificate",
    "ClientTLS",
    "Cors",
    "Endpoint",
    "ExternalAuth",
    "HeaderEdits",
    "IngressActions",
    "IngressTable",
    "PathEdit",
    "PathMatch",
    "PathRule",
    "RateLimit",
    "Redirect",
    "Retry",
    "Rewrite",
    "RouteMatch",
    "RouteRef",
    "Snapshot",
    "SubjectAltName",
    "UpstreamTLS",
    "ValueMatch",
    "VirtualHost",
]

CATCH_ALL = "*"
"""The host key of rules without a host; never a valid hostname, so it cannot collide."""


class PathMatch(enum.StrEnum):
    """How an Ingress path matches (``ImplementationSpecific`` compiles to ``Prefix``).

    ``Regex``: every path of an Ingress with ingress-nginx's ``use-regex`` or
    ``rewrite-target`` annotation; the path is a regular expression matched from the start of
    the request path, case-insensitively (ingress-nginx's ``location ~* "^path"``), on the
    linear-time engine (``compile.regex``).
    """

    EXACT = "Exact"
    PREFIX = "Prefix"
    REGEX = "Regex"


class BackendProtocol(enum.StrEnum):
    """What the proxy speaks to a backend.

    ``HTTP1`` is HTTP/1.1, every backend's protocol unless something says otherwise. ``H2C`` is
    HTTP/2 with prior knowledge (RFC 9113 §3.3), for GRPCRoute backends (gRPC needs HTTP/2,
    GEP-1016) and for Service ports whose ``appProtocol`` is ``kubernetes.io/h2c`` (KEP-3726;
    Gateway API ``HTTPRouteBackendProtocolH2C``); on a backend with ``tls`` it is HTTP/2 over
    TLS, negotiated with ALPN ``h2`` (RFC 9113 §3.2).
    """

    HTTP1 = "http1"
    H2C = "h2c"


@dataclass(frozen=True, slots=True, order=True)
class RouteRef:
    """The object and rule a routing entry came from, e.g. ``spec.rules[0].http.paths[1]``."""

    kind: str
    namespace: str
    name: str
    rule: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Backend:
    """A Service port to send traffic to.

    ``port`` is the Service port number (0 when it could not be resolved); ``valid`` is False
    when the Service or its port does not exist, or a BackendTLSPolicy targeting it cannot be
    honoured, and the proxy then answers instead of forwarding. ``endpoints_key`` names the
    entry of the endpoints table. Route backends may carry their own header edits
    (``backendRefs[].filters``) and the TLS the proxy originates to them (``tls``); ``protocol``
    is what the proxy speaks to them (:class:`BackendProtocol`); ``proxy_protocol`` asks for a
    PROXY protocol v2 header before a layer-4 connection's bytes (``route.proxy_protocol``).
    ``cluster_ip`` sends to the Service's cluster IP instead of its endpoints (ingress-nginx's
    ``service-upstream``), an entry of the endpoints table of its own.
    """

    namespace: str
    service: str
    port: int
    weight: int = 1
    valid: bool = True
    request_headers: HeaderEdits | None = None
    response_headers: HeaderEdits | None = None
    tls: UpstreamTLS | None = None
    protocol: BackendProtocol = BackendProtocol.HTTP1
    proxy_protocol: bool = False
    cluster_ip: bool = False

    @property
    def endpoints_key(self) -> str:
        if self.cluster_ip:
            return f"{self.namespace}/{self.service}/{self.port}/cluster-ip"
        return f"{self.namespace}/{self.service}/{self.port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SubjectAltName:
    """A Subject Alternative Name the backend's certificate may carry: ``type`` is ``Hostname``
    (a DNS name, ``*.`` wildcards in the certificate cover one label) or ``URI`` (compared
    whole, as SPIFFE IDs are). Gateway API ``SubjectAltName``."""

    type: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamTLS:
    """The TLS the proxy originates to a backend a BackendTLSPolicy targets (GEP-1897).

    ``server_name`` (the policy's ``validation.hostname``) is sent as SNI and, unless
    ``subject_alt_names`` are given, is the name the backend's certificate must carry; with
    them, one of them must be in the certificate instead. ``ca_pem`` is the CA bundle the chain
    must lead to, or None for the system's trusted CAs (``wellKnownCACertificates: System``).
    ``client_certificate`` is the Gateway's ``spec.tls.backend.clientCertificateRef``, presented
    when the backend asks for one. ``policy`` is ``ns/name`` of the policy; ``problem`` says why
    the policy cannot be honoured (then the backend is invalid and answered, never sent
    plaintext).

    ingress-nginx's ``backend-protocol: HTTPS``/``GRPCS`` with its ``proxy-ssl-*`` annotations
    (docs/migrating-from-ingress-nginx.md, "Backends") may relax two things a policy never
    does: ``verify`` False takes the backend's certificate unchecked (``proxy-ssl-verify: off``,
    nginx's default), and ``sni`` False sends no server name (``proxy-ssl-server-name: off``);
    ``server_name`` is then only the name verified. ``policy`` names the Ingress then.
    """

    policy: str
    server_name: str
    ca_pem: str | None = None
    subject_alt_names: PVector[SubjectAltName] = pvector()
    client_certificate: Certificate | None = None
    problem: str | None = None
    verify: bool = True
    sni: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Canary:
    """A canary Ingress's backend for a path of another Ingress (ingress-nginx's ``canary``
    annotations; the proxy's side: ``route.canary``). ``header`` with ``header_value`` or
    ``header_pattern`` (RE2, searched in the value), ``cookie``, then ``weight`` out of
    ``weight_total`` decide, in that order; ``route`` is the canary Ingress's path."""

    backend: Backend
    route: RouteRef
    header: str | None = None
    header_value: str | None = None
    header_pattern: str | None = None
    cookie: str | None = None
    weight: int = 0
    weight_total: int = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalAuth:
    """ingress-nginx's external authentication (``auth-url`` and its companions; the proxy's
    side: ``route.external_auth``): before forwarding, a sub-request without body to ``url``
    (``host``, ``port`` and ``target`` its parts; over TLS when ``tls``) decides. ``method``
    replaces the request's (``auth-method``; GET, as nginx's subrequests, when None);
    ``signin`` is where a 401 redirects (``auth-signin``, the original URL in the query
    parameter ``signin_param``); ``response_headers`` are copied from the auth response to
    the forwarded request (names lower-case); ``request_redirect`` is the
    ``X-Auth-Request-Redirect`` sent (default: the request's URI); ``always_set_cookie`` adds
    the auth response's ``Set-Cookie`` to every answer, not only successful ones.
    ``cache_key`` (nginx variables in it) keys remembered auth responses, each remembered for
    the seconds ``cache_durations`` gives its status (entries ``<status>:<seconds>``, or
    ``any:<seconds>``)."""

    url: str
    host: str
    port: int
    target: str
    tls: bool = False
    method: str | None = None
    signin: str | None = None
    signin_param: str = "rd"
    response_headers: PVector[str] = pvector()
    request_redirect: str | None = None
    always_set_cookie: bool = False
    cache_key: str | None = None
    cache_durations: PVector[str] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """ingress-nginx's rate limits of one Ingress, per proxy replica and client address (the
    proxy's side: ``shell.dataplane.rate_limits``): ``rps`` and ``rpm`` requests a second
    and a minute (nginx ``limit_req … nodelay``, each with a burst of ``burst_multiplier``
    times its rate), ``connections`` requests in progress at once (``limit_conn``); 0 is no
    limit. Clients in ``whitelist`` (networks) are not limited. ``zone`` names the Ingress
    (``namespace/name``): its paths share the counts, as ingress-nginx's zones do."""

    zone: str
    rps: int = 0
    rpm: int = 0
    connections: int = 0
    burst_multiplier: int = 5
    whitelist: PVector[str] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class Affinity:
    """ingress-nginx's cookie session affinity (``affinity: cookie``; the proxy's side:
    ``route.affinity``): requests carrying the cookie ``cookie_name`` go to the endpoint it
    names. ``mode`` ``balanced`` names it by a key hashed onto the endpoints (a scale-up moves
    some sessions), ``persistent`` by the endpoint itself (sessions stay until it goes). The
    cookie's ``path`` (the Ingress path when not set), ``domain``, ``expires`` and ``max_age``
    (seconds; 0: not sent), ``samesite`` and ``secure`` (None: on HTTPS requests) are its
    attributes; it is always ``HttpOnly``. ``conditional_samesite_none`` leaves
    ``SameSite=None`` out for the browsers that mishandle it (``route.affinity``).
    ``change_on_failure``: a request whose endpoint fails goes to another, and the cookie
    moves the client there (``shell.dataplane.affinity``)."""

    mode: str = "balanced"
    cookie_name: str = "INGRESSCOOKIE"
    path: str | None = None
    domain: str | None = None
    expires: int = 0
    max_age: int = 0
    samesite: str | None = None
    secure: bool | None = None
    conditional_samesite_none: bool = False
    change_on_failure: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientTLS:
    """ingress-nginx's client-certificate authentication (``auth-tls-secret``; the proxy's
    side: ``route.client_tls``): ``ca_pem`` is the Secret's ``ca.crt``; ``verify`` is
    ``on``, ``off``, ``optional`` or ``optional_no_ca`` (``auth-tls-verify-client``);
    ``depth`` the ``auth-tls-verify-depth``; ``error_page`` where a failed check is
    redirected instead of answered 400; ``pass_certificate`` sends the certificate to the
    backend (``ssl-client-cert``); ``match_cn`` is an RE2 pattern the certificate's subject
    must contain a match of, else 403 (``auth-tls-match-cn``)."""

    ca_pem: str
    verify: str = "on"
    depth: int = 1
    error_page: str | None = None
    pass_certificate: bool = False
    match_cn: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressActions:
    """What an Ingress path does besides forwarding, from ingress-nginx's annotations
    (docs/migrating-from-ingress-nginx.md; the proxy's side: ``route.ingress_actions``).

    Attributes:
        app_root: a request for ``/`` is redirected there (302), ``app-root``.
        redirect: the ``Location`` of a redirect answered instead of forwarding
            (``permanent-redirect`` / ``temporal-redirect``); it may name ``$request_uri``,
            ``$uri``, ``$args``, ``$is_args``, ``$host``, ``$http_host`` and ``$scheme``.
        redirect_status: that redirect's status.
        host_redirect: every request is redirected (308) to this host, same scheme, path and
            query (``from-to-www-redirect``; nginx drops one trailing slash of the path).
        rewrite_target: the path forwarded instead of the request's, with ``$1``…``$9`` the
            path regex's capture groups (``rewrite-target``; a ``?`` in it starts the new
            query, the request's own query follows after ``&``).
        x_forwarded_prefix: the ``X-Forwarded-Prefix`` request header sent with a rewrite.
        upstream_vhost: the Host header sent to the backend (``upstream-vhost``).
        denied: why every request is answered 503: a security annotation that cannot be
            honoured (a bad value, a missing Secret, or one not implemented yet), as
            ingress-nginx denies such a location rather than serve it unprotected, or a
            ``backend-protocol`` not implemented yet.
        allow_sources: client networks admitted, others 403 (``whitelist-source-range``).
        deny_sources: client networks refused with 403 (``denylist-source-range``).
        auth_realm: with it, requests need one of ``auth_users`` in a Basic ``Authorization``
            (RFC 7617), else 401 with this realm (``auth-type: basic``).
        auth_users: (user, htpasswd hash) pairs from the ``auth-secret``.
        max_body: the largest request body admitted, bytes, else 413 (``proxy-body-size``;
            0: no limit).
        connect_timeout: seconds to connect to an endpoint (``proxy-connect-timeout``); 0
            keeps the proxy's own. So do the next two.
        send_timeout: seconds between two writes to the backend (``proxy-send-timeout``).
        read_timeout: seconds between two reads of the backend (``proxy-read-timeout``).
        next_upstream_tries: with it, a failed try is repeated on the next endpoint up to this
            many tries in all (``proxy-next-upstream-tries``); 0: the proxy's own behaviour.
        next_upstream_codes: the response statuses that count as failed
            (``proxy-next-upstream: http_502 …``); errors and timeouts always do.
        next_upstream_timeout: seconds all tries together may take
            (``proxy-next-upstream-timeout``; 0: no bound).
        canary: another Ingress's canary backend for this path.
        cors: ``enable-cors`` and the ``cors-*`` annotations, as a CORS filter.
        external_auth: the sub-request that authorizes each request (``auth-url``).
        rate_limit: the request rates and concurrency each client gets (``limit-*``).
        affinity: the cookie that keeps a client on one endpoint (``affinity: cookie``).
        client_tls: the client certificate HTTPS requests must present (``auth-tls-*``).
    """

    app_root: str | None = None
    redirect: str | None = None
    redirect_status: int = 0
    host_redirect: str | None = None
    rewrite_target: str | None = None
    x_forwarded_prefix: str | None = None
    upstream_vhost: str | None = None
    denied: str | None = None
    allow_sources: PVector[str] = pvector()
    deny_sources: PVector[str] = pvector()
    auth_realm: str | None = None
    auth_users: PVector[tuple[str, str]] = pvector()
    max_body: int = 0
    connect_timeout: float = 0
    send_timeout: float = 0
    read_timeout: float = 0
    next_upstream_tries: int = 0
    next_upstream_codes: PVector[int] = pvector()
    next_upstream_timeout: float = 0
    canary: Canary | None = None
    cors: Cors | None = None
    external_auth: ExternalAuth | None = None
    rate_limit: RateLimit | None = None
    affinity: Affinity | None = None
    client_tls: ClientTLS | None = None

    @property
    def checks_each_request(self) -> bool:
        """Whether the proxy must look at each request's client, credentials or body size
        (``route.ingress_access``), which a cached decision cannot."""
        return bool(
            self.allow_sources
            or self.deny_sources
            or self.auth_realm is not None
            or self.max_body
            or self.canary is not None
            or self.cors is not None
            or self.external_auth is not None
            or self.rate_limit is not None
            or self.affinity is not None
            or self.client_tls is not None
        )


INGRESS_ACTION_FIELDS = tuple(f.name for f in dataclasses.fields(IngressActions))
"""Every field of :class:`IngressActions`, in order: the wire forms write those that are set."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PathRule:
    """One Ingress path on one host; ``tls_redirect`` sends plain-HTTP requests to HTTPS;
    ``actions`` is None on a path that has none (the proxy's fast path); ``hsts`` is the
    ``Strict-Transport-Security`` value its HTTPS responses carry ("" for none; the
    ``hsts`` default, ``config.IngressDefaults``)."""

    path: str
    match: PathMatch
    backend: Backend
    route: RouteRef
    tls_redirect: bool = False
    actions: IngressActions | None = None
    hsts: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class VirtualHost:
    """The Ingress rules of one host.

    ``paths`` is in precedence order: Exact paths first, then prefixes longest first (Kubernetes
    Ingress spec, "Multiple matches"). ``default`` serves the host's misses (``defaultBackend``
    of an Ingress that names this host). With ``passthrough``, a TLS connection to the Ingress
    HTTPS port whose SNI is this host is not terminated: its bytes go to that rule's backend,
    which completes the handshake with its own certificate (ingress-nginx's
    ``ssl-passthrough``).
    """

    host: str
    paths: PVector[PathRule] = pvector()
    default: PathRule | None = None
    passthrough: PathRule | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressTable:
    """Virtual hosts by host key, and the advertised ports the table is served on."""

    http_port: int
    https_port: int
    hosts: PMap[str, VirtualHost] = pmap()


@dataclass(frozen=True, slots=True, kw_only=True)
class Certificate:
    """A certificate chain and key (PEM) to serve, and the Secret they came from."""

    chain_pem: str
    key_pem: str
    secret: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientValidation:
    """Client-certificate validation for one port and SNI host (frontend mTLS, GEP-91).

    ``mode`` is ``AllowValidOnly`` (refuse clients without a valid certificate) or
    ``AllowInsecureFallback`` (admit them).
    """

    ca_pem: str
    mode: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Mirror:
    """A RequestMirror: a copy of a share (percent) of requests, answers discarded."""

    backend: Backend
    percent: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteAction:
    """What a matched HTTPRoute or GRPCRoute rule does.

    ``backends`` keep invalid ones with their weight (their share is answered 500, as the
    Gateway API requires); ``problem`` makes the whole rule answer 500 (an unsupported filter).
    ``grpc`` marks a GRPCRoute's rule: the proxy answers what it answers itself on it as a gRPC
    status, HTTP 200 with ``grpc-status`` (``route.grpc_status``), not as an HTTP error.
    """

    route: RouteRef
    backends: PVector[Backend] = pvector()
    request_headers: HeaderEdits | None = None
    response_headers: HeaderEdits | None = None
    redirect: Redirect | None = None
    rewrite: Rewrite | None = None
    mirrors: PVector[Mirror] = pvector()
    request_timeout: float | None = None
    backend_timeout: float | None = None
    cors: Cors | None = None
    retry: Retry | None = None
    problem: str | None = None
    grpc: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayRule:
    """One match of one rule, in precedence order within its host."""

    match: RouteMatch
    action: RouteAction


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerTable:
    """One listener's routing: host (route hostnames intersected with the listener's) → rules.

    ``port`` is the listener's spec port (redirects use it); ``hostname`` its hostname or ``*``.
    """

    gateway: str
    listener: str
    port: int
    protocol: str
    hostname: str
    hosts: PMap[str, PVector[GatewayRule]] = pmap()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerHealth:
    """The contract's ``listener_health`` entry for one listener."""

    gateway: str
    listener: str
    port: int
    target_port: int
    protocol: str
    hostname: str | None
    attached_routes: int
    ready: bool
    reason: str


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    """An address (IP or, for ExternalName Services, a DNS name) and port to connect to."""

    address: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What one proxy serves. ``version`` is ``sha256:`` + the hex digest of the content."""

    version: str
    scope: Scope
    ingress: IngressTable
    gateways: PMap[int, PMap[str, ListenerTable]] = pmap()
    tls: PMap[int, PMap[str, Certificate]] = pmap()
    client_certs: PMap[int, PMap[str, ClientValidation]] = pmap()
    listener_health: PVector[ListenerHealth] = pvector()
    endpoints: PMap[str, PVector[Endpoint]] = pmap()
