"""Cookie session affinity per request (ingress-nginx's ``affinity: cookie``, its ``sticky``
balancers; the compiled form: :class:`~coxswain.compile.snapshot.Affinity`,
docs/migrating-from-ingress-nginx.md, "Session affinity"). Pure: the proxy supplies a random
draw and the cookie's expiry date.

Rules:
1. The cookie's value is ``<key>|<backend key>``, the backend key ingress-nginx's
   (``md5(md5(name) + name)`` of the upstream ``namespace-service-port``).
2. ``balanced``: the key is hashed onto the backend's endpoints by rendezvous hashing (the
   endpoint with the highest hash of key and endpoint wins), so a key keeps its endpoint while
   it exists, and adding endpoints moves only the keys the new ones win. A request without
   the cookie gets a random key.
3. ``persistent``: the key names one endpoint (a hash of the upstream name and its address);
   a request without the cookie, or whose endpoint is gone, gets a random endpoint.
4. The cookie is set (``Set-Cookie`` on the response) only when a new key was drawn.
5. ``conditional_samesite_none``: ``SameSite=None`` is left out when the request's
   ``User-Agent`` is one of the browsers that reject a cookie carrying it or read it as
   ``Strict`` (Chrome 40 to 69, iOS 12, Safari on macOS 10.14: the list of "SameSite=None:
   Known Incompatible Clients" that ingress-nginx checks, by the same substrings).
6. ``change_on_failure``: the request that another endpoint served after its own failed gets
   a cookie naming that endpoint (:func:`value_for`), as ingress-nginx's balancer sets one
   for the upstream it picks anew: ``persistent`` names it; ``balanced`` draws keys until one
   hashes onto it, a bounded number of hashes (as ingress-nginx draws a bounded number of
   times), and sets none if no draw did.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Final

from coxswain.route.canary import cookie_value

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.snapshot import Affinity, Backend, Endpoint

__all__ = ["cookie_field", "samesite_none_refused", "sticky_endpoint", "value_for"]

_HASHES: Final = 4096  # the most hashes spent looking for a balanced key (rule 6)
_SAMESITE_NONE_REFUSED: Final = (
    "Chrome/4",
    "Chrome/5",
    "Chrome/6",
    "CPU iPhone OS 12",
    "iPad; CPU OS 12",
)


def sticky_endpoint(
    affinity: Affinity,
    backend: Backend,
    endpoints: Sequence[Endpoint],
    headers: Sequence[tuple[bytes, bytes]],
    draw: int,
) -> tuple[Endpoint, str | None]:
    """The endpoint for this request (one of ``endpoints``, not empty) and the cookie value to
    set, None when the request's cookie stands (rules 2 to 4). ``draw`` is a random number."""
    name = f"{backend.namespace}-{backend.service}-{backend.port}"
    written = cookie_value(headers, affinity.cookie_name)
    key = None if written is None else written.split("|", 1)[0]
    if affinity.mode == "persistent":
        named = {_md5(f"{name}{e.address}:{e.port}"): e for e in endpoints}
        if key is not None and key in named:
            return named[key], None
        endpoint = endpoints[draw % len(endpoints)]
        key = _md5(f"{name}{endpoint.address}:{endpoint.port}")
        fresh = True
    else:
        fresh = key is None
        if key is None:
            key = f"{draw:016x}"
        endpoint = max(endpoints, key=lambda e: _md5(f"{key}|{e.address}:{e.port}"))
    return endpoint, f"{key}|{_md5(_md5(name) + name)}" if fresh else None


def value_for(
    affinity: Affinity,
    backend: Backend,
    endpoints: Sequence[Endpoint],
    served: Endpoint,
    draw: int,
) -> str | None:
    """The cookie value that names ``served``, one of ``endpoints`` (rule 6), or None when
    no key was found for it. ``draw`` is a random number."""
    name = f"{backend.namespace}-{backend.service}-{backend.port}"
    suffix = f"|{_md5(_md5(name) + name)}"
    if affinity.mode == "persistent":
        return _md5(f"{name}{served.address}:{served.port}") + suffix
    for step in range(max(1, _HASHES // max(1, len(endpoints)))):
        key = f"{(draw + step) % 2**64:016x}"
        if max(endpoints, key=lambda e: _md5(f"{key}|{e.address}:{e.port}")) == served:
            return key + suffix
    return None


def cookie_field(
    affinity: Affinity,
    value: str,
    *,
    path: str,
    https: bool,
    expires_at: str | None,
    user_agent: str | None = None,
) -> bytes:
    """The ``Set-Cookie`` value (RFC 6265 §4.1), its attributes in ingress-nginx's order.
    ``expires_at``: the HTTP date ``session-cookie-expires`` seconds from now; ``user_agent``:
    the request's, for rule 5."""
    parts = [f"{affinity.cookie_name}={value}"]
    if expires_at is not None:
        parts.append(f"Expires={expires_at}")
    if affinity.max_age:
        parts.append(f"Max-Age={affinity.max_age}")
    if affinity.domain:
        parts.append(f"Domain={affinity.domain}")
    parts.append(f"Path={affinity.path or path}")
    if https if affinity.secure is None else affinity.secure:
        parts.append("Secure")
    parts.append("HttpOnly")
    samesite = affinity.samesite
    if samesite == "None" and affinity.conditional_samesite_none:
        samesite = None if samesite_none_refused(user_agent) else samesite
    if samesite:
        parts.append(f"SameSite={samesite}")
    return "; ".join(parts).encode("latin-1", "replace")


def samesite_none_refused(user_agent: str | None) -> bool:
    """Whether ``user_agent`` is a browser that mishandles ``SameSite=None`` (rule 5).
    Substring tests only: linear in the header's length."""
    if not user_agent:
        return False
    if any(old in user_agent for old in _SAMESITE_NONE_REFUSED):
        return True
    return (
        "Macintosh" in user_agent
        and "Intel Mac OS X 10_14" in user_agent
        and "Safari" in user_agent
        and "Chrome" not in user_agent
    )


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", "replace"), usedforsecurity=False).hexdigest()
