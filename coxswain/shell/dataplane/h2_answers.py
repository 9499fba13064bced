"""The proxy's own answers on a client's HTTP/2 stream (:mod:`.h2_connection`): a status
page as HEADERS and DATA, or, where the answer is a gRPC status, gRPC's Trailers-Only form
(:mod:`coxswain.route.grpc_status`; gRPC over HTTP/2, "Responses")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coxswain.http2.grpc_answer import grpc_answer_fields
from coxswain.http2.response import stream_fields
from coxswain.route.answers import own_fields
from coxswain.route.grpc_status import answers_in_grpc, grpc_code, is_grpc_media_type
from coxswain.route.relay import SERVER
from coxswain.shell.dataplane.wire import http_date

if TYPE_CHECKING:
    from coxswain.http1 import Headers, RequestHead
    from coxswain.route.decision import Decision
    from coxswain.route.grpc_status import GrpcCode
    from coxswain.shell.dataplane.h2_stream import Sender

__all__ = ["answer_request", "in_grpc", "own_answer"]


def answer_request(
    conn: Sender, stream_id: int, status: int, reason: str, decision: Decision, head: RequestHead
) -> None:
    """Make the frames of the proxy's answer to the request: the decision's own (a redirect,
    a filter's status, with its ``Location`` and fields) when it has a status, else the
    failed exchange's; a gRPC status where :func:`in_grpc` says so."""
    redirect = decision.status is not None
    action = decision.action
    code = grpc_code(
        status, filter_problem=redirect and action is not None and bool(action.problem)
    )
    if code is not None and not in_grpc(decision, head):
        code = None
    own_answer(
        conn,
        stream_id,
        status,
        reason,
        head.method == b"HEAD",
        location=decision.redirect if redirect else None,
        fields=decision.response_fields if redirect else (),
        grpc=code,
    )


def own_answer(
    conn: Sender,
    stream_id: int,
    status: int,
    reason: str,
    head_only: bool,
    location: str | None = None,
    fields: Headers = (),
    grpc: GrpcCode | None = None,
) -> None:
    """Make the frames of the proxy's own response on the stream (the caller has them sent);
    with ``grpc``, that gRPC status in a Trailers-Only answer."""
    if grpc is not None:
        headers = grpc_answer_fields(grpc, reason, server=SERVER, date=http_date())
        conn.send_headers(stream_id, headers, end_stream=True)
        return
    fields_, body = own_fields(status, reason, date=http_date(), location=location, fields=fields)
    headers = stream_fields(status, fields_)
    if head_only or not body:
        conn.send_headers(stream_id, headers, end_stream=True)
    else:
        conn.send_headers(stream_id, headers)
        conn.send_data(stream_id, body, end_stream=True)  # within the first window


def in_grpc(decision: Decision, head: RequestHead) -> bool:
    """Whether the proxy's own answer to the request is a gRPC status: on a GRPCRoute's rule,
    or for a gRPC call (``content-type: application/grpc…``) no rule matched. Asked only when
    the proxy answers: a relayed response needs not know."""
    return answers_in_grpc(decision, call=_is_grpc_call(head))


def _is_grpc_call(head: RequestHead) -> bool:
    for name, value in head.headers:
        if name == b"content-type":
            return is_grpc_media_type(value.decode("latin-1"))
    return False
