"""The Ingress annotations Coxswain reads, parsed into typed options.

Users moving from ingress-nginx keep their annotations: each option is read from
``coxswain-labs.dev/<name>`` and, failing that, ``nginx.ingress.kubernetes.io/<name>``
(:mod:`coxswain.compile.ingress.registry` classifies every one of them). Names, defaults and
precedence are ingress-nginx's (its annotation reference; docs/migrating-from-ingress-nginx.md).
A value that does not parse is reported (``InvalidAnnotation``) and that annotation is dropped
(its default applies); the rest of the Ingress is served.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pvector

from coxswain.compile.cors import cors_problem
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.hostnames import ascii_lower, is_hostname
from coxswain.compile.ingress.affinity import read_affinity
from coxswain.compile.ingress.rate_limits import read_rate_limit
from coxswain.compile.ingress.registry import annotation_value, classify
from coxswain.compile.snapshot import Cors, IngressActions

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrsistent.typing import PVector

    from coxswain.compile.model.objects import Ingress

__all__ = ["REDIRECT_VARIABLES", "IngressOptions", "parse_options"]

MAX_VALUE: Final = 2048
"""Characters of a URL, path or header value read from an annotation."""

REDIRECT_VARIABLES: Final = frozenset(
    {"request_uri", "uri", "args", "is_args", "host", "http_host", "scheme"}
)
"""The nginx variables a redirect URL may name (``route.ingress_actions`` expands them)."""

_CORS_DEFAULTS: Final = {
    "cors-allow-origin": "*",
    "cors-allow-methods": "GET, PUT, POST, DELETE, PATCH, OPTIONS",
    "cors-allow-headers": "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,"
    "Cache-Control,Content-Type,Range,Authorization",
    "cors-expose-headers": "",
}
"""ingress-nginx's defaults for the CORS annotations (its annotation reference)."""

MAX_SECONDS: Final = 7 * 86400
MAX_TRIES: Final = 10
_NEXT_UPSTREAM_STATUSES: Final = frozenset({"500", "502", "503", "504", "403", "404", "429"})
_VARIABLE: Final = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_UNSAFE: Final = re.compile(r"[\x00-\x20\x7f]")
_HEADER_UNSAFE: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressOptions:
    """Typed annotation values (ingress-nginx's defaults).

    Attributes:
        ssl_redirect: redirect plain HTTP to HTTPS on hosts that have a certificate (308).
        force_ssl_redirect: the same redirect on every host, with a certificate or not.
        regex: the Ingress's paths are regular expressions (``use-regex``, implied by
            ``rewrite-target``).
        from_to_www: redirect ``www.<host>`` to ``<host>`` or the reverse.
        server_aliases: more host names served like the Ingress's first rule host.
        actions: the per-path actions, None when there are none.
    """

    ssl_redirect: bool = True
    force_ssl_redirect: bool = False
    regex: bool = False
    from_to_www: bool = False
    server_aliases: tuple[str, ...] = ()
    actions: IngressActions | None = None


def parse_options(ingress: Ingress) -> tuple[IngressOptions, list[Diagnostic]]:
    """Read the supported annotations of one Ingress, and report those it does not honour as
    written. Pure."""
    _, found = classify(ingress)
    read = _Reader(ingress, found)
    rewrite_target = read.text("rewrite-target", _no_spaces)
    redirect, status = read.text("temporal-redirect", _redirect_url), 302
    if redirect is not None:
        status = read.code("temporal-redirect-code", 302, 307)
    else:
        redirect = read.text("permanent-redirect", _redirect_url)
        status = read.code("permanent-redirect-code", 301, 308) if redirect else 0
    actions = IngressActions(
        app_root=read.text("app-root", _absolute_path),
        redirect=redirect,
        redirect_status=status if redirect else 0,
        rewrite_target=rewrite_target,
        x_forwarded_prefix=(
            read.text("x-forwarded-prefix", _header_value) if rewrite_target else None
        ),
        upstream_vhost=read.text("upstream-vhost", _authority),
        cors=read.cors(),
        connect_timeout=read.seconds("proxy-connect-timeout"),
        read_timeout=read.seconds("proxy-read-timeout"),
        **read.next_upstream(),
        rate_limit=read_rate_limit(ingress, found),
        affinity=read_affinity(ingress, found),
    )
    options = IngressOptions(
        ssl_redirect=read.boolean("ssl-redirect", default=True),
        force_ssl_redirect=read.boolean("force-ssl-redirect", default=False),
        regex=read.boolean("use-regex", default=False) or rewrite_target is not None,
        from_to_www=read.boolean("from-to-www-redirect", default=False),
        server_aliases=read.aliases(),
        actions=None if actions == IngressActions() else actions,
    )
    return options, found


