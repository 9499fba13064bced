"""External authentication per request (ingress-nginx's ``auth-url``; the compiled form:
:class:`~coxswain.compile.snapshot.ExternalAuth`, docs/migrating-from-ingress-nginx.md,
"External authentication"). Pure: the shell sends the sub-request this module writes
(:func:`auth_request`) and hands the answer's status and fields to :func:`auth_outcome`.

The sub-request, as ingress-nginx's ``auth_request`` location writes it:
1. the method is ``auth-method``, else GET (nginx's subrequests); the target is the URL's
   path and query; no body, no ``Content-Length``;
2. the client's fields pass, without the hop-by-hop ones (``route.forward``, rule 1),
   ``Host`` (the auth URL's host), ``X-Forwarded-Proto`` and the forwarding fields the proxy
   sets itself: ``X-Original-URL`` (scheme, Host and request URI of the request),
   ``X-Original-Method``, ``X-Sent-From: nginx-ingress-controller``, ``X-Real-IP`` and
   ``X-Forwarded-For`` (the client's address), ``X-Auth-Request-Redirect``
   (``auth-request-redirect``, else the request URI), and with ``auth-method`` also
   ``X-Original-URI`` and ``X-Scheme``.

Its outcome (nginx's ``auth_request`` module):
3. a 2xx forwards the request; each ``auth-response-headers`` field is set on the forwarded
   request from the auth response, or removed from it when the auth response has none (an
   empty ``proxy_set_header`` sends nothing), so a client cannot forge one;
4. a 401 or 403 is the answer, with the auth response's ``WWW-Authenticate``; a 401 with
   ``auth-signin`` is a 302 to that URL, its variables expanded and the request's URL added in
   the ``auth-signin-redirect-param`` query parameter (``rd``) unless the URL has it already;
5. any other status, or no answer, is 500;
6. the auth response's ``Set-Cookie`` fields go on the forwarded response and on the signin
   redirect; with ``auth-always-set-cookie`` on the 401 and 403 answers too;
7. with ``auth-cache-key``, an auth response is remembered under the key, its nginx
   variables expanded for the request (:func:`cache_key`), for the seconds
   ``auth-cache-duration`` gives its status (:func:`cache_seconds`), and answers for the
   requests with the same key meanwhile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.route.canary import cookie_value
from coxswain.route.client_tls import percent_escaped
from coxswain.route.forward import HOP_BY_HOP, connection_named

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.snapshot import ExternalAuth

__all__ = [
    "AuthOutcome",
    "AuthRequest",
    "auth_outcome",
    "auth_request",
    "cache_key",
    "cache_seconds",
    "signin_location",
]

Fields = tuple[tuple[bytes, bytes], ...]

_SET_BY_PROXY: Final = HOP_BY_HOP | {
    b"host",
    b"content-length",
    b"expect",
    b"http2-settings",
    b"x-forwarded-proto",
    b"x-forwarded-for",
    b"x-real-ip",
    b"x-original-url",
    b"x-original-method",
    b"x-original-uri",
    b"x-scheme",
    b"x-sent-from",
    b"x-auth-request-redirect",
}
_VARIABLE: Final = re.compile(r"\$([a-z_]+)")
_KEY_VARIABLE: Final = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_SIGNIN_STATUS: Final = 302
_UNRESERVED: Final = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)


@dataclass(frozen=True, slots=True)
class AuthRequest:
    """The sub-request's method, target and fields (rules 1 and 2)."""

    method: bytes
    target: bytes
    fields: list[tuple[bytes, bytes]]


@dataclass(frozen=True, slots=True)
class AuthOutcome:
    """What the auth response decides: ``status`` None forwards, with ``request_fields`` set
    on the forwarded request and ``removed`` taken off it; else the proxy answers ``status``
    (with ``location`` for the signin redirect). ``fields`` go on the response either way."""

    status: int | None
    reason: str
    fields: Fields = ()
    request_fields: Fields = ()
    removed: frozenset[bytes] = frozenset()
    location: str | None = None


def auth_request(
    auth: ExternalAuth,
    *,
    method: bytes,
    target: bytes,
    host_header: bytes,
    scheme: bytes,
    client: bytes | None,
    headers: Sequence[tuple[bytes, bytes]],
) -> AuthRequest:
    """The sub-request for a request (rules 1 and 2)."""
    dropped = _SET_BY_PROXY | connection_named(headers)
    fields = [(b"host", auth.host.encode("ascii"))]
    fields.extend((n, v) for n, v in headers if n.lower() not in dropped)
    original_url = scheme + b"://" + host_header + target
    fields += [
        (b"x-original-url", original_url),
        (b"x-original-method", method),
        (b"x-sent-from", b"nginx-ingress-controller"),
    ]
    if client is not None:
        fields += [(b"x-real-ip", client), (b"x-forwarded-for", client)]
    redirect = auth.request_redirect
    fields.append(
        (b"x-auth-request-redirect", target if redirect is None else redirect.encode("ascii"))
    )
    if auth.method is not None:
        fields += [(b"x-original-uri", target), (b"x-scheme", scheme)]
    return AuthRequest(
        method=b"GET" if auth.method is None else auth.method.encode("ascii"),
        target=auth.target.encode("ascii"),
        fields=fields,
    )


