"""Request-target forms as routing sees them (RFC 9112 §3.2).

POLICY: a request whose target is absolute-form (``GET http://c.example/x``) is routed by the
target's authority and forwarded in origin form (``/x``) with that authority as Host. RFC 9112
§3.2.2 says a server receiving an absolute-form target MUST ignore the Host field and use the
target's authority; routing by Host and forwarding the whole URL as the path would let a client
reach one host's backend with a request the backend reads as another's. Only ``http`` and
``https`` name an origin this proxy serves (RFC 9110 §4.2); any other scheme, an empty
authority, or userinfo (RFC 9110 §4.2.4) is refused with 400. Origin-form and asterisk-form
targets are kept as sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["Target", "origin_form"]

_SCHEMES: Final = frozenset({"http", "https"})


@dataclass(frozen=True, slots=True)
class Target:
    """A request-target in origin form, and the authority of an absolute-form one.

    Attributes:
        target: path and query (``/`` when the absolute-form target had no path).
        authority: the absolute-form target's authority, which replaces Host; None for an
            origin-form or asterisk-form target.
    """

    target: str
    authority: str | None


def origin_form(target: str) -> Target | str:
    """The origin form of ``target``, or the reason it cannot be served (a 400)."""
    if target[:1] == "/" or target == "*":
        return Target(target, None)
    scheme, separator, rest = target.partition("://")
    if not separator:
        return "the request target is not origin-form, absolute-form or asterisk-form"
    if scheme.lower() not in _SCHEMES:
        return f"the request target's scheme {scheme!r} is not http or https"
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            end = min(end, found)
    authority, path = rest[:end], rest[end:]
    if not authority or "@" in authority:
        return f"the request target's authority {authority!r} is empty or has userinfo"
    if not path.startswith("/"):
        path = "/" + path
    return Target(path, authority)
