"""One Ingress's share of the Ingress table, computed without looking at any other Ingress.

Why: an Ingress's paths, actions, backends and findings depend only on the Ingress, the
Services and Secrets it names, whether its hosts have a certificate, and the installation's
defaults; only precedence between Ingresses (conflicts, defaults, passthrough, canaries, host
extras: ``compile.ingress.rules``) needs them all. Splitting the two lets ``compile.ingress.memo``
reuse the fragment of every unchanged Ingress (docs/architecture.md, "Rules of the core": the
output is the same as when every fragment is computed again). The rule numbers below are
``compile.ingress.rules``'.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from coxswain.compile.backends import resolve_backend
from coxswain.compile.config import IngressDefaults
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.access import Access, read_access
from coxswain.compile.ingress.annotations import IngressOptions, parse_options
from coxswain.compile.ingress.backend_settings import BackendSettings, read_backend_settings
from coxswain.compile.ingress.canary import CanaryPaths, is_canary
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
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrsistent.typing import PMap

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.model.objects import Ingress, IngressBackend, IngressPath, Secret

__all__ = ["NO_DEFAULTS", "IngressFragment", "PathCandidate", "ingress_fragment", "path_backend"]

NO_DEFAULTS: Final = IngressDefaults()
_GROUP_REFERENCE: Final = re.compile(r"\$(\d)")


@dataclass(frozen=True, slots=True, kw_only=True)
class PathCandidate:
    """A path of the Ingress, served unless an earlier one holds its (host, match, path)."""

    host: str
    field: str
    rule: PathRule


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressFragment:
    """What one Ingress brings to the table, before precedence between Ingresses.

    ``read`` holds the keys of the Services and Secrets looked up, every one of them (each
    lookup names its key there first), and ``certified`` the hosts whose certificate was asked
    about with the answer: together with the Ingress and the defaults, everything the fragment
    depends on.
    """

    ingress: Ingress
    found: tuple[Diagnostic, ...]
    read: frozenset[ObjectKey]
    certified: tuple[tuple[str, bool], ...]
    canary: CanaryPaths | None = None
    options: IngressOptions | None = None
    settings: BackendSettings = field(default_factory=BackendSettings)
    own_hosts: tuple[str, ...] = ()
    paths: tuple[PathCandidate, ...] = ()
    defaults: tuple[tuple[str, PathRule], ...] = ()


def ingress_fragment(
    ingress: Ingress,
    services: ServiceIndex,
    certified: Callable[[str], bool],
    secrets: PMap[ObjectKey, Secret],
    given: IngressDefaults = NO_DEFAULTS,
) -> IngressFragment:
    """The fragment of ``ingress`` (rules 2, 6, 7, 8, 9, 11). Pure.

    Args:
        ingress: one of our Ingresses.
        services: Services and their slices.
        certified: whether SNI host has a certificate of its own (``has_certificate`` on the
            Ingress HTTPS port's certificates), to decide TLS redirects and HSTS.
        secrets: every Secret, for basic authentication and backend TLS.
        given: the values of annotations an Ingress does not set (rule 11).
    """
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    options, problems = parse_options(ingress)
    found.extend(problems)
    if is_canary(ingress):  # served as other Ingresses' canary backends (compile.ingress.canary)
        keyed = [
            (r.host or CATCH_ALL, path_match(options, p), p) for r in ingress.rules for p in r.paths
        ]
        return IngressFragment(
            ingress=ingress,
            found=tuple(found),
            read=frozenset(),
            certified=(),
            canary=CanaryPaths(ingress=ingress, paths=keyed),
        )
    options = _with_access(options, read_access(ingress, secrets, found, read))
    if given != NO_DEFAULTS:
        options = _with_defaults(ingress, options, given)
    settings = read_backend_settings(ingress, secrets, found, read)
    own_hosts = tuple(rule.host or CATCH_ALL for rule in ingress.rules)
    answers: dict[str, bool] = {}

    def has_certificate(host: str) -> bool:
        if host not in answers:
            answers[host] = certified(host)
        return answers[host]

    def redirect(host: str) -> bool:
        if options.force_ssl_redirect or not options.ssl_redirect:
            return options.force_ssl_redirect
        return has_certificate(host)

    def hsts(host: str) -> str:
        """The host's ``Strict-Transport-Security``: ingress-nginx sends it only where a
        certificate is configured for the host (its ``hsts`` ConfigMap key)."""
        return given.hsts_value if given.hsts and has_certificate(host) else ""

    candidates: list[PathCandidate] = []
    for rule in ingress.rules:
        host = rule.host or CATCH_ALL
        for path in rule.paths:
            backend = path_backend(ingress, path.backend, services, found, read)
            if backend is None:
                continue
            backend = settings.apply(backend)
            match, value = path_match(options, path)
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
            route = RouteRef(
                "Ingress", ingress.meta.key.namespace, ingress.meta.key.name, path.field
            )
            served = PathRule(
                path=value,
                match=match,
                backend=backend,
                route=route,
                tls_redirect=redirect(host),
                actions=actions,
                hsts=hsts(host),
            )
            candidates.append(PathCandidate(host=host, field=path.field, rule=served))
    defaults: list[tuple[str, PathRule]] = []
    if ingress.default_backend is not None:
        backend = path_backend(ingress, ingress.default_backend, services, found, read)
        if backend is not None:
            backend = settings.apply(backend)
            route = RouteRef(
                "Ingress", ingress.meta.key.namespace, ingress.meta.key.name, "spec.defaultBackend"
            )
            for host in dict.fromkeys(own_hosts if ingress.has_rules else (CATCH_ALL,)):
                default = PathRule(
                    path="/",
                    match=PathMatch.PREFIX,
                    backend=backend,
                    route=route,
                    tls_redirect=redirect(host),
                    actions=_without_rewrite(options),
                    hsts=hsts(host),
                )
                defaults.append((host, default))
    return IngressFragment(
        ingress=ingress,
        found=tuple(found),
        read=frozenset(read),
        certified=tuple(answers.items()),
        options=options,
        settings=settings,
        own_hosts=own_hosts,
        paths=tuple(candidates),
        defaults=tuple(defaults),
    )


def path_match(options: IngressOptions, path: IngressPath) -> tuple[PathMatch, str]:
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


def path_backend(
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
