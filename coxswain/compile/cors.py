"""CORS origins and the checks of a CORS filter (Gateway API ``HTTPCORSFilter``).

An origin is ``scheme://host[:port]`` (RFC 6454 §6.1); without a port it stands for the
scheme's default (80 for ``http``, 443 for ``https``: "This may affect origin matching"). An
allowed origin (``CORSOrigin``) is ``*`` alone, or ``http``/``https`` with a host that is a
DNS name, ``*.`` and a DNS name ("a greedy match to the left, including any number of DNS
labels"), or ``*`` (any host), and an optional port. Matching is case-insensitive: decoding
lower-cases the patterns, :func:`parse_origin` the origin a client sends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from coxswain.compile.http_fields import is_field_name
from coxswain.compile.model.limits import preview

if TYPE_CHECKING:
    from collections.abc import Collection

    from coxswain.compile.snapshot import Cors

__all__ = ["ANY", "Origin", "cors_problem", "origin_allowed", "parse_origin"]

ANY: Final = "*"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_METHODS: Final = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
)
_MOST: Final = 64  # entries of each list (the CRD's maxItems; allowMethods has 9)

Origin = tuple[str, str, int]
"""An origin as compared: scheme and host lower-cased, and the port (the scheme's default
when none was written; 0 for a scheme without one)."""


def parse_origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` as compared, or None when ``text`` is not one (``null``,
    a path, userinfo, a bad port)."""
    scheme, separator, rest = text.partition("://")
    if not separator or not scheme or not rest:
        return None
    scheme = scheme.lower()
    if rest.startswith("["):  # an IPv6 literal (RFC 3986 §3.2.2)
        end = rest.find("]")
        if end < 0:
            return None
        host, tail = rest[: end + 1], rest[end + 1 :]
        if tail and not tail.startswith(":"):
            return None
        port_text = tail[1:]
    else:
        host, _, port_text = rest.partition(":")
    if not host or any(c in host for c in "/?#@\\ "):
        return None
    if not port_text:
        return scheme, host.lower(), _DEFAULT_PORTS.get(scheme, 0)
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        return None
    port = int(port_text)
    if not 1 <= port <= 65535:
        return None
    return scheme, host.lower(), port


def origin_allowed(patterns: Collection[str], origin: str) -> bool:
    """Whether ``origin`` (as the client sent it) matches one of the allowed ``patterns``."""
    if ANY in patterns:
        return True
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    scheme, host, port = parsed
    for pattern in patterns:
        allowed = parse_origin(pattern)
        if allowed is None or allowed[0] != scheme or allowed[2] != port:
            continue
        wanted = allowed[1]
        if wanted in (ANY, host):
            return True
        if wanted.startswith("*.") and host.endswith(wanted[1:]) and len(host) >= len(wanted):
            return True
    return False


def cors_problem(cors: Cors) -> str | None:
    """Why the proxy could not honour ``cors`` as written, or None when it can."""
    lists = (
        ("allowOrigins", cors.allow_origins),
        ("allowMethods", cors.allow_methods),
        ("allowHeaders", cors.allow_headers),
        ("exposeHeaders", cors.expose_headers),
    )
    for name, values in lists:
        if len(values) > _MOST:
            return f"{name} has {len(values)} entries, more than {_MOST}"
        if ANY in values and len(values) > 1 and name != "exposeHeaders":
            return f"{name} cannot hold '*' alongside other values"
    for origin in cors.allow_origins:
        if origin != ANY and not _origin_pattern(origin):
            return (
                f"allowOrigins entry {preview(origin)} is not '*' or "
                "http(s)://host[:port] (a host may start with '*.')"
            )
    for method in cors.allow_methods:
        if method != ANY and method not in _METHODS:
            return f"allowMethods entry {preview(method)} is not an RFC 9110 method or '*'"
    for name, values in lists[2:]:
        for header in values:
            if header != ANY and not is_field_name(header):
                return f"{name} entry {preview(header)} is not an RFC 9110 field name or '*'"
    return None


def _origin_pattern(pattern: str) -> bool:
    """Whether ``pattern`` is an allowed origin other than ``*`` (the CRD's ``CORSOrigin``)."""
    parsed = parse_origin(pattern)
    if parsed is None or parsed[0] not in _DEFAULT_PORTS:
        return False
    host = parsed[1]
    if host == ANY:
        return True
    labels = host.removeprefix("*.").split(".")
    return all(label and _LABEL_CHARS.issuperset(label) for label in labels)
