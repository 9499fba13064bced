"""Gateway listeners: what each listener is, whether it can serve, and why not.

A listener belongs to its ``owner``: the Gateway, or a ListenerSet attached to it (GEP-1713),
whose listeners are judged as the Gateway's are, with their own namespace for references.

Rules (Gateway API v1, ``Listener`` and ``ListenerStatus``):
1. Protocols HTTP, HTTPS, TLS, TCP and UDP are served; any other is
   ``Accepted=False/UnsupportedProtocol``.
2. Listeners of one Gateway on one port must be distinct: different protocols on one port are
   ``Conflicted=True/ProtocolConflict``; the same protocol and hostname twice is
   ``Conflicted=True/HostnameConflict``. TLS listeners in Passthrough and Terminate mode on
   one port (GEP-2643, "TLSRoute + Mixed Termination", the Extended feature
   ``TLSRouteModeMixed``) are served where the experimental channel is installed
   (``mixed``: the stream listeners pick the listener by SNI, then pass through or
   terminate) and otherwise conflict as two protocols do, ``ProtocolConflict``, as the GEP
   requires of an implementation that does not support the mode. Every indistinct listener
   of one object is refused, never a winner. Across objects precedence decides (GEP-1713,
   "Listener and ListenerSet Conflicts"): a listener indistinct from one an earlier object
   holds (``claimed``) is Conflicted, whatever else is wrong with it, and the earlier one
   keeps serving.
3. HTTPS terminates TLS with ``certificateRefs`` to ``kubernetes.io/tls`` Secrets (core group);
   another namespace needs a ReferenceGrant (``RefNotPermitted``); a missing, wrong-kind or
   malformed reference is ``InvalidCertificateRef``. Passthrough on HTTPS is refused. A TLS
   listener's ``tls.mode`` is ``Passthrough`` (no certificate: the proxy routes by SNI and the
   backend terminates) or ``Terminate`` (the default), which needs certificates as HTTPS does.
4. ``allowedRoutes.kinds``: HTTPRoute and GRPCRoute are served on HTTP and HTTPS, and both
   are a listener's kinds when it names none (GEP-1016, "Transport": GRPCRoute is used with the
   existing ``HTTP`` and ``HTTPS`` protocols); TLSRoute on TLS, TCPRoute on TCP, UDPRoute on UDP
   (Gateway API v1 ``ProtocolType``); others are dropped from ``supportedKinds`` with
   ``ResolvedRefs=False/InvalidRouteKinds``.
5. Frontend client-certificate validation (``spec.tls.frontend``, per port over default) on
   HTTPS listeners: CA references to ConfigMaps or Secrets holding ``ca.crt``. A bad reference is
   ``ResolvedRefs=False`` (``InvalidCACertificateRef``/``InvalidCACertificateKind``/
   ``RefNotPermitted``); when none is usable, ``Accepted=False/NoValidCACertificate``.
6. A listener is served when its Gateway is accepted, it is accepted and not conflicted, some
   route kind is supported and, for HTTPS and TLS Terminate, its certificates resolved. Partly
   unresolved references (some route kinds, some CA bundles) are reported and the rest is
   served ("the implementation MUST reference the valid Route kinds that have been
   specified").
Each problem condition carries its diagnostic on the owner, at the field it is about
(``spec.listeners[i].protocol``, the certificate or CA reference, the listener for conflicts).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from coxswain.compile.hostnames import is_hostname, is_wildcard
from coxswain.compile.model.gateway_objects import GATEWAY_GROUP
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot import Certificate, ClientValidation
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.model.gateway_objects import Gateway, Listener, ListenerSet, ObjectRef
    from coxswain.compile.model.state import ClusterState

__all__ = [
    "STREAM_PROTOCOLS",
    "SUPPORTED_PROTOCOLS",
    "ListenerVerdict",
    "holds_claim",
    "judge_listeners",
    "resolve_certificate",
]

_HTTP_KINDS: Final = ((GATEWAY_GROUP, "HTTPRoute"), (GATEWAY_GROUP, "GRPCRoute"))
_ROUTE_KINDS: Final = {
    "HTTP": _HTTP_KINDS,
    "HTTPS": _HTTP_KINDS,
    "TLS": ((GATEWAY_GROUP, "TLSRoute"),),
    "TCP": ((GATEWAY_GROUP, "TCPRoute"),),
    "UDP": ((GATEWAY_GROUP, "UDPRoute"),),
}
"""The route kinds served on each listener protocol, in the order ``supportedKinds`` lists
them."""
SUPPORTED_PROTOCOLS: Final = frozenset(_ROUTE_KINDS)
STREAM_PROTOCOLS: Final = frozenset({"TLS", "TCP", "UDP"})
"""The layer-4 protocols: their listeners carry streams or datagrams, not HTTP requests."""


@dataclass(slots=True, kw_only=True)
class ListenerVerdict:
    """The judgement of one listener (built here, read by later passes, never mutated after).

    ``gateway`` is the Gateway that serves it; ``owner`` the key of the object that declares
    it, the Gateway or a ListenerSet.
    """

    gateway: Gateway
    owner: ObjectKey
    listener: Listener
    supported_kinds: tuple[tuple[str, str], ...] = ()
    accepted: Condition = Condition(type="Accepted", status=True, reason="Accepted")
    conflicted: Condition = Condition(type="Conflicted", status=False, reason="NoConflicts")
    resolved_refs: Condition = Condition(type="ResolvedRefs", status=True, reason="ResolvedRefs")
    certificate: Certificate | None = None
    client_validation: ClientValidation | None = None
    read: set[ObjectKey] = field(default_factory=set)
    gateway_accepted: bool = True

    @property
    def serving(self) -> bool:
        """Whether this listener is served (and routes attached to it take traffic).

        A listener with some unresolved references still serves what resolved (valid route
        kinds, usable CA bundles); one that terminates TLS without its certificate cannot.
        """
        return (
            self.gateway_accepted
            and self.accepted.status
            and not self.conflicted.status
            and bool(self.supported_kinds)
            and (not self.terminates_tls or self.certificate is not None)
        )

    @property
    def terminates_tls(self) -> bool:
        """Whether the proxy terminates TLS on this listener: HTTPS, and TLS but in
        ``Passthrough`` mode."""
        protocol = self.listener.protocol
        return protocol == "HTTPS" or (
            protocol == "TLS" and self.listener.tls_mode != "Passthrough"
        )

    @property
    def qualified_name(self) -> str:
        """The listener's name among all its Gateway serves: a Gateway's own listener by its
        name, a ListenerSet's as ``ns/listenerset/name`` (GEP-1713: names are unique within
        their object only; a listener name cannot hold ``/``)."""
        if self.owner.kind == "Gateway":
            return self.listener.name
        return f"{self.owner.ref}/{self.listener.name}"

    @property
    def host_key(self) -> str:
        """The listener hostname, or ``*`` when it matches every host."""
        return self.listener.hostname or "*"


def judge_listeners(
    gateway: Gateway,
    state: ClusterState,
    grants: Grants,
    *,
    listener_set: ListenerSet | None = None,
    claimed: Sequence[ListenerVerdict] = (),
    mixed: bool = False,
) -> list[ListenerVerdict]:
    """Judge the listeners of one of our Gateways, or of ``listener_set`` attached to it, whose
    objects of higher precedence hold the listeners ``claimed`` (rule 2; ``mixed``: TLS modes
    may share a port). Pure."""
    owner, listeners = (
        (gateway.meta.key, gateway.listeners)
        if listener_set is None
        else (listener_set.meta.key, listener_set.listeners)
    )
    verdicts = [_judge(gateway, owner, listener, state, grants) for listener in listeners]
    _mark_claimed(claimed, verdicts, mixed)
    _mark_conflicts([v for v in verdicts if v.accepted.status and not v.conflicted.status], mixed)
    return verdicts


def _protocol(listener: Listener, mixed: bool) -> str:
    """What must be the same of listeners sharing a port (rule 2): the protocol, and a TLS
    listener's mode unless modes may mix."""
    if listener.protocol != "TLS" or mixed:
        return listener.protocol
    return f"TLS ({listener.tls_mode or 'Terminate'})"


