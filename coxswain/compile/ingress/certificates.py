"""Ingress ``spec.tls`` → the TLS store of the Ingress HTTPS port.

Rules:
1. ``secretName`` names a ``kubernetes.io/tls`` Secret in the Ingress's namespace whose chain
   and key parsed and matched (``compile.tls``). Otherwise the entry is reported and its hosts
   keep serving plain HTTP.
2. Each host of the entry gets the certificate for that SNI name; an entry without hosts gives
   the port's default certificate (key ``*``: the spec's "wildcard host" of the load balancer).
3. Two Ingresses giving one host different certificates: the older Ingress wins (then
   ``ns/name``), and the other is reported.
4. A certificate that does not name the host is served anyway (as ingress-nginx does) with a
   warning, because clients will refuse it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrsistent import pmap

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.hostnames import wildcard_parent
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot import CATCH_ALL, Certificate
from coxswain.compile.tls import covers

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyrsistent.typing import PMap

    from coxswain.compile.model.objects import Ingress, IngressTLS
    from coxswain.compile.model.state import ClusterState

__all__ = ["has_certificate", "ingress_certificates"]


def ingress_certificates(
    ingresses: Sequence[Ingress], state: ClusterState
) -> tuple[PMap[str, Certificate], list[Diagnostic], set[ObjectKey]]:
    """Certificates by SNI host for the Ingress HTTPS port. Pure.

    Args:
        ingresses: our Ingresses, oldest first (precedence order).
        state: where the Secrets are.

    Returns:
        The certificates, the findings, and the keys of the Secrets read.
    """
    certificates: dict[str, Certificate] = {}
    winners: dict[str, ObjectKey] = {}
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    for ingress in ingresses:
        for entry in ingress.tls:
            certificate = _certificate(ingress, entry, state, found, read)
            if certificate is None:
                continue
            for host in entry.hosts or (CATCH_ALL,):
                holder = certificates.get(host)
                if holder is None:
                    certificates[host] = certificate
                    winners[host] = ingress.meta.key
                elif holder.secret != certificate.secret:
                    found.append(
                        _finding(
                            ingress,
                            entry.field,
                            Severity.WARNING,
                            "CertificateConflict",
                            f"host {host!r} already has the certificate of Secret "
                            f"{holder.secret} from {winners[host]}, which takes precedence "
                            "(older, then first by namespace/name); this entry is not used for it",
                        )
                    )
    return pmap(certificates), found, read


def has_certificate(certificates: PMap[str, Certificate], host: str) -> bool:
    """Whether SNI ``host`` finds a certificate of its own (exact or wildcard, not default)."""
    if host in certificates:
        return host != CATCH_ALL
    parent = wildcard_parent(host)
    return parent is not None and f"*.{parent}" in certificates


def _certificate(
    ingress: Ingress,
    entry: IngressTLS,
    state: ClusterState,
    found: list[Diagnostic],
    read: set[ObjectKey],
) -> Certificate | None:
    field = f"{entry.field}.secretName"
    if entry.secret_name is None:
        found.append(
            _finding(
                ingress,
                field,
                Severity.WARNING,
                "MissingSecretName",
                "no secretName: these hosts have no certificate and serve plain HTTP only",
            )
        )
        return None
    key = ObjectKey("Secret", ingress.meta.key.namespace, entry.secret_name)
    read.add(key)
    secret = state.secrets.get(key)
    problem: str | None
    if secret is None:
        problem, reason = f"Secret {key.ref} does not exist", "SecretNotFound"
    elif secret.type != "kubernetes.io/tls":
        problem, reason = (
            f"Secret {key.ref} is of type {secret.type!r}, not kubernetes.io/tls",
            "InvalidSecretType",
        )
    elif secret.keypair is None:
        problem, reason = f"Secret {key.ref}: {secret.problem}", "InvalidCertificate"
    else:
        for host in entry.hosts:
            if not covers(secret.keypair.dns_names, host):
                found.append(
                    _finding(
                        ingress,
                        field,
                        Severity.WARNING,
                        "CertificateHostMismatch",
                        f"the certificate of Secret {key.ref} does not name {host!r}; "
                        "clients will refuse it",
                    )
                )
        return Certificate(
            chain_pem=secret.keypair.chain_pem, key_pem=secret.keypair.key_pem, secret=key.ref
        )
    found.append(
        _finding(
            ingress, field, Severity.ERROR, reason, f"{problem}; these hosts serve plain HTTP only"
        )
    )
    return None


def _finding(
    ingress: Ingress, field: str, severity: Severity, reason: str, message: str
) -> Diagnostic:
    return Diagnostic(
        key=ingress.meta.key, field=field, severity=severity, reason=reason, message=message
    )
