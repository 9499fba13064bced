"""The gRPC status the proxy answers a gRPC call with where it answers the call itself.

A gRPC client reads a call's outcome from ``grpc-status``, not from the HTTP status: gRPC over
HTTP/2 ("Responses") answers every call HTTP 200, and an answer without a message is
"Trailers-Only", ``grpc-status`` among its headers. So where the proxy answers itself
(``Decision.status``) on a GRPCRoute's rule (``RouteAction.grpc``), or a gRPC call
(``is_grpc_call``) that no rule matched, it sends, for

- 404, no listener or rule matches: 12 UNIMPLEMENTED (what the GRPCRoute conformance tests
  expect of a method no rule matches);
- 500 for a filter it cannot apply (ExtensionRef): 13 INTERNAL;
- 500 for no weighted valid backend, 502, 503: 14 UNAVAILABLE (GRPCRoute ``backendRefs``:
  "UNAVAILABLE statuses MUST be returned for requests that would have otherwise been routed to
  an invalid backend");
- 504 and 408, a timeout: 4 DEADLINE_EXCEEDED.

Its other answers (400, 413, 421, 431, 501) stay HTTP: the request could not be read as a call,
or HTTP itself handles them (a 421 makes a client open another connection, RFC 9110 §15.5.20).
An HTTPRoute's rule is answered in HTTP whatever the request: its route chose HTTP. Pure.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coxswain.route.decision import Decision

__all__ = ["GrpcCode", "grpc_status", "is_grpc_call"]


class GrpcCode(enum.IntEnum):
    """The gRPC status codes the proxy sends, by their names in gRPC's ``statuscodes.md``."""

    DEADLINE_EXCEEDED = 4
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14


_BY_HTTP_STATUS: Final = {
    404: GrpcCode.UNIMPLEMENTED,
    500: GrpcCode.UNAVAILABLE,
    502: GrpcCode.UNAVAILABLE,
    503: GrpcCode.UNAVAILABLE,
    504: GrpcCode.DEADLINE_EXCEEDED,
    408: GrpcCode.DEADLINE_EXCEEDED,
}
_GRPC_CONTENT_TYPE: Final = "application/grpc"


def is_grpc_call(headers: Iterable[tuple[str, str]]) -> bool:
    """Whether a request is a gRPC call: its ``content-type`` is ``application/grpc``, alone or
    followed by ``+`` or ``;`` (gRPC over HTTP/2, "Requests": ``application/grpc+proto``)."""
    for name, value in headers:
        if name.lower() == "content-type":
            media = value.strip().lower()
            rest = media.removeprefix(_GRPC_CONTENT_TYPE)
            return rest != media and (not rest or rest[0] in "+;")
    return False


def grpc_status(decision: Decision, *, call: bool) -> GrpcCode | None:
    """The ``grpc-status`` the proxy answers with instead of ``decision.status``, or None when
    it forwards the request or answers in HTTP (the module's table). ``call``: the request is a
    gRPC call (``is_grpc_call``), which decides where no rule matched."""
    if decision.status is None:
        return None
    action = decision.action
    if action is None:
        if decision.matched or not call:
            return None
    elif not action.grpc:
        return None
    if decision.status == 500 and action is not None and action.problem is not None:
        return GrpcCode.INTERNAL
    return _BY_HTTP_STATUS.get(decision.status)
