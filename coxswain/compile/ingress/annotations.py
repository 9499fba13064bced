"""The Ingress annotations Coxswain reads, parsed into typed options.

Users moving from ingress-nginx keep their annotations: each option is read from
``coxswain-labs.dev/<name>`` and, failing that, ``nginx.ingress.kubernetes.io/<name>``
(:mod:`coxswain.compile.ingress.registry` classifies every one of them). A value that does
not parse is reported (``InvalidAnnotation``) and the default applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.registry import annotation_value, classify

if TYPE_CHECKING:
    from coxswain.compile.model.objects import Ingress

__all__ = ["IngressOptions", "parse_options"]


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressOptions:
    """Typed annotation values.

    Attributes:
        ssl_redirect: redirect plain HTTP to HTTPS on hosts that have a certificate (default
            true, as in ingress-nginx, with status 308).
    """

    ssl_redirect: bool = True


def parse_options(ingress: Ingress) -> tuple[IngressOptions, list[Diagnostic]]:
    """Read the supported annotations of one Ingress, and report those it does not honour as
    written. Pure."""
    _, found = classify(ingress)
    ssl_redirect = _boolean(ingress, "ssl-redirect", default=True, found=found)
    return IngressOptions(ssl_redirect=ssl_redirect), found


def _boolean(ingress: Ingress, name: str, *, default: bool, found: list[Diagnostic]) -> bool:
    read = annotation_value(ingress, name)
    if read is None:
        return default
    value, key = read
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    found.append(
        Diagnostic(
            key=ingress.meta.key,
            field=f"metadata.annotations[{key!r}]",
            severity=Severity.WARNING,
            reason="InvalidAnnotation",
            message=f"{value!r} is not true or false; {str(default).lower()} applies",
        )
    )
    return default
