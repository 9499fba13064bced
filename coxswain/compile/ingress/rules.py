"""Ingress rules → the Ingress table (Kubernetes Ingress spec, networking.k8s.io/v1).

Rules:
1. Hosts: a rule's ``host`` is exact or a ``*.`` wildcard; a rule without one goes to the
   catch-all host ``*``. Rules of every Ingress on one host merge into one virtual host.
2. Paths: ``Exact`` as written; ``Prefix`` with its trailing slash removed (``/foo/`` and
   ``/foo`` are one prefix); ``ImplementationSpecific`` is served as ``Prefix``.
3. Conflicts: the same (host, match, path) in several Ingresses goes to the oldest Ingress
   (``creationTimestamp``, then ``ns/name``); within one Ingress, to the first. The loser is
   reported and not served.
4. Precedence inside a host: Exact before Prefix, longer prefix first ("Multiple matches").
   ``route.select`` relies on this order.
5. ``spec.defaultBackend`` serves the misses of the Ingress's own hosts; an Ingress without
   rules has the catch-all host as its own. One default per host: the oldest Ingress wins.
6. Backends are Services; ``resource`` backends are reported and the path is not served. A
   Service or port that does not exist keeps the path, with an invalid backend (the proxy
   answers 503, as ingress-nginx does).
7. TLS redirect: a path on a host that has a certificate of its own redirects plain HTTP to
   HTTPS (308), unless its Ingress says ``ssl-redirect: "false"``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain.compile.backends import resolve_backend
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.annotations import parse_options
from coxswain.compile.ingress.certificates import has_certificate
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot import (
    CATCH_ALL,
    Backend,
    PathMatch,
    PathRule,
    RouteRef,
    VirtualHost,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyrsistent.typing import PMap

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.model.objects import Ingress, IngressBackend
    from coxswain.compile.snapshot import Certificate

__all__ = ["IngressHosts", "ingress_hosts"]

IngressHosts = tuple["PMap[str, VirtualHost]", list[Diagnostic], set[ObjectKey]]


def ingress_hosts(
    ingresses: Sequence[Ingress],
    services: ServiceIndex,
    certificates: PMap[str, Certificate],
) -> IngressHosts:
    """Build the virtual hosts of our Ingresses. Pure.

    Args:
        ingresses: our Ingresses, oldest first (precedence order).
        services: Services and their slices.
        certificates: the Ingress HTTPS port's certificates, to decide TLS redirects.

    Returns:
        Virtual hosts by host key, the findings, and the keys of the Services read.
    """
    paths: dict[str, dict[tuple[PathMatch, str], PathRule]] = defaultdict(dict)
    defaults: dict[str, PathRule] = {}
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    for ingress in ingresses:
        options, problems = parse_options(ingress)
        found.extend(problems)
        own_hosts: list[str] = []
        for rule in ingress.rules:
            host = rule.host or CATCH_ALL
            own_hosts.append(host)
            redirect = options.ssl_redirect and has_certificate(certificates, host)
            for path in rule.paths:
                backend = _backend(ingress, path.backend, services, found, read)
                if backend is None:
                    continue
                match = PathMatch.EXACT if path.path_type == "Exact" else PathMatch.PREFIX
                value = path.path if match is PathMatch.EXACT else (path.path.rstrip("/") or "/")
                holder = paths[host].get((match, value))
                if holder is not None:
                    found.append(_conflict(ingress, path.field, host, match, value, holder.route))
                    continue
                paths[host][(match, value)] = PathRule(
                    path=value,
                    match=match,
                    backend=backend,
                    route=RouteRef(
                        "Ingress", ingress.meta.key.namespace, ingress.meta.key.name, path.field
                    ),
                    tls_redirect=redirect,
                )
        if ingress.default_backend is None:
            continue
        backend = _backend(ingress, ingress.default_backend, services, found, read)
        if backend is None:
            continue
        for host in dict.fromkeys(own_hosts if ingress.has_rules else [CATCH_ALL]):
            holder = defaults.get(host)
            if holder is not None:
                found.append(
                    Diagnostic(
                        key=ingress.meta.key,
                        field="spec.defaultBackend",
                        severity=Severity.ERROR,
                        reason="DefaultBackendConflict",
                        message=f"host {host!r} already has the default backend of Ingress "
                        f"{holder.route.namespace}/{holder.route.name}, which takes precedence "
                        "(older, then first by namespace/name)",
                    )
                )
                continue
            defaults[host] = PathRule(
                path="/",
                match=PathMatch.PREFIX,
                backend=backend,
                route=RouteRef(
                    "Ingress",
                    ingress.meta.key.namespace,
                    ingress.meta.key.name,
                    "spec.defaultBackend",
                ),
                tls_redirect=options.ssl_redirect and has_certificate(certificates, host),
            )
    hosts = {
        host: VirtualHost(
            host=host,
            paths=pvector(sorted(paths.get(host, {}).values(), key=_precedence)),
            default=defaults.get(host),
        )
        for host in sorted(paths.keys() | defaults.keys())
    }
    return pmap(hosts), found, read


def _precedence(rule: PathRule) -> tuple[int, int, str]:
    """Exact first; then longer prefixes first; ties by path text for a canonical order."""
    if rule.match is PathMatch.EXACT:
        return (0, 0, rule.path)
    return (1, -len(rule.path), rule.path)


def _backend(
    ingress: Ingress,
    backend: IngressBackend,
    services: ServiceIndex,
    found: list[Diagnostic],
    read: set[ObjectKey],
) -> Backend | None:
    if backend.service is None:
        found.append(
            Diagnostic(
                key=ingress.meta.key,
                field=f"{backend.field}.resource",
                severity=Severity.ERROR,
                reason="UnsupportedBackend",
                message=f"resource backend {backend.resource} is not supported; only Services "
                "are; the path is not served",
            )
        )
        return None
    namespace = ingress.meta.key.namespace
    read.add(ObjectKey("Service", namespace, backend.service.name))
    resolved, problem = resolve_backend(
        services,
        namespace=namespace,
        service=backend.service.name,
        port_number=backend.service.port_number,
        port_name=backend.service.port_name,
    )
    if problem is not None:
        found.append(
            Diagnostic(
                key=ingress.meta.key,
                field=f"{backend.field}.service",
                severity=Severity.ERROR,
                reason="BackendNotFound",
                message=f"{problem}; requests here are answered 503",
            )
        )
    return resolved


def _conflict(
    ingress: Ingress, field: str, host: str, match: PathMatch, path: str, holder: RouteRef
) -> Diagnostic:
    owner = (
        "an earlier path of this Ingress"
        if (holder.namespace, holder.name) == (ingress.meta.key.namespace, ingress.meta.key.name)
        else f"Ingress {holder.namespace}/{holder.name}, which takes precedence (older, "
        "then first by namespace/name)"
    )
    return Diagnostic(
        key=ingress.meta.key,
        field=field,
        severity=Severity.ERROR,
        reason="PathConflict",
        message=f"{match} path {path!r} on host {host!r} is already served by {owner} "
        f"({holder.rule}); this path is not served",
    )
