"""The outcome of routing one request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coxswain.compile.snapshot import (
        Backend,
        ExternalAuth,
        IngressActions,
        RouteAction,
        RouteRef,
    )

__all__ = ["Decision"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The outcome for one request.

    Attributes:
        matched: whether a rule matched.
        status: the status the proxy answers itself, or None when it forwards.
        reason: a sentence saying why.
        route: the rule that matched.
        backends: the rule's backends (one for Ingress rules).
        redirect: the ``Location`` of a redirect.
        host: the Host header to forward.
        path: the path and query to forward.
        action: the HTTPRoute rule's action (header edits, mirrors, timeouts), if any.
        authority: the absolute-form target's authority, which replaced the received Host
            (``route.target``); None for an origin-form target.
        response_fields: fields the response gets: those of the proxy's own answer (a CORS
            preflight's), or those added to the forwarded response (``route.cors``).
        checks: an Ingress path's actions whose per-request checks (client address,
            credentials, body size: ``route.ingress_access``) the proxy runs on each request
            before forwarding; None when there are none.
        timeouts: an Ingress path's (connect, read) timeouts in seconds, each 0 to keep the
            proxy's own (``proxy-connect-timeout``, ``proxy-read-timeout``); None: none set.
        external_auth: the sub-request the proxy sends before forwarding, whose answer
            decides (``auth-url``, ``route.external_auth``); None when there is none.
    """

    matched: bool
    status: int | None
    reason: str
    host: str
    path: str
    route: RouteRef | None = None
    backends: tuple[Backend, ...] = ()
    redirect: str | None = None
    action: RouteAction | None = None
    authority: str | None = None
    response_fields: tuple[tuple[bytes, bytes], ...] = ()
    checks: IngressActions | None = None
    timeouts: tuple[float, float] | None = None
    external_auth: ExternalAuth | None = None
