"""The per-request part of an Ingress path's ingress-nginx annotations, run after the cached
routing decision (``Decision.checks``; docs/migrating-from-ingress-nginx.md). Pure.

Order, nginx's as ingress-nginx configures it:
1. CORS (``enable-cors``): a preflight is answered 204 or 403 (``route.cors``, rule 1), in
   nginx's rewrite phase, so before authentication: browsers send preflights without
   credentials;
2. the rate limits (``limit-rps``, ``limit-rpm``; 503), in nginx's preaccess phase, then the
   access checks: 403, 401, 413 (``route.ingress_access``);
3. CORS fields for the forwarded response (``route.cors``, rule 2);
4. the canary's header and cookie (``route.canary``); the weighted draw is the proxy's;
5. external authentication (``auth-url``): the decision carries it, and the proxy sends the
   sub-request before forwarding (``route.external_auth``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Final

from coxswain.route.cors import cors_outcome

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.snapshot import IngressActions
    from coxswain.route.canary import CanaryCheck
    from coxswain.route.decision import Decision
    from coxswain.route.ingress_access import AccessCheck

__all__ = ["LIMITED", "answered", "checked", "kept_fields"]

LIMITED: Final = 503
"""ingress-nginx's ``limit-req-status-code`` and ``limit-conn-status-code``."""


def checked(
    decision: Decision,
    actions: IngressActions,
    access: AccessCheck,
    canary: CanaryCheck | None,
    *,
    client: str | None,
    method: str,
    headers: tuple[tuple[bytes, bytes], ...],
    content_length: int | None,
    verify: Callable[[bytes, str], bool],
    limit: Callable[[], str | None] | None = None,
) -> Decision | None:
    """The decision for this request, or None when it is ``decision`` unchanged. ``limit``
    says why the request is over its rate limits (``shell.dataplane.rate_limits``)."""
    fields: tuple[tuple[bytes, bytes], ...] = ()
    if actions.cors is not None:
        named = {n.decode("latin-1").lower(): v.decode("latin-1") for n, v in headers}
        origin = named.get("origin")
        if origin is not None:
            outcome = cors_outcome(actions.cors, method, origin, named)
            if outcome.status is not None:
                return answered(decision, outcome.status, outcome.reason, outcome.fields)
            fields = outcome.fields
    if limit is not None and (over := limit()) is not None:
        return answered(decision, LIMITED, f"refused: {over}", ())
    authorization = next(
        (v.decode("latin-1") for n, v in headers if n.lower() == b"authorization"), None
    )
    refused = access.refusal(client, authorization, content_length, verify)
    if refused is not None:
        return answered(decision, refused.status, f"refused: {refused.reason}", refused.fields)
    backends = decision.backends
    if canary is not None and len(backends) == 2:  # forwarded, main and canary weighed
        to_canary = canary.choice(headers)
        if to_canary is not None:
            backends = (dataclasses.replace(backends[1 if to_canary else 0], weight=1),)
    if not fields and backends is decision.backends:
        return None
    return dataclasses.replace(
        decision, backends=backends, response_fields=decision.response_fields + fields
    )


def answered(
    decision: Decision, status: int, reason: str, fields: tuple[tuple[bytes, bytes], ...] = ()
) -> Decision:
    """``decision`` turned into the proxy's own answer ``status``."""
    return dataclasses.replace(
        decision,
        status=status,
        reason=f"{decision.reason}; {reason}",
        response_fields=kept_fields(decision) + fields,
        checks=None,
        external_auth=None,
    )


def kept_fields(decision: Decision) -> tuple[tuple[bytes, bytes], ...]:
    """The fields of ``decision`` that the proxy's own answer keeps too: the
    ``Strict-Transport-Security`` of an HTTPS request (``route.select``, step 5)."""
    if not decision.response_fields:
        return ()
    return tuple(f for f in decision.response_fields if f[0] == b"strict-transport-security")