class _Reader:
    """Reads one Ingress's annotations, reporting values that do not parse into ``found``."""

    def __init__(self, ingress: Ingress, found: list[Diagnostic]) -> None:
        self.ingress = ingress
        self.found = found

    def invalid(self, key: str, message: str) -> None:
        self.found.append(
            Diagnostic(
                key=self.ingress.meta.key,
                field=f"metadata.annotations[{key!r}]",
                severity=Severity.WARNING,
                reason="InvalidAnnotation",
                message=message,
            )
        )

    def boolean(self, name: str, *, default: bool) -> bool:
        read = annotation_value(self.ingress, name)
        if read is None:
            return default
        value, key = read
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        self.invalid(key, f"{value!r} is not true or false; {str(default).lower()} applies")
        return default

    def text(self, name: str, check: Callable[[str], str | None]) -> str | None:
        """The value, or None when unset or refused by ``check`` (which says why)."""
        read = annotation_value(self.ingress, name)
        if read is None:
            return None
        value, key = read
        value = value.strip()
        problem = f"longer than {MAX_VALUE} characters" if len(value) > MAX_VALUE else check(value)
        if problem is None:
            return value
        self.invalid(key, f"{value[:80]!r} {problem}; the annotation is not applied")
        return None

    def code(self, name: str, default: int, highest: int) -> int:
        """A redirect status from 300 to ``highest``; ingress-nginx uses ``default`` for any
        other number, and so does Coxswain, saying so."""
        read = annotation_value(self.ingress, name)
        if read is None:
            return default
        value, key = read
        if value.strip().isdigit() and 300 <= int(value) <= highest:
            return int(value)
        self.invalid(
            key, f"{value[:20]!r} is not a status from 300 to {highest}; {default} applies"
        )
        return default

    def seconds(self, name: str) -> float:
        """ingress-nginx's unitless seconds, above 0 and at most a week; 0 when unset."""
        read = annotation_value(self.ingress, name)
        if read is None:
            return 0
        value, key = read
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if 0 < number <= MAX_SECONDS:
            return number
        self.invalid(key, f"{value[:20]!r} is not a number of seconds from 0 to {MAX_SECONDS}")
        return 0

    def next_upstream(self) -> dict[str, Any]:
        """``proxy-next-upstream`` (default ``error timeout``), ``-tries`` (default 3, ``0``
        unlimited, which Coxswain bounds at ``MAX_TRIES``) and ``-timeout``, as
        ``IngressActions`` fields; none when no annotation is set."""
        policy = annotation_value(self.ingress, "proxy-next-upstream")
        tries = annotation_value(self.ingress, "proxy-next-upstream-tries")
        timeout = self.seconds("proxy-next-upstream-timeout")
        if policy is None and tries is None and not timeout:
            return {}
        count = 3
        if tries is not None:
            if tries[0].strip().isdigit() and int(tries[0]) <= MAX_TRIES:
                count = int(tries[0]) or MAX_TRIES
            else:
                self.invalid(
                    tries[1], f"{tries[0][:20]!r} is not a count to {MAX_TRIES}; 3 applies"
                )
        codes: list[int] = []
        for token in (policy[0] if policy is not None else "error timeout").split():
            if token == "off":
                count = 1
            elif token.startswith("http_") and token[5:] in _NEXT_UPSTREAM_STATUSES:
                codes.append(int(token[5:]))
            elif token not in ("error", "timeout", "invalid_header", "non_idempotent"):
                assert policy is not None
                self.invalid(policy[1], f"{token[:20]!r} is not a proxy-next-upstream case")
        return {
            "next_upstream_tries": count,
            "next_upstream_codes": pvector(sorted(set(codes))),
            "next_upstream_timeout": timeout,
        }

    def cors(self) -> Cors | None:
        """``enable-cors: "true"`` and the ``cors-*`` annotations with ingress-nginx's defaults
        (``_CORS_DEFAULTS``), checked as a Gateway API CORS filter; None when not enabled or
        when a value cannot be honoured (reported)."""
        if not self.boolean("enable-cors", default=False):
            return None

        def listed(name: str, lower: bool = False) -> PVector[str]:
            read = annotation_value(self.ingress, name)
            text = _CORS_DEFAULTS[name] if read is None else read[0]
            items = [i.strip() for i in text.split(",") if i.strip()]
            return pvector(i.lower() if lower else i for i in items)

        age = annotation_value(self.ingress, "cors-max-age")
        cors = Cors(
            allow_origins=listed("cors-allow-origin"),
            allow_methods=pvector(m.upper() for m in listed("cors-allow-methods")),
            allow_headers=listed("cors-allow-headers", lower=True),
            expose_headers=listed("cors-expose-headers", lower=True),
            allow_credentials=self.boolean("cors-allow-credentials", default=True),
            max_age=int(age[0]) if age and age[0].isdigit() and len(age[0]) < 10 else 1728000,
        )
        problem = cors_problem(cors)
        if problem is None:
            return cors
        read = annotation_value(self.ingress, "enable-cors")
        assert read is not None
        self.invalid(read[1], f"the CORS annotations cannot be honoured: {problem}")
        return None

    def aliases(self) -> tuple[str, ...]:
        read = annotation_value(self.ingress, "server-alias")
        if read is None:
            return ()
        value, key = read
        names: list[str] = []
        for part in value.split(",")[:64]:
            name = ascii_lower(part.strip())
            bare = name[2:] if name.startswith("*.") else name
            if is_hostname(bare):
                names.append(name)
            elif name:
                self.invalid(key, f"{name[:80]!r} is not a host name; this alias is not served")
        return tuple(dict.fromkeys(names))


def _no_spaces(value: str) -> str | None:
    if not value:
        return "is empty"
    return "holds a space or a control character" if _UNSAFE.search(value) else None


def _absolute_path(value: str) -> str | None:
    return _no_spaces(value) or (None if value.startswith("/") else "does not start with /")


def _header_value(value: str) -> str | None:
    if _HEADER_UNSAFE.search(value):
        return "holds a control character"
    return None if value.isascii() else "is not ASCII"


def _authority(value: str) -> str | None:
    problem = _no_spaces(value)
    if problem is None and ("/" in value or "$" in value or not value.isascii()):
        return "is not a host[:port] (nginx variables are not expanded here)"
    return problem


def _redirect_url(value: str) -> str | None:
    problem = _no_spaces(value)
    if problem is not None:
        return problem
    if not value.isascii():
        return "is not ASCII"
    if not value.startswith(("http://", "https://", "/", "$scheme://")):
        return "is not an http(s) URL or an absolute path"
    unknown = sorted({m.group(1) for m in _VARIABLE.finditer(value)} - REDIRECT_VARIABLES)
    if unknown:
        return f"names nginx variables Coxswain does not expand: {', '.join(unknown)}"
    return None
