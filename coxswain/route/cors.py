"""A CORS filter at request time: preflights answered, responses marked (Gateway API
``HTTPCORSFilter``; the Fetch standard's CORS protocol).

Rules, for a request with an ``Origin`` on a rule with a CORS filter:
1. A preflight is an ``OPTIONS`` request with ``Access-Control-Request-Method``. The proxy
   answers it itself, never forwarding it: ``204`` with the CORS fields when the origin is
   allowed, ``403`` without them when it is not (the filter allows either 200/204 without
   the fields or 403; a 403 says why in its body).
2. Any other request is forwarded; when its origin is allowed the response gets
   ``Access-Control-Allow-Origin`` (and ``-Allow-Credentials``, ``-Expose-Headers``),
   replacing the backend's own, and ``Vary: Origin``. From an origin not allowed it gets
   nothing added.
3. The allowed origin is always echoed, never ``*``: correct with credentials or without
   (the spec allows either without), with ``Vary`` naming what the answer depends on.
4. ``allowMethods: ["*"]`` answers the method asked for, ``allowHeaders: ["*"]`` the headers
   asked for (required with credentials, allowed without); without a request for them the
   field is omitted. ``exposeHeaders`` with ``*`` and credentials is omitted ("the gateway
   cannot use the ``*``"). ``Access-Control-Max-Age`` is the filter's ``maxAge``.
5. Requests without ``Origin`` are not CORS requests: nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.compile.cors import ANY, origin_allowed

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from coxswain.compile.snapshot import Cors

__all__ = ["CorsOutcome", "cors_outcome", "with_cors"]

Fields = tuple[tuple[bytes, bytes], ...]

_PREFLIGHT_VARY: Final = (
    b"vary",
    b"Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
)
_VARY: Final = (b"vary", b"Origin")


@dataclass(frozen=True, slots=True)
class CorsOutcome:
    """What the filter does to one request: the status the proxy answers (a preflight's), or
    None to forward; the fields of that answer or to add to the forwarded response; why."""

    status: int | None
    fields: Fields
    reason: str


def cors_outcome(cors: Cors, method: str, origin: str, headers: Mapping[str, str]) -> CorsOutcome:
    """Rules 1 to 4 for a request that sent ``Origin`` (``headers``: lower-cased names). Pure."""
    preflight = method == "OPTIONS" and "access-control-request-method" in headers
    allowed = origin_allowed(cors.allow_origins, origin)
    if not allowed:
        why = f"the Origin {origin!r} is not allowed by the rule's CORS filter"
        return CorsOutcome(403, (), why) if preflight else CorsOutcome(None, (), why)
    fields = [(b"access-control-allow-origin", _field(origin))]
    if cors.allow_credentials:
        fields.append((b"access-control-allow-credentials", b"true"))
    if preflight:
        if methods := _listed(cors.allow_methods, headers["access-control-request-method"]):
            fields.append((b"access-control-allow-methods", methods))
        asked = headers.get("access-control-request-headers")
        if allowed_headers := _listed(cors.allow_headers, asked):
            fields.append((b"access-control-allow-headers", allowed_headers))
    if cors.expose_headers and not (cors.allow_credentials and ANY in cors.expose_headers):
        fields.append((b"access-control-expose-headers", ", ".join(cors.expose_headers).encode()))
    if preflight:
        fields.append((b"access-control-max-age", str(cors.max_age).encode()))
        fields.append(_PREFLIGHT_VARY)
        return CorsOutcome(204, tuple(fields), f"a CORS preflight from {origin!r} allowed")
    fields.append(_VARY)
    return CorsOutcome(None, tuple(fields), f"a CORS request from {origin!r} allowed")


def with_cors(headers: list[tuple[bytes, bytes]], fields: Fields) -> list[tuple[bytes, bytes]]:
    """A response's ``headers`` with the CORS ``fields`` (rule 2): fields of the same names
    replaced, ``Vary`` added to the backend's, and so is ``Set-Cookie`` (an external
    authentication's, ``route.external_auth`` rule 6, which rides along)."""
    replaced = {name for name, _ in fields if name not in (b"vary", b"set-cookie")}
    kept = [(n, v) for n, v in headers if n not in replaced]
    kept.extend(fields)
    return kept


def _listed(configured: Sequence[str], asked: str | None) -> bytes:
    """The value of an allow-list field: what was asked for under ``*``, else the list."""
    if ANY in configured:
        return b"" if asked is None else _field(asked)
    return ", ".join(configured).encode()


def _field(value: str) -> bytes:
    """A client's value written back: it passed the request parser as a field value."""
    return value.encode("latin-1", "replace")
