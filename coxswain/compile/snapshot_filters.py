"""The compiled forms of Gateway API route matches and filters, as the Snapshot holds them
(:mod:`.snapshot`): value and route matches, header edits, path edits, redirects, rewrites,
CORS (GEP-1767) and retries (GEP-1731). They refer to nothing else of the Snapshot, so the
route actions and backends of :mod:`.snapshot` are built on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PVector

__all__ = [
    "Cors",
    "HeaderEdits",
    "PathEdit",
    "Redirect",
    "Retry",
    "Rewrite",
    "RouteMatch",
    "ValueMatch",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueMatch:
    """A header (name lower-case) or query parameter match: ``Exact`` or ``RegularExpression``."""

    name: str
    type: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteMatch:
    """One HTTPRoute or GRPCRoute match: path (``Exact``/``PathPrefix``/``RegularExpression``),
    headers, query parameters and method, all ANDed. A GRPCRoute's service and method are a
    path match on ``/service/method`` (GEP-1016, "Matcher Types";
    ``compile.gateway.grpc_matches``)."""

    path_type: str
    path: str
    headers: PVector[ValueMatch] = pvector()
    query: PVector[ValueMatch] = pvector()
    method: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HeaderEdits:
    """``set`` replaces, ``add`` appends, ``remove`` deletes (names lower-case)."""

    set: PVector[tuple[str, str]] = pvector()
    add: PVector[tuple[str, str]] = pvector()
    remove: PVector[str] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class PathEdit:
    """``ReplaceFullPath`` or ``ReplacePrefixMatch`` with its value."""

    type: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Redirect:
    """A RequestRedirect; None keeps the request's scheme, host or port."""

    status: int
    scheme: str | None = None
    hostname: str | None = None
    port: int | None = None
    path: PathEdit | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Rewrite:
    """A URLRewrite of host and/or path."""

    hostname: str | None = None
    path: PathEdit | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Cors:
    """A CORS filter (Gateway API ``HTTPCORSFilter``), as written and checked: origins
    (``*``, or ``scheme://host[:port]`` whose host may start with ``*.``), methods (``*`` or
    RFC 9110 tokens), header names lower-cased (``*`` alone means any), ``max_age`` in seconds.
    The proxy answers preflights and marks responses with it (:mod:`coxswain.route.cors`)."""

    allow_origins: PVector[str] = pvector()
    allow_methods: PVector[str] = pvector()
    allow_headers: PVector[str] = pvector()
    expose_headers: PVector[str] = pvector()
    allow_credentials: bool = False
    max_age: int = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry:
    """An HTTPRoute rule's ``retry`` (Gateway API ``HTTPRouteRetry``): how many times a failed
    backend request is tried again (``attempts``, after the first), on which response
    ``codes`` (and always on connection errors and backend timeouts), waiting at least
    ``backoff`` seconds before each. The proxy's loop: ``shell.dataplane.upstream``."""

    codes: PVector[int] = pvector()
    attempts: int = 2
    backoff: float = 0.025
