"""The snapshot a proxy serves, with everything derived from it for the request path.

:class:`Served` is built once per applied snapshot and never changed afterwards except for
its memos, whose entries are functions of the snapshot alone: swapping ``Proxy.served`` swaps
them too, so no memo outlives the routing it was computed from (docs/architecture.md).

- **Routing memo.** ``select`` is pure, and on every port whose rules read no request header
  its decision depends only on (port, method, target, Host, SNI): the proxy remembers it per
  key, with what the access log and the metrics need from it. Ports with header matches
  (Gateway API ``matches[].headers``) or CORS filters (which read ``Origin`` and the
  preflight's fields) are decided per request. The memo holds at most
  ``ROUTE_MEMO_SIZE`` entries and starts over when full, so hostile clients sending random
  paths cost one ``select`` per request, as without it, and bounded memory.
- **Header edits as bytes.** A Gateway API header modifier is converted to bytes and checked
  for the wire once per snapshot (:func:`~coxswain.route.forward.wire_edits`), not per request.
- **TLS**: the route table's certificate stores as ``ssl`` contexts (:mod:`.tls`), the front
  context per port noting the SNI name for routing; the client contexts of the backends a
  BackendTLSPolicy secures, one per distinct setting, made on first use (:mod:`.upstream_tls`).
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import math
import random
from functools import partial
from typing import TYPE_CHECKING, Final

from coxswain.compile.regex import compile_pattern
from coxswain.compile.snapshot import UpstreamTLS
from coxswain.http1.serialize import check_fields
from coxswain.route import RequestHead as RouteHead
from coxswain.route import build_table, select
from coxswain.route.canary import CanaryCheck
from coxswain.route.client_tls import PASSED_FIELDS, client_tls_outcome
from coxswain.route.forward import WireEdits, wire_edits
from coxswain.route.htpasswd import verify
from coxswain.route.ingress_access import AccessCheck
from coxswain.route.ingress_request import LIMITED, answered, checked
from coxswain.route.plan import listener_specs
from coxswain.shell.dataplane.affinity import pinned
from coxswain.shell.dataplane.client_tls import ClientCertificates
from coxswain.shell.dataplane.rate_limits import RateLimits
from coxswain.shell.dataplane.tls import TLSContexts
from coxswain.shell.dataplane.upstream_tls import Origination, Originations

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable, Sequence

    from coxswain.compile.snapshot import (
        ClientTLS,
        Endpoint,
        ExternalAuth,
        HeaderEdits,
        PathRule,
        RouteAction,
        Snapshot,
    )
    from coxswain.http1 import RequestHead
    from coxswain.route import Decision
    from coxswain.route.table import RouteTable

__all__ = ["ROUTE_MEMO_SIZE", "Routed", "Served", "handshake_sni", "route_timeout"]

ROUTE_MEMO_SIZE: Final = 4096

handshake_sni: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "coxswain_handshake_sni", default=None
)
"""The server name the client sent in its TLS handshake, set by the front context's SNI
callback inside the handshaking task's context."""


class Routed:
    """A routing decision and what the request path derives from it, computed once per key.

    ``label`` names the route for the access log, ``metric`` for the request counter;
    ``host`` and ``target`` are the Host and request-target to forward as bytes, None when
    they cannot be written on the wire (not Latin-1); ``timeout`` bounds the whole exchange
    (:func:`route_timeout`); ``backends`` are the decision's backends with a weight above 0,
    ``weights`` their weights, for the weighted choice. ``place``, when set, is the routing
    this one replaced, which holds the request's place under ``limit-connections``
    (:mod:`.rate_limits`) while the request lasts.
    """

    __slots__ = (
        "__weakref__",  # a request's place under limit-connections (.rate_limits)
        "backends",
        "decision",
        "host",
        "label",
        "metric",
        "place",
        "target",
        "timeout",
        "weights",
    )

    place: Routed  # set only on a routing that replaced another

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        route = decision.route
        self.label = f"{route.kind} {route.namespace}/{route.name} {route.rule}" if route else None
        self.metric = (route.kind, route.namespace, route.name) if route else None
        self.host = _latin1(decision.host)
        self.target = _latin1(decision.path)
        self.timeout = route_timeout(decision.action)
        self.backends = tuple(b for b in decision.backends if b.weight > 0)
        self.weights = tuple(b.weight for b in self.backends)


def route_timeout(action: RouteAction | None) -> float:
    """The bound on a whole exchange: the smaller of the HTTPRoute rule's ``request`` and
    ``backendRequest`` timeouts (GEP-1742), infinity when neither is set."""
    timeouts = [t for t in (action.request_timeout, action.backend_timeout) if t] if action else []
    return min(timeouts, default=math.inf)


def _latin1(text: str) -> bytes | None:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return None