def holds_claim(verdict: ListenerVerdict) -> bool:
    """Whether a listener keeps lower-precedence ones off its port and hostname: it is accepted
    and not conflicted. A listener refused for its own reasons claims nothing."""
    return verdict.accepted.status and not verdict.conflicted.status


def _problem(
    verdict: ListenerVerdict, type_: str, reason: str, message: str, field: str
) -> Condition:
    """A problem condition of the listener, reported on its owner at ``field``."""
    key = verdict.owner
    return problem(type_, reason, message, key=key, field=field, status=type_ == "Conflicted")


def _judge(
    gateway: Gateway, owner: ObjectKey, listener: Listener, state: ClusterState, grants: Grants
) -> ListenerVerdict:
    verdict = ListenerVerdict(gateway=gateway, owner=owner, listener=listener)
    if listener.protocol not in SUPPORTED_PROTOCOLS:
        verdict.accepted = _problem(
            verdict,
            "Accepted",
            "UnsupportedProtocol",
            f"protocol {listener.protocol} is not supported; "
            f"{', '.join(sorted(SUPPORTED_PROTOCOLS))} are",
            f"{listener.field}.protocol",
        )
        return verdict
    if listener.hostname is not None and not (
        is_hostname(listener.hostname) or is_wildcard(listener.hostname)
    ):
        verdict.accepted = _problem(
            verdict,
            "Accepted",
            "UnsupportedValue",
            f"hostname {listener.hostname!r} is not a DNS name or a '*.' wildcard",
            f"{listener.field}.hostname",
        )
        return verdict
    kinds = listener.allowed_routes.kinds
    served = _ROUTE_KINDS[listener.protocol]
    if kinds is None:
        verdict.supported_kinds = served
    else:
        verdict.supported_kinds = tuple(dict.fromkeys(k for k in kinds if k in served))
        invalid = [f"{g}/{k}" if g else k for g, k in kinds if (g, k) not in served]
        if invalid:
            names = " and ".join(k for _, k in served)
            verdict.resolved_refs = _problem(
                verdict,
                "ResolvedRefs",
                "InvalidRouteKinds",
                f"route kinds {', '.join(invalid)} are not supported on "
                f"{listener.protocol} listeners; {names} {'are' if len(served) > 1 else 'is'}",
                f"{listener.field}.allowedRoutes.kinds",
            )
    if listener.protocol == "TLS":
        if listener.tls_mode not in (None, "Terminate", "Passthrough"):
            verdict.accepted = _problem(
                verdict,
                "Accepted",
                "UnsupportedValue",
                f"TLS mode {listener.tls_mode} is not supported; Terminate and Passthrough are",
                f"{listener.field}.tls.mode",
            )
        elif verdict.terminates_tls:
            _judge_certificates(verdict, state, grants)
    if listener.protocol == "HTTPS":
        _judge_tls(verdict, state, grants)
        if verdict.accepted.status:
            _judge_frontend(verdict, state, grants)
    return verdict


