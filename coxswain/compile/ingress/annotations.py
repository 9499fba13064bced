"""The Ingress annotations Coxswain reads, parsed into typed options.

Users moving from ingress-nginx keep their annotations: each option is read from
``coxswain-labs.dev/<name>`` and, failing that, ``nginx.ingress.kubernetes.io/<name>``.
A value that does not parse is reported and the default applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.compile.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from coxswain.compile.model.objects import Ingress

__all__ = ["IngressOptions", "parse_options"]

PREFIXES: Final = ("coxswain-labs.dev/", "nginx.ingress.kubernetes.io/")


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressOptions:
    """Typed annotation values.

    Attributes:
        ssl_redirect: redirect plain HTTP to HTTPS on hosts that have a certificate (default
            true, as in ingress-nginx, with status 308).
    """

    ssl_redirect: bool = True


def parse_options(ingress: Ingress) -> tuple[IngressOptions, list[Diagnostic]]:
    """Read the supported annotations of one Ingress. Pure."""
    found: list[Diagnostic] = []
    ssl_redirect = _boolean(ingress, "ssl-redirect", default=True, found=found)
    return IngressOptions(ssl_redirect=ssl_redirect), found


def _boolean(ingress: Ingress, name: str, *, default: bool, found: list[Diagnostic]) -> bool:
    for prefix in PREFIXES:
        value = ingress.meta.annotations.get(prefix + name)
        if value is None:
            continue
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        found.append(
            Diagnostic(
                key=ingress.meta.key,
                field=f"metadata.annotations[{prefix + name!r}]",
                severity=Severity.WARNING,
                reason="InvalidAnnotation",
                message=f"{value!r} is not true or false; {str(default).lower()} applies",
            )
        )
        return default
    return default
