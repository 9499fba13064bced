"""Hosts an Ingress adds besides its rules' hosts, from ingress-nginx's annotations
(docs/migrating-from-ingress-nginx.md).

Rules:
1. ``server-alias: "a.example.com,b.example.com"``: each alias is served exactly as the
   Ingress's first rule host (its virtual host, with the paths every Ingress has there), as
   nginx's extra ``server_name``. An alias that is already a host of some Ingress rule, or
   an alias of an earlier Ingress, is not served, and reported (ingress-nginx ignores it too).
2. ``from-to-www-redirect: "true"``: for each host ``H`` of the Ingress's rules (not a
   wildcard or the catch-all), requests for ``www.H`` (or for ``H`` without its ``www.``)
   are redirected (308, ingress-nginx's default redirect code) to ``H``, same scheme, path
   and query, unless that other host is served by some rule already.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.registry import annotation_value
from coxswain.compile.snapshot import CATCH_ALL, IngressActions, PathMatch, PathRule, VirtualHost

if TYPE_CHECKING:
    from coxswain.compile.ingress.annotations import IngressOptions
    from coxswain.compile.model.objects import Ingress

__all__ = ["HostExtras", "add_host_extras"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HostExtras:
    """One Ingress that adds hosts: its options and, by host, its first path served there."""

    ingress: Ingress
    options: IngressOptions
    served: dict[str, PathRule]


def add_host_extras(
    hosts: dict[str, VirtualHost], extras: list[HostExtras], found: list[Diagnostic]
) -> dict[str, VirtualHost]:
    """``hosts`` with the aliases and www redirects of ``extras`` (oldest Ingress first)."""
    ruled = set(hosts)
    result = dict(hosts)
    for extra in extras:
        first = next(iter(extra.served), None)
        for alias in extra.options.server_aliases:
            if first is None or first == CATCH_ALL:
                _report(
                    extra.ingress,
                    f"alias {alias!r} is not served: the Ingress has no rule host to copy",
                    found,
                )
            elif alias in result:
                _report(
                    extra.ingress,
                    f"alias {alias!r} is already served by an Ingress rule or an earlier alias; "
                    "this alias is not served",
                    found,
                )
            else:
                result[alias] = replace(hosts[first], host=alias)
        if extra.options.from_to_www:
            for host, rule in extra.served.items():
                other = _www_partner(host)
                if other is not None and other not in ruled and other not in result:
                    result[other] = VirtualHost(host=other, default=_redirect_rule(rule, host))
    return dict(sorted(result.items()))


def _www_partner(host: str) -> str | None:
    if host == CATCH_ALL or host.startswith("*."):
        return None
    return host[4:] if host.startswith("www.") else f"www.{host}"


def _redirect_rule(rule: PathRule, host: str) -> PathRule:
    return PathRule(
        path="/",
        match=PathMatch.PREFIX,
        backend=rule.backend,
        route=rule.route,
        actions=IngressActions(host_redirect=host),
    )


def _report(ingress: Ingress, message: str, found: list[Diagnostic]) -> None:
    read = annotation_value(ingress, "server-alias")
    key = read[1] if read is not None else "server-alias"
    found.append(
        Diagnostic(
            key=ingress.meta.key,
            field=f"metadata.annotations[{key!r}]",
            severity=Severity.WARNING,
            reason="InvalidAnnotation",
            message=message,
        )
    )
