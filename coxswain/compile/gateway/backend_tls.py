"""BackendTLSPolicy (GEP-1897, gateway.networking.k8s.io/v1): which backends the proxy reaches
over TLS, how it verifies them, and each policy's status.

Rules:
1. Targets. A ``targetRefs`` entry names a core Service of the policy's namespace, optionally one
   of its ports by name (``sectionName``); other kinds are ignored with a warning. A backend
   (an HTTPRoute ``backendRef`` or ``RequestMirror``, by Service and port) takes the policy
   naming its Service port if there is one, else the policy naming its whole Service.
2. Precedence. Among policies naming the same target (Service, and ``sectionName`` or none) the
   oldest by creation time wins, then the first by ``namespace/name``
   (``BackendTLSPolicySpec.targetRefs``). A policy that loses any of its targets is
   ``Accepted=False/Conflicted`` and applies to none of them; a policy with and one without a
   ``sectionName`` never conflict (rule 1 says which one a port takes). Precedence is decided
   before validity: a policy that cannot be honoured still holds its targets.
3. Validation. ``caCertificateRefs`` name ConfigMaps (Core) or Secrets (implementation-specific)
   of the policy's namespace holding a PEM bundle in ``ca.crt``; another kind is
   ``ResolvedRefs=False/InvalidKind``, a missing object or one without a usable ``ca.crt``
   ``ResolvedRefs=False/InvalidCACertificateRef`` (the first problem names the reason). The
   usable bundles are trusted together; when none is, ``Accepted=False/NoValidCACertificate``.
   ``wellKnownCACertificates: System`` trusts the system's CAs; any other value, and anything
   the decoder kept in ``invalid``, is ``Accepted=False/Invalid``.
4. Failure is closed. The backends a policy holds (rule 2) while it is not accepted for a reason
   of its own (rule 3) are invalid: the proxy answers them 500 and never sends them plaintext
   ("Connections using an invalid CACertificateRef MUST fail, and the client MUST receive an
   HTTP 5xx error response").
5. Client certificate. A backend reached through a Gateway presents that Gateway's
   ``spec.tls.backend.clientCertificateRef`` (GEP-3155) when it resolved: the rules a route
   brings to a listener are secured for the listener's Gateway, so one Service reached through
   two Gateways presents each Gateway's own certificate.
6. Status. ``status.ancestors`` has one entry per Gateway of ours through which an accepted
   route reaches a target of the policy (by ``namespace/name``, at most 16 as the CRD bounds
   it), each with the policy's ``Accepted`` and ``ResolvedRefs``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from pyrsistent import pvector

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot import UpstreamTLS
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.model.gateway_objects import BackendTLSPolicy
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.snapshot import Backend, Certificate, GatewayRule, RouteAction

__all__ = ["NO_POLICIES", "BackendTLS", "PolicyVerdict", "judge_backend_tls"]

MAX_ANCESTORS: Final = 16  # PolicyStatus.ancestors: MaxItems=16
_CA_KINDS: Final = frozenset({("", "ConfigMap"), ("", "Secret")})
_SYSTEM: Final = "System"

Target = tuple[str, str, str | None]
"""(namespace, Service name, port name or None for the whole Service)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyVerdict:
    """One policy's judgement: its conditions, its ancestors (our Gateways, rule 6), the
    objects read to judge it, and the findings about it that are no condition."""

    policy: BackendTLSPolicy
    accepted: Condition
    resolved_refs: Condition
    ancestors: tuple[ObjectKey, ...]
    read: frozenset[ObjectKey]
    warnings: tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendTLS:
    """The policies in force by target (without client certificates), every verdict, the
    verdicts a compile of this scope reports (those reaching its Gateways; in the shared scope
    and offline, all), and the Services that name the ports of backends."""

    in_force: dict[Target, UpstreamTLS]
    verdicts: tuple[PolicyVerdict, ...]
    reported: tuple[PolicyVerdict, ...]
    services: ServiceIndex | None

    def settings(self, backend: Backend) -> UpstreamTLS | None:
        """The TLS of the policy ``backend`` takes (rule 1), or None."""
        if not self.in_force or not backend.valid or self.services is None:
            return None
        namespace, name = backend.namespace, backend.service
        port_name = _port_name(self.services, backend) or ""
        found = self.in_force.get((namespace, name, port_name)) if port_name else None
        return found or self.in_force.get((namespace, name, None))

    def secure(
        self,
        entries: Sequence[tuple[tuple[object, ...], GatewayRule]],
        client: Certificate | None,
    ) -> Sequence[tuple[tuple[object, ...], GatewayRule]]:
        """A route's entries with the TLS of every backend and mirror a policy holds, the
        client certificate ``client`` of the Gateway they are served by (rule 5). Entries
        without such a backend are returned as they are."""
        if not self.in_force:
            return entries
        actions: dict[int, RouteAction] = {}  # the entries of one rule share its action
        secured = []
        for precedence, rule in entries:
            action = actions.get(id(rule.action))
            if action is None:
                action = self._secured_action(rule.action, client)
                actions[id(rule.action)] = action
            if action is not rule.action:
                rule = replace(rule, action=action)
            secured.append((precedence, rule))
        return secured

    def _secured_action(self, action: RouteAction, client: Certificate | None) -> RouteAction:
        backends = [self._secured(b, client) for b in action.backends]
        mirrors = [
            replace(m, backend=secured)
            if (secured := self._secured(m.backend, client)) is not m.backend
            else m
            for m in action.mirrors
        ]
        if all(a is b for a, b in zip(backends, action.backends, strict=True)) and all(
            a is b for a, b in zip(mirrors, action.mirrors, strict=True)
        ):
            return action
        return replace(action, backends=pvector(backends), mirrors=pvector(mirrors))

    def _secured(self, backend: Backend, client: Certificate | None) -> Backend:
        settings = self.settings(backend)
        if settings is None:
            return backend
        if settings.problem is not None:
            return replace(backend, valid=False, tls=settings)
        return replace(backend, tls=replace(settings, client_certificate=client))


