"""The ``--ingress-default-*`` flags: ingress-nginx's ConfigMap keys as Coxswain's global
defaults (docs/migrating-from-ingress-nginx.md, "Global defaults").

The controller reads them (each with its ``COXSWAIN_*`` variable) and so does
``coxswain compile``, so that an offline migration report is made with the cluster's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.cli.types import body_size, boolean, count, seconds_or_none
from coxswain.compile.config import IngressDefaults

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

__all__ = ["INGRESS_DEFAULT_FLAGS", "DefaultFlag", "add_ingress_default_flags", "ingress_defaults"]


@dataclass(frozen=True, slots=True)
class DefaultFlag:
    """One ``--ingress-default-*`` flag: its built-in default (as text), meaning and type."""

    name: str
    default: str
    meaning: str
    type: Callable[[str], object]
    metavar: str
    shown: str = ""  # the default as --help says it, when not ``default`` itself


_MAX_AGE: Final = str(IngressDefaults().hsts_max_age)

INGRESS_DEFAULT_FLAGS: Final = (
    DefaultFlag("--ingress-default-body-size", "",
                "the proxy-body-size of Ingresses that set none (ingress-nginx ConfigMap "
                "proxy-body-size; 413 over it)", body_size, "SIZE", shown="no limit"),
    DefaultFlag("--ingress-default-connect-timeout", "",
                "the proxy-connect-timeout of Ingresses that set none (ConfigMap "
                "proxy-connect-timeout)", seconds_or_none, "SECONDS", shown="the proxy's own"),
    DefaultFlag("--ingress-default-read-timeout", "",
                "the proxy-read-timeout of Ingresses that set none (ConfigMap "
                "proxy-read-timeout)", seconds_or_none, "SECONDS", shown="the proxy's own"),
    DefaultFlag("--ingress-default-send-timeout", "",
                "the proxy-send-timeout of Ingresses that set none (ConfigMap "
                "proxy-send-timeout)", seconds_or_none, "SECONDS", shown="the proxy's own"),
    DefaultFlag("--ingress-default-ssl-redirect", "true",
                "the ssl-redirect of Ingresses that set none (ConfigMap ssl-redirect)",
                boolean, "true|false"),
    DefaultFlag("--ingress-default-hsts", "false",
                "Strict-Transport-Security on the HTTPS responses of Ingress hosts with a "
                "certificate (ConfigMap hsts; on in ingress-nginx)", boolean, "true|false"),
    DefaultFlag("--ingress-default-hsts-max-age", _MAX_AGE,
                "its max-age (ConfigMap hsts-max-age)", count(lowest=0), "SECONDS"),
    DefaultFlag("--ingress-default-hsts-include-subdomains", "true",
                "its includeSubDomains (ConfigMap hsts-include-subdomains)",
                boolean, "true|false"),
    DefaultFlag("--ingress-default-hsts-preload", "false",
                "its preload (ConfigMap hsts-preload)", boolean, "true|false"),
)  # fmt: skip


def add_ingress_default_flags(parser: argparse.ArgumentParser) -> None:
    """The flags, with their built-in defaults (``coxswain compile``)."""
    for flag in INGRESS_DEFAULT_FLAGS:
        parser.add_argument(
            flag.name,
            type=flag.type,
            default=flag.default,
            metavar=flag.metavar,
            help=f"{flag.meaning} (default: {flag.shown or flag.default})".replace("%", "%%"),
        )


def ingress_defaults(args: argparse.Namespace) -> IngressDefaults:
    """The defaults the parsed flags say."""
    return IngressDefaults(
        body_size=args.ingress_default_body_size,
        connect_timeout=args.ingress_default_connect_timeout,
        read_timeout=args.ingress_default_read_timeout,
        send_timeout=args.ingress_default_send_timeout,
        ssl_redirect=args.ingress_default_ssl_redirect,
        hsts=args.ingress_default_hsts,
        hsts_max_age=args.ingress_default_hsts_max_age,
        hsts_include_subdomains=args.ingress_default_hsts_include_subdomains,
        hsts_preload=args.ingress_default_hsts_preload,
    )