def _judge_tls(verdict: ListenerVerdict, state: ClusterState, grants: Grants) -> None:
    listener = verdict.listener
    if listener.tls_mode not in (None, "Terminate"):
        verdict.accepted = _problem(
            verdict,
            "Accepted",
            "UnsupportedValue",
            f"TLS mode {listener.tls_mode} is not supported on HTTPS listeners",
            f"{listener.field}.tls.mode",
        )
        return
    _judge_certificates(verdict, state, grants)


def _judge_certificates(verdict: ListenerVerdict, state: ClusterState, grants: Grants) -> None:
    """The certificates a listener that terminates TLS serves (rule 3)."""
    listener = verdict.listener
    if not listener.certificate_refs:
        verdict.resolved_refs = _problem(
            verdict,
            "ResolvedRefs",
            "InvalidCertificateRef",
            "an HTTPS listener needs tls.certificateRefs"
            if listener.protocol == "HTTPS"
            else "a TLS listener in Terminate mode needs tls.certificateRefs",
            f"{listener.field}.tls.certificateRefs",
        )
        return
    for ref in listener.certificate_refs:
        reason, message, certificate = resolve_certificate(
            verdict.owner, ref, state, grants, verdict.read
        )
        if certificate is None:
            verdict.resolved_refs = _problem(verdict, "ResolvedRefs", reason, message, ref.field)
            verdict.certificate = None
            return
        if verdict.certificate is None:
            verdict.certificate = certificate