def judge_backend_tls(
    state: ClusterState,
    services: ServiceIndex,
    reached: Iterable[tuple[ObjectKey, Backend]],
    *,
    one_gateway: bool,
) -> BackendTLS:
    """Rules 1-4 and 6 for every BackendTLSPolicy. ``reached`` pairs each of our Gateways with
    each backend (and mirror backend) an accepted route brings to it; ``one_gateway``: the
    scope is one dedicated Gateway's, whose compile reports the policies reaching it only.
    Pure."""
    ordered = sorted(state.backend_tls_policies.values(), key=lambda p: p.meta.age_order)
    holder: dict[Target, BackendTLSPolicy] = {}
    conflicted: set[ObjectKey] = set()
    for policy in ordered:
        targets = _targets(policy)
        if any(t in holder for t in targets):
            conflicted.add(policy.meta.key)
            continue
        for target in targets:
            holder[target] = policy
    ancestors = _ancestors(ordered, services, reached)
    in_force: dict[Target, UpstreamTLS] = {}
    verdicts: list[PolicyVerdict] = []
    for policy in ordered:
        key = policy.meta.key
        read: set[ObjectKey] = set()
        resolved, bundle = _resolve_cas(policy, state, read)
        refusal = _refusal(policy, bundle)
        if key in conflicted:
            accepted = problem(
                "Accepted",
                "Conflicted",
                "an older policy (or one first by namespace/name) targets the same Service "
                "and sectionName",
                key=key,
                field="spec.targetRefs",
            )
        elif refusal is not None:
            accepted = refusal
        else:
            accepted = Condition(type="Accepted", status=True, reason="Accepted")
        if key not in conflicted:
            settings = UpstreamTLS(
                policy=key.ref,
                server_name=policy.hostname,
                ca_pem=None if bundle is None else bundle,
                subject_alt_names=policy.subject_alt_names,
                problem=None
                if refusal is None
                else f"BackendTLSPolicy {key.ref} cannot be honoured: {refusal.message}",
            )
            for target in _targets(policy):
                in_force[target] = settings
        verdicts.append(
            PolicyVerdict(
                policy=policy,
                accepted=accepted,
                resolved_refs=resolved,
                ancestors=tuple(sorted(ancestors.get(key, ()))[:MAX_ANCESTORS]),
                read=frozenset(read),
                warnings=tuple(_ignored_targets(policy)),
            )
        )
    return BackendTLS(
        in_force=in_force,
        verdicts=tuple(verdicts),
        reported=tuple(v for v in verdicts if v.ancestors or not one_gateway),
        services=services,
    )


NO_POLICIES: Final = BackendTLS(in_force={}, verdicts=(), reported=(), services=None)
"""Ingress-only: no BackendTLSPolicy is read."""