class Served:
    """A snapshot and what is derived from it; see the module docstring."""

    __slots__ = (
        "_access",
        "_auth_tls",
        "_canaries",
        "_certificates",
        "_edits",
        "_fronts",
        "_header_ports",
        "_limits",
        "_rng",
        "_routes",
        "_subjects",
        "_verified",
        "auth_answers",
        "endpoints",
        "originations",
        "passthrough",
        "snapshot",
        "specs",
        "table",
        "tls",
    )

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        ingress_http_port: int,
        ingress_https_port: int,
        rate_limits: RateLimits | None = None,
        previous: Served | None = None,
    ) -> None:
        """``previous``: the one served before, whose index entries for unchanged route hosts
        are reused (``route.table.build_table``)."""
        self.snapshot = snapshot
        self._limits = RateLimits() if rate_limits is None else rate_limits
        self._rng = random.Random()  # new session-affinity keys (.affinity)
        self._certificates = ClientCertificates()
        self._subjects: dict[int, Callable[[str], bool]] = {}
        # ``auth-cache-key``: (auth id, key) → (until, status, fields), .external_auth
        self.auth_answers: dict[
            tuple[int, str], tuple[float, int | None, list[tuple[bytes, bytes]]]
        ] = {}
        # a plain dict: a persistent map's lookup is four Python calls per request
        self.endpoints: dict[str, Sequence[Endpoint]] = dict(snapshot.endpoints)
        self.table: RouteTable = build_table(
            snapshot,
            ingress_http_port=ingress_http_port,
            ingress_https_port=ingress_https_port,
            previous=None if previous is None else previous.table,
        )
        self.tls = TLSContexts(self.table)
        self.originations = Originations()
        self.specs = listener_specs(
            snapshot, ingress_http_port=ingress_http_port, ingress_https_port=ingress_https_port
        )
        self._fronts: dict[int, ssl.SSLContext] = {}
        self.passthrough: dict[str, PathRule] = {
            host: vhost.passthrough
            for host, vhost in snapshot.ingress.hosts.items()
            if vhost.passthrough is not None
        }
        self._header_ports = frozenset(
            port
            for port, index in self.table.gateway_ports.items()
            if any(
                host.reads_headers
                for listener in index.listeners()
                for host in listener.route_hosts()
            )
        )
        self._routes: dict[tuple[int, bytes, bytes, bytes | None, str | None], Routed] = {}
        self._edits: dict[int, WireEdits | ValueError] = {}
        self._access: dict[int, AccessCheck] = {}
        self._canaries: dict[int, CanaryCheck] = {}
        self._verified: dict[bytes, bool] = {}
        self._auth_tls: dict[int, Origination] = {}

    def route(
        self, port: int, head: RequestHead, *, tls: bool, sni: str | None, client: str | None = None
    ) -> Routed:
        """The decision for a request arriving on ``port`` from ``client`` (the peer's
        address), with the per-request checks of an Ingress path's annotations run."""
        routed = self._route(port, head, tls=tls, sni=sni)
        checks = routed.decision.checks
        if checks is None:
            return routed
        access = self._access.get(id(checks))  # the snapshot keeps every action alive: ids hold
        if access is None:
            access = self._access[id(checks)] = AccessCheck(checks)
        canary = None
        if checks.canary is not None:
            canary = self._canaries.get(id(checks.canary))
            if canary is None:
                canary = self._canaries[id(checks.canary)] = CanaryCheck(checks.canary)
        limits = checks.rate_limit
        decision = checked(
            routed.decision,
            checks,
            access,
            canary,
            client=client,
            method=head.method.decode("latin-1"),
            headers=head.headers,
            content_length=head.content_length,
            verify=self._verify,
            limit=None if limits is None else partial(self._limits.refusal, limits, client),
        )
        if checks.client_tls is not None:
            decision = self._client_tls(
                routed.decision if decision is None else decision, checks.client_tls, head, tls
            )
        if checks.affinity is not None:
            decision = pinned(
                self.endpoints,
                routed.decision if decision is None else decision,
                checks.affinity,
                head.headers,
                https=tls,
                rng=self._rng,
            )
        if limits is None or not limits.connections:
            return routed if decision is None else Routed(decision)
        fresh = Routed(routed.decision if decision is None else decision)  # one per request
        if fresh.decision.status is None:
            over = self._limits.hold(limits, client, fresh)
            if over is not None:
                return Routed(answered(fresh.decision, LIMITED, f"refused: {over}"))
        return fresh

    def _client_tls(
        self, decision: Decision, check: ClientTLS, head: RequestHead, tls: bool
    ) -> Decision:
        """``auth-tls-*`` (``route.client_tls``): the decision answered 400 (or redirected
        to the error page), or forwarded with the certificate's fields, set on ``head``."""
        if decision.status is not None:
            return decision
        certificate = self._certificates.read(check.ca_pem) if tls else None
        matcher = None
        if check.match_cn is not None:
            matcher = self._subjects.get(id(check))  # the snapshot keeps every action alive
            if matcher is None:
                found = compile_pattern(f"(?s).*(?:{check.match_cn}).*")
                matcher = self._subjects[id(check)] = (
                    (lambda _: False) if isinstance(found, str) else found.matches
                )
        status, location, fields = client_tls_outcome(
            check, certificate, https=tls, subject_matches=matcher
        )
        if status is not None:
            answer = answered(decision, status, "refused: the client certificate check failed")
            return dataclasses.replace(answer, redirect=location)
        kept = [(n, v) for n, v in head.headers if n.lower() not in PASSED_FIELDS]
        head.headers = (*kept, *fields)  # the parsed head is this request's own
        return decision

    def auth_origination(self, auth: ExternalAuth) -> Origination | None:
        """The TLS towards an ``https`` auth URL (``shell.dataplane.external_auth``): verified
        against the system's CAs, the URL's host as SNI and name; None for ``http``.

        Raises:
            ssl.SSLError: the system's CAs cannot be loaded.
        """
        if not auth.tls:
            return None
        found = self._auth_tls.get(id(auth))  # the snapshot keeps every action alive: ids hold
        if found is None:
            tls = UpstreamTLS(policy=f"auth-url {auth.url}", server_name=auth.host)
            found = self._auth_tls[id(auth)] = self.originations.get(tls)
        return found

    def _verify(self, password: bytes, hashed: str) -> bool:
        """``htpasswd.verify``, remembered: a bcrypt check costs tens of milliseconds of the
        event loop, so each (hash, password) pair is checked once per snapshot."""
        key = hashlib.sha256(hashed.encode("latin-1", "replace") + b"\0" + password).digest()
        known = self._verified.get(key)
        if known is None:
            if len(self._verified) >= ROUTE_MEMO_SIZE:
                self._verified.clear()
            known = self._verified[key] = verify(password, hashed)
        return known

    def _route(self, port: int, head: RequestHead, *, tls: bool, sni: str | None) -> Routed:
        key = (port, head.method, head.target, head.host, sni)
        routed = self._routes.get(key)
        if routed is not None:
            return routed
        routed = Routed(
            select(
                self.table,
                RouteHead(
                    port=port,
                    method=head.method.decode("latin-1"),
                    target=head.target.decode("latin-1"),
                    host=None if head.host is None else head.host.decode("latin-1"),
                    tls=tls,
                    sni=sni,
                    headers=tuple(
                        (n.decode("latin-1"), v.decode("latin-1")) for n, v in head.headers
                    ),
                ),
            )
        )
        if port not in self._header_ports:
            if len(self._routes) >= ROUTE_MEMO_SIZE:
                self._routes.clear()
            self._routes[key] = routed
        return routed

    def edits(self, edits: HeaderEdits) -> WireEdits:
        """``edits`` as bytes, checked for the wire.

        Raises:
            ValueError: a name or value cannot be written in a header field.
        """
        found = self._edits.get(id(edits))  # the snapshot keeps every edit alive: ids hold
        if found is None:
            try:
                found = wire_edits(edits)
                check_fields(found.set + found.add)
            except ValueError as err:
                found = err
            self._edits[id(edits)] = found
        if isinstance(found, ValueError):
            raise found
        return found

    def tls_port(self, port: int) -> int:
        """The key of the TLS stores for a local port: the Ingress HTTPS listener's store is
        keyed by the advertised port (``ingress.https_port``), a Gateway's by its own."""
        if port == self.table.ingress_https_port and port not in self.snapshot.gateways:
            return self.snapshot.ingress.https_port
        return port

    def passing(self, port: int) -> dict[str, PathRule] | None:
        """The hosts passed through on ``port`` (:mod:`.passthrough`), or None when it
        terminates every TLS connection: it is not the Ingress HTTPS port, or no Ingress asks."""
        if not self.passthrough or port != self.table.ingress_https_port:
            return None
        return None if port in self.snapshot.gateways else self.passthrough

    def admits(
        self, port: int, server_name: str | None, peer_der: bytes | None, verified: bool
    ) -> bool:
        """Whether the listener ``server_name`` selects on ``port`` admits this client."""
        return self.tls.admits(self.tls_port(port), server_name, peer_der, verified)

    def front(self, port: int) -> ssl.SSLContext:
        """The port's front context, its SNI callback also noting the name for routing."""
        context = self._fronts.get(port)
        if context is None:
            context = self.tls.front(self.tls_port(port))
            inner = context.sni_callback

            def note(
                connection: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext
            ) -> int | None:
                handshake_sni.set(name)  # runs inside the handshaking task's context
                return inner(connection, name, ctx) if inner is not None else None  # type: ignore[arg-type]

            context.sni_callback = note
            self._fronts[port] = context
        return context