def resolve_certificate(
    owner: ObjectKey,
    ref: ObjectRef,
    state: ClusterState,
    grants: Grants,
    read: set[ObjectKey],
    *,
    invalid: str = "InvalidCertificateRef",
) -> tuple[str, str, Certificate | None]:
    """A certificate reference of ``owner`` (a Gateway or a ListenerSet) resolved: the
    condition reason and message, and the certificate (None when the reason is a problem:
    ``RefNotPermitted`` or ``invalid``). The reference resolves from the owner's namespace,
    under ReferenceGrants from the owner's kind: a ListenerSet inherits none of its Gateway's
    (GEP-1713, "ReferenceGrant Semantics"). The Secret's key goes into ``read``."""
    namespace = ref.namespace or owner.namespace
    kind = f"{ref.group}/{ref.kind}" if ref.group else ref.kind
    where = f"{kind} {namespace}/{ref.name}"
    if (ref.group, ref.kind) != ("", "Secret"):
        return invalid, f"{where}: only core Secrets hold certificates", None
    if not grants.allows(
        source=(GATEWAY_GROUP, owner.kind, owner.namespace),
        target=("", "Secret", namespace, ref.name),
    ):
        return "RefNotPermitted", f"{where}: no ReferenceGrant allows this reference", None
    key = ObjectKey("Secret", namespace, ref.name)
    read.add(key)
    secret = state.secrets.get(key)
    if secret is None:
        return invalid, f"{where} does not exist", None
    if secret.type != "kubernetes.io/tls":
        return (
            invalid,
            f"{where} is of type {secret.type}, not kubernetes.io/tls",
            None,
        )
    if secret.keypair is None:
        return invalid, f"{where}: {secret.problem}", None
    certificate = Certificate(
        chain_pem=secret.keypair.chain_pem, key_pem=secret.keypair.key_pem, secret=key.ref
    )
    return "ResolvedRefs", "", certificate


_CA_KINDS: Final = frozenset({("", "ConfigMap"), ("", "Secret")})


def _judge_frontend(verdict: ListenerVerdict, state: ClusterState, grants: Grants) -> None:
    """The Gateway's ``spec.tls.frontend`` validation of the listener's port: it holds for every
    listener on that port, a ListenerSet's too (the port is the Gateway's). Its references are
    the Gateway's, so they resolve from the Gateway's namespace under the Gateway's grants; on
    a ListenerSet's listener a problem is reported at the listener, naming the Gateway."""
    gateway, listener = verdict.gateway, verdict.listener
    validation = gateway.frontend_per_port.get(listener.port, gateway.frontend_default)
    if validation is None:
        return
    own = verdict.owner == gateway.meta.key
    prefix = "" if own else f"Gateway {gateway.meta.key.ref} {validation.field}: "

    def fault(type_: str, reason: str, message: str, field: str) -> Condition:
        return _problem(verdict, type_, reason, prefix + message, field if own else listener.field)

    bundles: list[str] = []
    unresolved: Condition | None = None
    for ref in validation.ca_refs:
        namespace = ref.namespace or gateway.meta.key.namespace
        where = f"{ref.kind} {namespace}/{ref.name}"
        if (ref.group, ref.kind) not in _CA_KINDS:
            unresolved = unresolved or fault(
                "ResolvedRefs",
                "InvalidCACertificateKind",
                f"{where}: not a ConfigMap or Secret",
                ref.field,
            )
            continue
        if not grants.allows(
            source=(GATEWAY_GROUP, "Gateway", gateway.meta.key.namespace),
            target=("", ref.kind, namespace, ref.name),
        ):
            unresolved = unresolved or fault(
                "ResolvedRefs",
                "RefNotPermitted",
                f"{where}: no ReferenceGrant allows it",
                ref.field,
            )
            continue
        key = ObjectKey(ref.kind, namespace, ref.name)
        verdict.read.add(key)
        holder = state.config_maps.get(key) if ref.kind == "ConfigMap" else state.secrets.get(key)
        bundle = None if holder is None else holder.ca_bundle
        if bundle is None:
            why = "does not exist" if holder is None else "holds no valid ca.crt"
            unresolved = unresolved or fault(
                "ResolvedRefs", "InvalidCACertificateRef", f"{where} {why}", ref.field
            )
            continue
        bundles.append(bundle)
    if unresolved is not None:
        verdict.resolved_refs = unresolved
    if not bundles:
        verdict.accepted = fault(
            "Accepted",
            "NoValidCACertificate",
            "no CA certificate reference of the frontend validation is usable",
            validation.field,
        )
        return
    verdict.client_validation = ClientValidation(
        ca_pem="".join(b if b.endswith("\n") else b + "\n" for b in bundles), mode=validation.mode
    )