def _port_name(services: ServiceIndex, backend: Backend) -> str | None:
    """The name of the backend's Service port (``""`` when unnamed), None when not found."""
    service = services.service(backend.namespace, backend.service)
    return next(
        (p.name for p in (service.ports if service else ()) if p.port == backend.port), None
    )


def _targets(policy: BackendTLSPolicy) -> list[Target]:
    namespace = policy.meta.key.namespace
    return [
        (namespace, t.name, t.section_name)
        for t in policy.targets
        if (t.group, t.kind) == ("", "Service")
    ]


def _ignored_targets(policy: BackendTLSPolicy) -> list[Diagnostic]:
    return [
        Diagnostic(
            key=policy.meta.key,
            field=t.field,
            severity=Severity.WARNING,
            reason="InvalidKind",
            message=f"only core Services are BackendTLSPolicy targets; {t.group}/{t.kind} "
            f"{t.name} is ignored",
        )
        for t in policy.targets
        if (t.group, t.kind) != ("", "Service")
    ]


def _ancestors(
    policies: list[BackendTLSPolicy],
    services: ServiceIndex,
    reached: Iterable[tuple[ObjectKey, Backend]],
) -> dict[ObjectKey, set[ObjectKey]]:
    """Each policy's Gateways: those through which a backend named by one of its targets is
    reached, whether or not the policy won that target."""
    naming: dict[tuple[str, str], list[tuple[str | None, ObjectKey]]] = {}
    for policy in policies:
        for namespace, name, section in _targets(policy):
            naming.setdefault((namespace, name), []).append((section, policy.meta.key))
    found: dict[ObjectKey, set[ObjectKey]] = {}
    if not naming:
        return found
    for gateway, backend in reached:
        candidates = naming.get((backend.namespace, backend.service))
        if not candidates:
            continue
        port_name = _port_name(services, backend)
        for section, key in candidates:
            if section is None or section == port_name:
                found.setdefault(key, set()).add(gateway)
    return found


def _resolve_cas(
    policy: BackendTLSPolicy, state: ClusterState, read: set[ObjectKey]
) -> tuple[Condition, str | None]:
    """The ResolvedRefs condition (rule 3), and the usable bundles concatenated (None when
    none is)."""
    key = policy.meta.key
    bundles: list[str] = []
    unresolved: Condition | None = None
    for ref in policy.ca_refs:
        kind = f"{ref.group}/{ref.kind}" if ref.group else ref.kind
        where = f"{kind} {key.namespace}/{ref.name}"
        if (ref.group, ref.kind) not in _CA_KINDS:
            unresolved = unresolved or problem(
                "ResolvedRefs",
                "InvalidKind",
                f"{where}: a CA certificate is read from a ConfigMap or a Secret",
                key=key,
                field=ref.field,
            )
            continue
        held = ObjectKey(ref.kind, key.namespace, ref.name)
        read.add(held)
        holder = state.config_maps.get(held) if ref.kind == "ConfigMap" else state.secrets.get(held)
        bundle = None if holder is None else holder.ca_bundle
        if bundle is None:
            why = "does not exist" if holder is None else "holds no valid PEM bundle in ca.crt"
            unresolved = unresolved or problem(
                "ResolvedRefs",
                "InvalidCACertificateRef",
                f"{where} {why}",
                key=key,
                field=ref.field,
            )
            continue
        bundles.append(bundle if bundle.endswith("\n") else bundle + "\n")
    resolved = unresolved or Condition(type="ResolvedRefs", status=True, reason="ResolvedRefs")
    return resolved, "".join(bundles) if bundles else None


def _refusal(policy: BackendTLSPolicy, bundle: str | None) -> Condition | None:
    """Why the policy cannot be honoured (rule 3), as its Accepted condition; None when it can."""
    key = policy.meta.key
    if policy.invalid:
        field, why = policy.invalid[0]
        return problem("Accepted", "Invalid", why, key=key, field=field)
    if policy.well_known is not None and policy.well_known != _SYSTEM:
        return problem(
            "Accepted",
            "Invalid",
            f"wellKnownCACertificates {policy.well_known!r} is not supported (only System)",
            key=key,
            field="spec.validation.wellKnownCACertificates",
        )
    if policy.ca_refs and bundle is None:
        return problem(
            "Accepted",
            "NoValidCACertificate",
            "no CA certificate reference of the policy is usable",
            key=key,
            field="spec.validation.caCertificateRefs",
        )
    return None
