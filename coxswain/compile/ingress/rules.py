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
   HTTPS (308), unless its Ingress says ``ssl-redirect: "false"``; with
   ``force-ssl-redirect: "true"`` every path of the Ingress does, certificate or not.
8. Regex paths: every path of an Ingress with ``use-regex`` or ``rewrite-target`` is a
   ``Regex`` path, its text the pattern as written (ingress-nginx's ``location ~*``); one RE2
   cannot compile is reported and not served. Inside a host, regex paths come after Exact
   ones and before prefixes, longest first (ingress-nginx orders its regex locations by
   descending length and nginx takes the first that matches). A ``rewrite-target`` naming a
   capture group its path does not have is dropped for that path.
9. ``backend-protocol: GRPC`` makes the Ingress's path backends HTTP/2 with prior knowledge
   (``BackendProtocol.H2C``), as gRPC needs.
10. Canary Ingresses serve nothing of their own: their paths become canary backends of the
   same paths of main Ingresses (``compile.ingress.canary``).
11. Annotation actions (``snapshot.IngressActions``) go on every path of their Ingress and on
   its default backend (without the rewrite, which needs a path's pattern);
   ``server-alias`` and ``from-to-www-redirect`` add hosts (``compile.ingress.aliases``).
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Final

from pyrsistent import pmap, pvector

from coxswain.compile.backends import resolve_backend
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.access import Access, read_access
from coxswain.compile.ingress.aliases import HostExtras, add_host_extras
from coxswain.compile.ingress.annotations import IngressOptions, parse_options
from coxswain.compile.ingress.canary import CanaryPaths, attach_canaries, is_canary
from coxswain.compile.ingress.certificates import has_certificate
from coxswain.compile.ingress.registry import annotation_value
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.regex import compile_prefix_pattern
from coxswain.compile.snapshot import (
    CATCH_ALL,
    Backend,
    BackendProtocol,
    IngressActions,
    PathMatch,
    PathRule,
    RouteRef,
    VirtualHost,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyrsistent.typing import PMap

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.model.objects import Ingress, IngressBackend, IngressPath, Secret
    from coxswain.compile.snapshot import Certificate

__all__ = ["IngressHosts", "ingress_hosts"]

IngressHosts = tuple["PMap[str, VirtualHost]", list[Diagnostic], set[ObjectKey]]

_GROUP_REFERENCE: Final = re.compile(r"\$(\d)")


def ingress_hosts(
    ingresses: Sequence[Ingress],
    services: ServiceIndex,
    certificates: PMap[str, Certificate],
    secrets: PMap[ObjectKey, Secret],
) -> IngressHosts:
    """Build the virtual hosts of our Ingresses. Pure.

    Args:
        ingresses: our Ingresses, oldest first (precedence order).
        services: Services and their slices.
        certificates: the Ingress HTTPS port's certificates, to decide TLS redirects.
        secrets: every Secret, for basic authentication (``compile.ingress.access``).

    Returns:
        Virtual hosts by host key, the findings, and the keys of the Services read.
    """
    paths: dict[str, dict[tuple[PathMatch, str], PathRule]] = defaultdict(dict)
    defaults: dict[str, PathRule] = {}
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    extras: list[HostExtras] = []
    canaries: list[CanaryPaths] = []
    for ingress in ingresses:
        options, problems = parse_options(ingress)
        found.extend(problems)
        if is_canary(
            ingress
        ):  # served as other Ingresses' canary backends (compile.ingress.canary)
            keyed = [
                (r.host or CATCH_ALL, _path_match(options, p), p)
                for r in ingress.rules
                for p in r.paths
            ]
            canaries.append(CanaryPaths(ingress=ingress, paths=keyed))
            continue
        options = _with_access(options, read_access(ingress, secrets, found, read))
        read_protocol = annotation_value(ingress, "backend-protocol")
        grpc = read_protocol is not None and read_protocol[0].upper() == "GRPC"
        own_hosts: list[str] = []
        served: dict[str, PathRule] = {}  # host → the Ingress's first path served there
        for rule in ingress.rules:
            host = rule.host or CATCH_ALL
            own_hosts.append(host)
            redirect = _tls_redirect(options, certificates, host)
            for path in rule.paths:
                backend = _backend(ingress, path.backend, services, found, read)
                if backend is None:
                    continue
                if grpc:
                    backend = dataclasses.replace(backend, protocol=BackendProtocol.H2C)
                match, value = _path_match(options, path)
                actions = options.actions
                if match is PathMatch.REGEX:
                    checked = _regex_actions(ingress, path, options, found)
                    if isinstance(checked, str):
                        continue
                    actions = checked
                if actions is not None and actions.affinity and actions.affinity.path is None:
                    cookie_path = "/" if match is PathMatch.REGEX else value  # ingress-nginx's
                    affinity = dataclasses.replace(actions.affinity, path=cookie_path)
                    actions = dataclasses.replace(actions, affinity=affinity)
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
                    actions=actions,
                )
                served.setdefault(host, paths[host][(match, value)])
        if options.from_to_www or options.server_aliases:
            extras.append(HostExtras(ingress=ingress, options=options, served=served))
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
                tls_redirect=_tls_redirect(options, certificates, host),
                actions=_without_rewrite(options),
            )
    attach_canaries(
        paths,
        canaries,
        lambda ingress, path: _backend(ingress, path.backend, services, found, read),
        found,
    )
    hosts = {
        host: VirtualHost(
            host=host,
            paths=pvector(sorted(paths.get(host, {}).values(), key=_precedence)),
            default=defaults.get(host),
        )
        for host in sorted(paths.keys() | defaults.keys())
    }
    return pmap(add_host_extras(hosts, extras, found)), found, read


def _precedence(rule: PathRule) -> tuple[int, int, str]:
    """Exact first; then regex paths, then prefixes, longer first; ties by path text for a
    canonical order."""
    if rule.match is PathMatch.EXACT:
        return (0, 0, rule.path)
    return (1 if rule.match is PathMatch.REGEX else 2, -len(rule.path), rule.path)


def _tls_redirect(options: IngressOptions, certificates: PMap[str, Certificate], host: str) -> bool:
    return options.force_ssl_redirect or (
        options.ssl_redirect and has_certificate(certificates, host)
    )


def _path_match(options: IngressOptions, path: IngressPath) -> tuple[PathMatch, str]:
    if options.regex:
        return PathMatch.REGEX, path.path
    if path.path_type == "Exact":
        return PathMatch.EXACT, path.path
    return PathMatch.PREFIX, path.path.rstrip("/") or "/"


def _regex_actions(
    ingress: Ingress, path: IngressPath, options: IngressOptions, found: list[Diagnostic]
) -> IngressActions | str | None:
    """The path's actions once its pattern compiles (rule 8), or why it does not."""
    pattern = compile_prefix_pattern(path.path)
    if isinstance(pattern, str):
        found.append(
            Diagnostic(
                key=ingress.meta.key,
                field=f"{path.field}.path",
                severity=Severity.ERROR,
                reason="InvalidRegex",
                message=f"{path.path[:80]!r} is not a regular expression Coxswain can run "
                f"({pattern}); this path is not served",
            )
        )
        return pattern
    actions = options.actions
    target = actions.rewrite_target if actions is not None else None
    if actions is None or target is None:
        return actions
    if target == path.path:  # ingress-nginx: no rewrite when the target is the path itself
        return dataclasses.replace(actions, rewrite_target=None, x_forwarded_prefix=None)
    missing = sorted({int(n) for n in _GROUP_REFERENCE.findall(target) if int(n) > pattern.groups})
    if not missing:
        return actions
    found.append(
        Diagnostic(
            key=ingress.meta.key,
            field=f"{path.field}.path",
            severity=Severity.WARNING,
            reason="InvalidAnnotation",
            message=f"rewrite-target {target[:80]!r} names capture group(s) "
            f"{', '.join(f'${n}' for n in missing)} that this path's pattern has not; "
            "this path is forwarded without the rewrite",
        )
    )
    return dataclasses.replace(actions, rewrite_target=None, x_forwarded_prefix=None)


def _with_access(options: IngressOptions, access: Access) -> IngressOptions:
    actions = dataclasses.replace(
        options.actions or IngressActions(),
        denied=access.denied,
        allow_sources=access.allow_sources,
        deny_sources=access.deny_sources,
        auth_realm=access.auth_realm,
        auth_users=access.auth_users,
        max_body=access.max_body,
        external_auth=access.external_auth,
        client_tls=access.client_tls,
    )
    return dataclasses.replace(options, actions=None if actions == IngressActions() else actions)


def _without_rewrite(options: IngressOptions) -> IngressActions | None:
    actions = options.actions
    if actions is None or actions.rewrite_target is None:
        return actions
    stripped = dataclasses.replace(actions, rewrite_target=None, x_forwarded_prefix=None)
    return None if stripped == IngressActions() else stripped


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
