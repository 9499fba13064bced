"""Canary Ingresses (ingress-nginx's ``canary`` annotations; docs/migrating-from-ingress-nginx.md,
"Canary"; the proxy's side: ``route.canary``).

Rules:
1. An Ingress with ``canary: "true"`` serves nothing of its own: each of its paths becomes the
   canary backend of the path with the same host, match and path text in a main (non-canary)
   Ingress. A canary path without such a main path is reported and not served; so is a second
   canary for one path (ingress-nginx takes one alternative backend per path).
2. Its ``canary-by-header``, ``-by-header-value``, ``-by-header-pattern`` (RE2, searched in
   the value; a pattern RE2 refuses is reported and dropped), ``-by-cookie``, ``-weight`` and
   ``-weight-total`` (default 100; a total under 100 counts as 100, as ingress-nginx's
   balancer takes it) go into ``snapshot.Canary``; its other annotations are not applied, as
   in ingress-nginx. A weight that is not a whole number from 0 to the total is reported and
   0 applies.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.registry import annotation_value
from coxswain.compile.regex import compile_pattern
from coxswain.compile.snapshot import CATCH_ALL, Canary, IngressActions, RouteRef

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.model.objects import Ingress, IngressPath
    from coxswain.compile.snapshot import Backend, PathMatch, PathRule

__all__ = ["CanaryPaths", "attach_canaries", "is_canary"]

_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")

PathKey = tuple["PathMatch", str]


@dataclass(frozen=True, slots=True, kw_only=True)
class CanaryPaths:
    """One canary Ingress and, per path, its key among the host's paths."""

    ingress: Ingress
    paths: list[tuple[str, PathKey, IngressPath]]


def is_canary(ingress: Ingress) -> bool:
    read = annotation_value(ingress, "canary")
    return read is not None and read[0].lower() == "true"


def attach_canaries(
    paths: dict[str, dict[PathKey, PathRule]],
    canaries: list[CanaryPaths],
    resolve: Callable[[Ingress, IngressPath], Backend | None],
    found: list[Diagnostic],
) -> None:
    """Give each main path its canary (rules 1 and 2), in place."""
    for canary in canaries:
        template = _template(canary.ingress, found)
        for host, key, path in canary.paths:
            main = paths.get(host, {}).get(key)
            if main is None or (main.actions is not None and main.actions.canary is not None):
                why = "no main Ingress serves" if main is None else "another canary already has"
                where = "every host" if host == CATCH_ALL else f"host {host!r}"
                found.append(
                    _finding(
                        canary.ingress,
                        f"{path.field}.path",
                        "CanaryNotAttached",
                        f"{why} {key[0]} path {key[1]!r} on {where}; this canary path is not "
                        "served",
                    )
                )
                continue
            backend = resolve(canary.ingress, path)
            if backend is None:
                continue
            ref = RouteRef(
                "Ingress",
                canary.ingress.meta.key.namespace,
                canary.ingress.meta.key.name,
                path.field,
            )
            attached = template(backend=backend, route=ref)
            actions = dataclasses.replace(main.actions or IngressActions(), canary=attached)
            paths[host][key] = dataclasses.replace(main, actions=actions)


def _template(ingress: Ingress, found: list[Diagnostic]) -> Callable[..., Canary]:
    """``Canary`` with the canary's rules, waiting for a path's ``backend`` and ``route``."""

    def text(name: str, check: Callable[[str], bool], what: str) -> str | None:
        read = annotation_value(ingress, name)
        if read is None:
            return None
        if check(read[0]):
            return read[0]
        found.append(_invalid(ingress, read[1], f"{read[0][:60]!r} is not {what}; not applied"))
        return None

    total = 100
    read_total = annotation_value(ingress, "canary-weight-total")
    if read_total is not None:
        total = _whole(read_total[0], 1 << 31) or 0
        if not total:
            found.append(_invalid(ingress, read_total[1], "is not a positive whole number"))
        total = max(total, 100)
    weight = 0
    read_weight = annotation_value(ingress, "canary-weight")
    if read_weight is not None:
        parsed = _whole(read_weight[0], total)
        if parsed is None:
            why = f"is not a whole number from 0 to {total}; 0 applies"
            found.append(_invalid(ingress, read_weight[1], why))
        weight = parsed or 0
    return functools.partial(
        Canary,
        header=text("canary-by-header", _is_token, "a header name"),
        header_value=text("canary-by-header-value", _is_value, "a header value"),
        header_pattern=text("canary-by-header-pattern", _is_pattern, "an RE2 pattern"),
        cookie=text("canary-by-cookie", _is_token, "a cookie name"),
        weight=weight,
        weight_total=total,
    )


def _whole(text: str, highest: int) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() and int(text) <= highest else None


def _is_token(text: str) -> bool:
    return _TOKEN.fullmatch(text) is not None


def _is_value(text: str) -> bool:
    return len(text) <= 1024 and all(" " <= c <= "~" or c == "\t" for c in text)


def _is_pattern(text: str) -> bool:
    return not isinstance(compile_pattern(f"(?s).*(?:{text}).*"), str)


def _invalid(ingress: Ingress, key: str, message: str) -> Diagnostic:
    return _finding(ingress, f"metadata.annotations[{key!r}]", "InvalidAnnotation", message)


def _finding(ingress: Ingress, field: str, reason: str, message: str) -> Diagnostic:
    return Diagnostic(
        key=ingress.meta.key,
        field=field,
        severity=Severity.WARNING,
        reason=reason,
        message=message,
    )
