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
from collections import defaultdict
from typing import TYPE_CHECKING, Protocol

from pyrsistent import pmap, pvector

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.aliases import HostExtras, add_host_extras
from coxswain.compile.ingress.backend_settings import BackendSettings
from coxswain.compile.ingress.canary import CanaryPaths, attach_canaries
from coxswain.compile.ingress.certificates import has_certificate
from coxswain.compile.ingress.fragments import (
    NO_DEFAULTS,
    IngressFragment,
    ingress_fragment,
    path_backend,
)
from coxswain.compile.ingress.registry import annotation_value
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot import (
    CATCH_ALL,
    Certificate,
    PathMatch,
    PathRule,
    RouteRef,
    VirtualHost,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyrsistent.typing import PMap

    from coxswain.compile.backends import ServiceIndex
    from coxswain.compile.config import IngressDefaults
    from coxswain.compile.model.objects import Ingress, Secret

__all__ = ["FragmentCache", "IngressHosts", "ingress_hosts"]

IngressHosts = tuple["PMap[str, VirtualHost]", list[Diagnostic], set[ObjectKey]]


class FragmentCache(Protocol):
    """Gives each Ingress's fragment, as ``ingress_fragment`` would (``compile.ingress.memo``
    reuses those whose inputs are the same objects)."""

    def fragments(
        self,
        ingresses: Sequence[Ingress],
        services: ServiceIndex,
        certificates: PMap[str, Certificate],
        secrets: PMap[ObjectKey, Secret],
        given: IngressDefaults,
    ) -> list[IngressFragment]: ...

    def kept(self, hosts: dict[str, VirtualHost]) -> dict[str, VirtualHost]:
        """``hosts``, each virtual host made of the very rules of the last call's being that
        one (its hashed piece is then known: ``snapshot_json.head_digest``)."""
        ...


def ingress_hosts(
    ingresses: Sequence[Ingress],
    services: ServiceIndex,
    certificates: PMap[str, Certificate],
    secrets: PMap[ObjectKey, Secret],
    given: IngressDefaults = NO_DEFAULTS,
    cache: FragmentCache | None = None,
) -> IngressHosts:
    """Build the virtual hosts of our Ingresses. Pure.

    Args:
        ingresses: our Ingresses, oldest first (precedence order).
        services: Services and their slices.
        certificates: the Ingress HTTPS port's certificates, to decide TLS redirects.
        secrets: every Secret, for basic authentication (``compile.ingress.access``) and
            backend TLS (``compile.ingress.backend_settings``).
        given: the values of annotations an Ingress does not set (rule 11).
        cache: where each Ingress's fragment comes from; computed afresh without one.

    Returns:
        Virtual hosts by host key, the findings, and the keys of the Services read.
    """
    if cache is None:

        def certified(host: str) -> bool:
            return has_certificate(certificates, host)

        fragments = [ingress_fragment(i, services, certified, secrets, given) for i in ingresses]
    else:
        fragments = cache.fragments(ingresses, services, certificates, secrets, given)
    hosts, found, read = _assembled(fragments, services)
    return pmap(hosts if cache is None else cache.kept(hosts)), found, read


def _assembled(
    fragments: list[IngressFragment], services: ServiceIndex
) -> tuple[dict[str, VirtualHost], list[Diagnostic], set[ObjectKey]]:
    """The table from the fragments, oldest Ingress first: precedence between Ingresses
    (rules 3, 5, 10, 12) and host extras (rule 11)."""
    paths: dict[str, dict[tuple[PathMatch, str], PathRule]] = defaultdict(dict)
    defaults: dict[str, PathRule] = {}
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    extras: list[HostExtras] = []
    canaries: list[CanaryPaths] = []
    passthroughs: dict[str, PathRule] = {}
    reached: dict[tuple[str, str], BackendSettings] = {}  # Ingresses with settings of their own
    as_is = BackendSettings()
    for fragment in fragments:
        found.extend(fragment.found)
        read |= fragment.read
        if fragment.canary is not None:
            canaries.append(fragment.canary)
            continue
        ingress, settings = fragment.ingress, fragment.settings
        if settings != as_is:
            reached[(ingress.meta.key.namespace, ingress.meta.key.name)] = settings
        served: dict[str, PathRule] = {}  # host → the Ingress's first path served there
        for candidate in fragment.paths:
            rule, host = candidate.rule, candidate.host
            held = paths[host]
            holder = held.get((rule.match, rule.path))
            if holder is not None:
                found.append(
                    _conflict(ingress, candidate.field, host, rule.match, rule.path, holder.route)
                )
                continue
            held[(rule.match, rule.path)] = rule
            served.setdefault(host, rule)
            if (
                settings.passthrough
                and host != CATCH_ALL
                and rule.path == "/"
                and rule.match is not PathMatch.EXACT
            ):
                passthroughs.setdefault(host, rule)
        if settings.passthrough:
            _report_passthrough(ingress, fragment.own_hosts, passthroughs, found)
        options = fragment.options
        if options is not None and (options.from_to_www or options.server_aliases):
            extras.append(HostExtras(ingress=ingress, options=options, served=served))
        for host, default in fragment.defaults:
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
            defaults[host] = default
    attach_canaries(
        paths,
        canaries,
        lambda ingress, path: path_backend(ingress, path.backend, services, found, read),
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
    return add_host_extras(hosts, extras, found), found, read


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
    hosts: Sequence[str],
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
