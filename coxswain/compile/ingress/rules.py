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
9. ``backend-protocol`` and the ``proxy-ssl-*`` annotations set the protocol and TLS of the
   Ingress's path and default backends, and of the canary backends attached to its paths
   (``compile.ingress.backend_settings``).
10. Canary Ingresses serve nothing of their own: their paths become canary backends of the
   same paths of main Ingresses (``compile.ingress.canary``).
11. Annotation actions (``snapshot.IngressActions``) go on every path of their Ingress and on
   its default backend (without the rewrite, which needs a path's pattern); the installation's
   ``IngressDefaults`` stand in for ``proxy-body-size``, the proxy timeouts and
   ``ssl-redirect`` where the Ingress does not set them (ingress-nginx's ConfigMap);
   ``server-alias`` and ``from-to-www-redirect`` add hosts (``compile.ingress.aliases``).
12. ``ssl-passthrough``: each host of the Ingress passes TLS connections through to the
   backend of its ``/`` path (``Prefix`` or ``ImplementationSpecific``), as ingress-nginx
   passes only its root location; a host without one, or the catch-all host (no SNI to
   match), is reported. The oldest Ingress's path wins a host several ask for.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Final

from pyrsistent import pmap, pvector

from coxswain.compile.backends import resolve_backend
from coxswain.compile.config import IngressDefaults
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.access import Access, read_access
from coxswain.compile.ingress.aliases import HostExtras, add_host_extras
from coxswain.compile.ingress.annotations import IngressOptions, parse_options
from coxswain.compile.ingress.backend_settings import BackendSettings, read_backend_settings
from coxswain.compile.ingress.canary import CanaryPaths, attach_canaries, is_canary
from coxswain.compile.ingress.certificates import has_certificate
from coxswain.compile.ingress.registry import annotation_value
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.regex import compile_prefix_pattern
from coxswain.compile.snapshot import (
    CATCH_ALL,
    Backend,
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
_NO_DEFAULTS: Final = IngressDefaults()
_AS_IS: Final = BackendSettings()


def ingress_hosts(
    ingresses: Sequence[Ingress],
    services: ServiceIndex,
    certificates: PMap[str, Certificate],
    secrets: PMap[ObjectKey, Secret],
    given: IngressDefaults = _NO_DEFAULTS,
) -> IngressHosts:
    """Build the virtual hosts of our Ingresses. Pure.

    Args:
        ingresses: our Ingresses, oldest first (precedence order).
        services: Services and their slices.
        certificates: the Ingress HTTPS port's certificates, to decide TLS redirects.
        secrets: every Secret, for basic authentication (``compile.ingress.access``) and
            backend TLS (``compile.ingress.backend_settings``).
        given: the values of annotations an Ingress does not set (rule 11).

    Returns:
        Virtual hosts by host key, the findings, and the keys of the Services read.
    """
    paths: dict[str, dict[tuple[PathMatch, str], PathRule]] = defaultdict(dict)
    defaults: dict[str, PathRule] = {}
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    extras: list[HostExtras] = []
    canaries: list[CanaryPaths] = []
    passthroughs: dict[str, PathRule] = {}
    reached: dict[tuple[str, str], BackendSettings] = {}  # Ingresses with settings of their own
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
        if given != _NO_DEFAULTS:
            options = _with_defaults(ingress, options, given)
        settings = read_backend_settings(ingress, secrets, found, read)
        if settings != _AS_IS:
            reached[(ingress.meta.key.namespace, ingress.meta.key.name)] = settings
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
                backend = settings.apply(backend)
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
                    hsts=_hsts(given, certificates, host),
                )
                served.setdefault(host, paths[host][(match, value)])
                if (
                    settings.passthrough
                    and host != CATCH_ALL
                    and value == "/"
                    and match is not PathMatch.EXACT
                ):
                    passthroughs.setdefault(host, paths[host][(match, value)])
        if settings.passthrough:
            _report_passthrough(ingress, own_hosts, passthroughs, found)
        if options.from_to_www or options.server_aliases:
            extras.append(HostExtras(ingress=ingress, options=options, served=served))
        if ingress.default_backend is None:
            continue
        backend = _backend(ingress, ingress.default_backend, services, found, read)
        if backend is None:
            continue
        backend = settings.apply(backend)
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
                hsts=_hsts(given, certificates, host),
            )
    attach_canaries(
        paths,
        canaries,
        lambda ingress, path: _backend(ingress, path.backend, services, found, read),
        found,
    )
    if reached:
        _reach_canaries(paths, reached)
    hosts = {
        host: VirtualHost(
            host=host,
            paths=pvector(sorted(paths.get(host, {}).values(), key=_precedence)),
            default=defaults.get(host),
            passthrough=passthroughs.get(host),
        )
        for host in sorted(paths.keys() | defaults.keys())
    }
    return pmap(add_host_extras(hosts, extras, found)), found, read


def _reach_canaries(
    paths: dict[str, dict[tuple[PathMatch, str], PathRule]],
    reached: dict[tuple[str, str], BackendSettings],
) -> None:
    """A canary backend is reached as its main path's backend is (rule 9): in ingress-nginx
    it is another upstream of the same location, whose protocol and TLS are the main
    Ingress's."""
    for rules in paths.values():
        for key, rule in rules.items():
            actions = rule.actions
            settings = reached.get((rule.route.namespace, rule.route.name))
            if actions is None or actions.canary is None or settings is None:
                continue
            canary = actions.canary
            moved = dataclasses.replace(canary, backend=settings.apply(canary.backend))
            rules[key] = dataclasses.replace(
                rule, actions=dataclasses.replace(actions, canary=moved)
            )


def _report_passthrough(
    ingress: Ingress,
    hosts: list[str],
    passthroughs: dict[str, PathRule],
    found: list[Diagnostic],
) -> None:
    """A warning for each host of ``ingress`` that is not passed through (rule 12)."""
    named = annotation_value(ingress, "ssl-passthrough")
    key = "ssl-passthrough" if named is None else named[1]
    for host in dict.fromkeys(hosts):
        rule = passthroughs.get(host)
        if rule is not None and (rule.route.namespace, rule.route.name) == (
            ingress.meta.key.namespace,
            ingress.meta.key.name,
        ):
            continue
        why = (
            "the catch-all host has no server name to pass through by"
            if host == CATCH_ALL
            else f"host {host!r} has no / path of this Ingress served"
            if rule is None
            else f"host {host!r} is passed through to Ingress {rule.route.namespace}/"
            f"{rule.route.name} already, which takes precedence"
        )
        found.append(
            Diagnostic(
                key=ingress.meta.key,
                field=f"metadata.annotations[{key!r}]",
                severity=Severity.WARNING,
                reason="PassthroughNotApplied",
                message=f"{why}; its TLS connections are terminated as usual",
            )
        )


def _precedence(rule: PathRule) -> tuple[int, int, str]:
    """Exact first; then regex paths, then prefixes, longer first; ties by path text for a
    canonical order."""
    if rule.match is PathMatch.EXACT:
        return (0, 0, rule.path)
    return (1 if rule.match is PathMatch.REGEX else 2, -len(rule.path), rule.path)


def _hsts(given: IngressDefaults, certificates: PMap[str, Certificate], host: str) -> str:
    """The ``Strict-Transport-Security`` of the host's HTTPS responses: ingress-nginx sends it
    only where a certificate is configured for the host (its ``hsts`` ConfigMap key)."""
    return given.hsts_value if given.hsts and has_certificate(certificates, host) else ""


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


def _with_defaults(
    ingress: Ingress, options: IngressOptions, defaults: IngressDefaults
) -> IngressOptions:
    """``options`` with the installation's defaults where ``ingress`` sets no annotation
    (rule 11); a value that did not parse keeps the default too, as in ingress-nginx."""
    actions = options.actions or IngressActions()
    unset = annotation_value(ingress, "proxy-body-size") is None
    actions = dataclasses.replace(
        actions,
        max_body=defaults.body_size if unset else actions.max_body,
        connect_timeout=actions.connect_timeout or defaults.connect_timeout,
        read_timeout=actions.read_timeout or defaults.read_timeout,
        send_timeout=actions.send_timeout or defaults.send_timeout,
    )
    ssl_redirect = options.ssl_redirect
    if annotation_value(ingress, "ssl-redirect") is None:
        ssl_redirect = defaults.ssl_redirect
    return dataclasses.replace(
        options,
        ssl_redirect=ssl_redirect,
        actions=None if actions == IngressActions() else actions,
    )


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