def _mark_claimed(
    claimed: Sequence[ListenerVerdict], verdicts: list[ListenerVerdict], mixed: bool
) -> None:
    """Rule 2 across objects: a listener on a port an earlier object holds with another
    protocol, or with the same protocol and hostname, is Conflicted, even one refused for
    another reason (the conflict is the more specific finding). The message names neither the
    object nor the listener that holds the port (GEP-1713: a ListenerSet learns nothing of its
    parent's or siblings' configuration)."""
    protocols: dict[int, str] = {}
    hosts: set[tuple[int, str, str]] = set()
    for holder in claimed:
        protocols.setdefault(holder.listener.port, _protocol(holder.listener, mixed))
        hosts.add((holder.listener.port, holder.listener.protocol, holder.host_key))
    for verdict in verdicts:
        listener = verdict.listener
        held = protocols.get(listener.port)
        if held is None:
            continue
        if held != _protocol(listener, mixed):
            _conflict(
                verdict,
                "ProtocolConflict",
                f"port {listener.port} is held with protocol {held} by a listener that takes "
                "precedence (GEP-1713)",
            )
        elif (listener.port, listener.protocol, verdict.host_key) in hosts:
            _conflict(
                verdict,
                "HostnameConflict",
                f"port {listener.port} and hostname {verdict.host_key!r} are held by a "
                "listener that takes precedence (GEP-1713)",
            )


def _mark_conflicts(verdicts: list[ListenerVerdict], mixed: bool) -> None:
    by_port: dict[int, list[ListenerVerdict]] = defaultdict(list)
    for verdict in verdicts:
        by_port[verdict.listener.port].append(verdict)
    for port, group in by_port.items():
        protocols = {_protocol(v.listener, mixed) for v in group}
        if len(protocols) > 1:
            for verdict in group:
                _conflict(
                    verdict,
                    "ProtocolConflict",
                    f"port {port} is used by listeners of protocols {', '.join(sorted(protocols))}",
                )
            continue
        hosts: dict[str, list[ListenerVerdict]] = defaultdict(list)
        for verdict in group:
            hosts[verdict.host_key].append(verdict)
        for host, same in hosts.items():
            if len(same) > 1:
                names = ", ".join(v.listener.name for v in same)
                for verdict in same:
                    _conflict(
                        verdict,
                        "HostnameConflict",
                        f"listeners {names} share port {port} and hostname {host!r}",
                    )


def _conflict(verdict: ListenerVerdict, reason: str, message: str) -> None:
    field = verdict.listener.field
    verdict.conflicted = _problem(verdict, "Conflicted", reason, message, field)
    verdict.accepted = _problem(verdict, "Accepted", reason, message, field)  # the same finding
