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
An HTTPRoute's rule is answered in HTTP whatever the request: its route chose HTTP.

The answer itself (:func:`grpc_message` for its text) is "Trailers-Only": one HEADERS frame
ending the stream, with ``:status 200``, ``content-type: application/grpc``, ``grpc-status``
and ``grpc-message`` (gRPC over HTTP/2, "Responses"), made by
:func:`coxswain.http2.grpc_answer.grpc_answer_fields`. Pure.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coxswain.route.decision import Decision

__all__ = [
    "GrpcCode",
    "answers_in_grpc",
    "grpc_code",
    "grpc_message",
    "grpc_status",
    "is_grpc_call",
    "is_grpc_media_type",
    "own_label",
    "status_label",
]


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
_LABELS: Final = {str(code).encode(): str(code) for code in range(17)}  # statuscodes.md: 0-16


def is_grpc_call(headers: Iterable[tuple[str, str]]) -> bool:
    """Whether a request is a gRPC call: its ``content-type`` is ``application/grpc``, alone or
    followed by ``+`` or ``;`` (gRPC over HTTP/2, "Requests": ``application/grpc+proto``)."""
    for name, value in headers:
        if name.lower() == "content-type":
            return is_grpc_media_type(value)
    return False


def is_grpc_media_type(value: str) -> bool:
    """Whether a ``content-type`` value is gRPC's (:func:`is_grpc_call`)."""
    media = value.strip().lower()
    rest = media.removeprefix(_GRPC_CONTENT_TYPE)
    return rest != media and (not rest or rest[0] in "+;")


def answers_in_grpc(decision: Decision, *, call: bool) -> bool:
    """Whether what the proxy answers itself on this decision is a gRPC status: on a
    GRPCRoute's rule, or for a gRPC call (``call``) that no rule matched."""
    action = decision.action
    if action is None:
        return call and not decision.matched
    return action.grpc


def grpc_code(status: int, *, filter_problem: bool = False) -> GrpcCode | None:
    """The ``grpc-status`` for the proxy's HTTP answer ``status`` (the module's table), None
    where it stays HTTP; ``filter_problem``: a 500 for a filter the proxy cannot apply."""
    if status == 500 and filter_problem:
        return GrpcCode.INTERNAL
    return _BY_HTTP_STATUS.get(status)


def grpc_message(text: str) -> bytes:
    """``text`` as a ``grpc-message`` value: UTF-8, each byte outside printable ASCII and
    ``%`` itself percent-encoded (gRPC over HTTP/2, "Responses": Percent-Encoded)."""
    return "".join(
        chr(byte) if 0x20 <= byte <= 0x7E and byte != 0x25 else f"%{byte:02X}"
        for byte in text.encode("utf-8")
    ).encode("ascii")


def grpc_status(decision: Decision, *, call: bool) -> GrpcCode | None:
    """The ``grpc-status`` the proxy answers with instead of ``decision.status``, or None when
    it forwards the request or answers in HTTP (the module's table). ``call``: the request is a
    gRPC call (``is_grpc_call``), which decides where no rule matched."""
    if decision.status is None or not answers_in_grpc(decision, call=call):
        return None
    action = decision.action
    return grpc_code(
        decision.status, filter_problem=action is not None and action.problem is not None
    )


def status_label(fields: Iterable[tuple[bytes, bytes]]) -> str:
    """The ``grpc-status`` among a response's header or trailer ``fields`` as a metric label
    of bounded values: the code, ``0`` … ``16`` (gRPC's ``statuscodes.md``), ``other`` for any
    other value, empty without one."""
    for name, value in fields:
        if name == b"grpc-status":
            return _LABELS.get(value, "other")
    return ""


def own_label(decision: Decision, status: int, headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The :func:`status_label` of the proxy's own answer ``status`` to an HTTP/2 request with
    these header fields: the gRPC status it answered with (the module's table), empty where it
    answered in HTTP."""
    call = False
    for name, value in headers:
        if name == b"content-type":
            call = is_grpc_media_type(value.decode("latin-1"))
            break
    if not answers_in_grpc(decision, call=call):
        return ""
    action = decision.action
    problem = decision.status is not None and action is not None and action.problem is not None
    code = grpc_code(status, filter_problem=problem)
    return "" if code is None else str(int(code))