def auth_outcome(
    auth: ExternalAuth,
    status: int | None,
    headers: Sequence[tuple[bytes, bytes]],
    *,
    scheme: str,
    host_header: str,
    request_uri: str,
) -> AuthOutcome:
    """What the auth response (``status`` None: there was none) decides (rules 3 to 6)."""
    cookies = tuple((b"set-cookie", v) for n, v in headers if n.lower() == b"set-cookie")
    if status is not None and 200 <= status < 300:
        named: dict[bytes, list[bytes]] = {}
        wanted = {n.encode("ascii") for n in auth.response_headers}
        for name, value in headers:
            lowered = name.lower()
            if lowered in wanted:
                named.setdefault(lowered, []).append(value)
        copied = tuple((n, b", ".join(v)) for n, v in named.items())
        return AuthOutcome(
            None,
            f"authorized by {auth.url}",
            fields=cookies,
            request_fields=copied,
            removed=frozenset(wanted),
        )
    if status == 401 and auth.signin is not None:
        location = signin_location(
            auth, scheme=scheme, host_header=host_header, request_uri=request_uri
        )
        return AuthOutcome(
            _SIGNIN_STATUS,
            f"not authenticated by {auth.url}: redirected to sign in",
            fields=cookies,
            location=location,
        )
    if status in (401, 403):
        challenge = tuple(
            (b"www-authenticate", v) for n, v in headers if n.lower() == b"www-authenticate"
        )
        return AuthOutcome(
            status,
            f"refused by {auth.url} ({status})",
            fields=challenge + (cookies if auth.always_set_cookie else ()),
        )
    said = "no answer" if status is None else f"status {status}"
    return AuthOutcome(500, f"the auth service {auth.url} gave {said}")


def signin_location(auth: ExternalAuth, *, scheme: str, host_header: str, request_uri: str) -> str:
    """The ``auth-signin`` URL of rule 4, its variables expanded (ingress-nginx's
    ``buildAuthSignURL``)."""
    assert auth.signin is not None
    escaped = percent_escaped(request_uri)
    values = {
        "host": host_header.rpartition(":")[0] if _has_port(host_header) else host_header,
        "http_host": host_header,
        "scheme": scheme,
        "request_uri": request_uri,
        "escaped_request_uri": escaped,
    }
    signin = _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), auth.signin)
    query = signin.partition("#")[0].partition("?")[2]
    if any(
        p.startswith(f"{auth.signin_param}=") and p[len(auth.signin_param) + 1 :]
        for p in query.split("&")
    ):
        return signin
    joiner = "&" if query else "?"
    return f"{signin}{joiner}{auth.signin_param}={scheme}://{host_header}{escaped}"


def _has_port(host: str) -> bool:
    return ":" in host and not host.endswith("]")


def cache_key(
    auth: ExternalAuth,
    *,
    client: str | None,
    scheme: str,
    host_header: str,
    target: str,
    headers: Sequence[tuple[bytes, bytes]],
) -> str:
    """``auth-cache-key`` with its variables expanded for this request (rule 7); a field or
    cookie the request lacks is empty, as in nginx."""
    assert auth.cache_key is not None
    path, _, query = target.partition("?")
    values = {
        "remote_addr": client or "",
        "host": host_header.rpartition(":")[0] if _has_port(host_header) else host_header,
        "http_host": host_header,
        "scheme": scheme,
        "request_uri": target,
        "uri": path,
        "args": query,
    }

    def value(name: str) -> str:
        if name.startswith("http_"):
            wanted = name[5:].replace("_", "-").encode("latin-1")
            found = [v for n, v in headers if n.lower() == wanted]
            return b", ".join(found).decode("latin-1")
        if name.startswith("cookie_"):
            return cookie_value(headers, name[7:]) or ""
        return values.get(name, "")

    return _KEY_VARIABLE.sub(lambda m: value(m.group(1)), auth.cache_key)


def cache_seconds(auth: ExternalAuth, status: int | None) -> float:
    """How long an auth response of ``status`` is remembered (rule 7); 0: not at all."""
    if status is None:
        return 0
    for entry in auth.cache_durations:
        code, _, seconds = entry.partition(":")
        if code in ("any", str(status)):
            return float(seconds)
    return 0
