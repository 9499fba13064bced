"""ingress-nginx's external authentication annotations, read into
:class:`~coxswain.compile.snapshot.ExternalAuth` (docs/migrating-from-ingress-nginx.md,
"External authentication"; the proxy's side: ``route.external_auth``). Pure.

Rules, ingress-nginx's (its annotation reference and its ``authreq`` parser):
1. ``auth-url`` is an ``http`` or ``https`` URL with a host; the sub-request's Host is that
   host without its port. nginx variables in it are not expanded by Coxswain: such a URL is
   refused.
2. ``auth-method`` is one of the methods ingress-nginx accepts; ``auth-response-headers`` a
   comma-separated list of field names (letters, digits, ``-`` and ``_``);
   ``auth-request-redirect`` a URL or an absolute path.
3. A value of rules 1 and 2 that does not parse makes the Ingress's paths answer 503, as
   ingress-nginx denies such a location rather than serve it unprotected.
4. ``auth-signin`` is an ``http(s)`` URL or an absolute path, in which ``$host``,
   ``$http_host``, ``$scheme``, ``$request_uri`` and ``$escaped_request_uri`` are expanded;
   ``auth-signin-redirect-param`` (default ``rd``) a query parameter name. A bad value is
   reported and not applied: a 401 is then passed back as it is.
5. ``auth-always-set-cookie`` is ``true`` or ``false`` (default).
6. ``auth-cache-key`` turns on remembering auth responses under the key, in which
   ``$remote_addr``, ``$host``, ``$http_host``, ``$scheme``, ``$request_uri``, ``$uri``,
   ``$args``, ``$http_<field>`` and ``$cookie_<name>`` are expanded per request; another
   variable is reported and nothing is remembered. ``auth-cache-duration`` is nginx's
   ``proxy_cache_valid`` list, comma-separated (``[status …] <time>``, time in ``ms``, ``s``,
   ``m``, ``h``, ``d``, ``w``, ``M`` or ``y``; a time alone is for 200, 301 and 302;
   default ``200 202 401 5m``); one that does not parse is a problem of rule 3, as in
   ingress-nginx.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from pyrsistent import pvector

from coxswain.compile.ingress.registry import annotation_value, invalid_annotation
from coxswain.compile.snapshot import ExternalAuth

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.objects import Ingress

__all__ = ["CACHE_VARIABLES", "SIGNIN_VARIABLES", "read_external_auth"]

CACHE_VARIABLES: Final = frozenset(
    {"remote_addr", "host", "http_host", "scheme", "request_uri", "uri", "args"}
)
"""The nginx variables an ``auth-cache-key`` may name besides ``$http_<field>`` and
``$cookie_<name>`` (``route.external_auth`` expands them)."""

SIGNIN_VARIABLES: Final = frozenset(
    {"host", "http_host", "scheme", "request_uri", "escaped_request_uri"}
)
"""The nginx variables an ``auth-signin`` URL may name (``route.external_auth`` expands them)."""

MAX_URL: Final = 2048
MAX_HEADERS: Final = 64
_METHOD: Final = re.compile(r"GET|HEAD|POST|PUT|PATCH|DELETE|CONNECT|OPTIONS|TRACE")
_HEADER: Final = re.compile(r"[a-zA-Z0-9_-]{1,128}")
_PARAM: Final = re.compile(r"[a-zA-Z0-9_.~-]{1,64}")
_UNSAFE: Final = re.compile(r"[\x00-\x20\x7f]")
_VARIABLE: Final = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_STATUS: Final = re.compile(r"[1-5][0-9][0-9]")
_TIME: Final = re.compile(r"([0-9]{1,9})(ms|s|m|h|d|w|M|y)")
_UNIT_SECONDS: Final = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 7 * 86400,
    "M": 30 * 86400,
    "y": 365 * 86400,
}
_URL: Final = re.compile(
    r"(?P<scheme>https?)://(?:\[(?P<ip6>[0-9a-fA-F:.]{2,45})\]|(?P<host>[^/?#:@\[\]]{1,253}))"
    r"(?::(?P<port>[0-9]{1,5}))?(?P<path>/[^?#]*)?(?:\?(?P<query>[^#]*))?"
)


def read_external_auth(
    ingress: Ingress, problems: list[tuple[str, str]], found: list[Diagnostic]
) -> ExternalAuth | None:
    """The external authentication of ``ingress``, None without ``auth-url`` or when a value
    of rules 1 and 2 does not parse (then ``problems`` says why, rule 3)."""
    read = annotation_value(ingress, "auth-url")
    if read is None:
        return None
    value, key = read
    value = value.strip()
    problem = _url_problem(value, paths=False)
    if problem is not None:
        problems.append((key, f"{value[:80]!r} {problem}"))
        return None
    parts = _URL.fullmatch(value)
    port = int(parts.group("port") or 0) if parts is not None else 0
    if parts is None or not 0 <= port <= 65535 or parts.group("port") == "0":
        problems.append((key, f"{value[:80]!r} is not http(s)://host[:port][/path][?query]"))
        return None
    host = (parts.group("ip6") or parts.group("host")).lower()
    tls = parts.group("scheme") == "https"
    method = annotation_value(ingress, "auth-method")
    if method is not None and not _METHOD.fullmatch(method[0].strip()):
        problems.append((method[1], f"{method[0][:20]!r} is not an HTTP method"))
        return None
    names = annotation_value(ingress, "auth-response-headers")
    headers = [h.strip() for h in names[0].split(",") if h.strip()] if names else []
    if names is not None and (
        len(headers) > MAX_HEADERS or not all(_HEADER.fullmatch(h) for h in headers)
    ):
        problems.append((names[1], "is not a list of header names"))
        return None
    redirect = annotation_value(ingress, "auth-request-redirect")
    if redirect is not None and (
        "$" in redirect[0] or _url_problem(redirect[0].strip(), paths=True) is not None
    ):
        problems.append((redirect[1], "is not an http(s) URL or an absolute path without $"))
        return None
    durations = _cache_durations(ingress, problems)
    if durations is None:
        return None
    cache_key = _cache_key(ingress, found)
    return ExternalAuth(
        url=value,
        host=host,
        port=port or (443 if tls else 80),
        target=(parts.group("path") or "/")
        + (f"?{parts.group('query')}" if parts.group("query") else ""),
        tls=tls,
        method=None if method is None else method[0].strip(),
        signin=_signin(ingress, found),
        signin_param=_signin_param(ingress, found),
        response_headers=pvector(dict.fromkeys(h.lower() for h in headers)),
        request_redirect=None if redirect is None else redirect[0].strip(),
        always_set_cookie=_always_set_cookie(ingress, found),
        cache_key=cache_key,
        cache_durations=pvector(durations if cache_key else ()),
    )


def _url_problem(value: str, *, paths: bool) -> str | None:
    if not value:
        return "is empty"
    if len(value) > MAX_URL:
        return f"is longer than {MAX_URL} characters"
    if _UNSAFE.search(value) or not value.isascii():
        return "holds a space, a control character or a non-ASCII character"
    if not value.startswith(("http://", "https://")) and not (paths and value.startswith("/")):
        return "is not an http(s) URL" + (" or an absolute path" if paths else "")
    known = SIGNIN_VARIABLES if paths else frozenset()
    unknown = sorted({m.group(1) for m in _VARIABLE.finditer(value)} - known)
    if unknown:
        return f"names nginx variables Coxswain does not expand: {', '.join(unknown)}"
    return None


def _signin(ingress: Ingress, found: list[Diagnostic]) -> str | None:
    read = annotation_value(ingress, "auth-signin")
    if read is None:
        return None
    value, key = read
    problem = _url_problem(value.strip(), paths=True)
    if problem is None:
        return value.strip()
    found.append(
        invalid_annotation(ingress, key, f"{value[:80]!r} {problem}; a 401 is passed back as is")
    )
    return None


def _signin_param(ingress: Ingress, found: list[Diagnostic]) -> str:
    read = annotation_value(ingress, "auth-signin-redirect-param")
    if read is None or _PARAM.fullmatch(read[0].strip()):
        return "rd" if read is None else read[0].strip()
    why = f"{read[0][:40]!r} is not a parameter name; rd applies"
    found.append(invalid_annotation(ingress, read[1], why))
    return "rd"


def _always_set_cookie(ingress: Ingress, found: list[Diagnostic]) -> bool:
    read = annotation_value(ingress, "auth-always-set-cookie")
    if read is None:
        return False
    if read[0].strip().lower() in ("true", "false"):
        return read[0].strip().lower() == "true"
    why = f"{read[0][:20]!r} is not true or false; false applies"
    found.append(invalid_annotation(ingress, read[1], why))
    return False


def _cache_key(ingress: Ingress, found: list[Diagnostic]) -> str | None:
    read = annotation_value(ingress, "auth-cache-key")
    if read is None or not read[0].strip():
        return None
    value, key = read[0].strip(), read[1]
    unknown = sorted(
        name
        for name in {m.group(1) for m in _VARIABLE.finditer(value)}
        if name not in CACHE_VARIABLES and not name.startswith(("http_", "cookie_"))
    )
    if len(value) > MAX_URL or unknown:
        why = f"names nginx variables Coxswain does not expand: {', '.join(unknown)}"
        found.append(invalid_annotation(ingress, key, f"{why}; auth responses are not remembered"))
        return None
    return value


def _cache_durations(ingress: Ingress, problems: list[tuple[str, str]]) -> list[str] | None:
    """Rule 6's entries as ``<status>:<seconds>``; None when one does not parse."""
    read = annotation_value(ingress, "auth-cache-duration")
    text = "200 202 401 5m" if read is None or not read[0].strip() else read[0]
    entries: list[str] = []
    for part in (p.strip() for p in text.split(",")[:MAX_HEADERS] if p.strip()):
        *codes, last = part.split()
        time = _TIME.fullmatch(last)
        if time is None or not all(c == "any" or _STATUS.fullmatch(c) for c in codes):
            assert read is not None  # the default parses
            problems.append((read[1], f"{part[:40]!r} is not [status ...] time"))
            return None
        seconds = int(time.group(1)) * _UNIT_SECONDS[time.group(2)]
        entries += [f"{code}:{seconds:g}" for code in codes or ("200", "301", "302")]
    return entries
