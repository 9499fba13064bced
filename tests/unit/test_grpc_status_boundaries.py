"""Exact values of the gRPC status the proxy answers a call with itself
(coxswain/route/grpc_status.py; gRPC over HTTP/2, "Responses"): the table from HTTP status to
gRPC code, the percent-encoding of ``grpc-message`` at the edges of printable ASCII, the media
type's edges, and the metric label of the proxy's own answers."""

from __future__ import annotations

import pytest

from coxswain.compile.snapshot import RouteAction, RouteRef
from coxswain.route.decision import Decision
from coxswain.route.grpc_status import (
    GrpcCode,
    answers_in_grpc,
    grpc_code,
    grpc_message,
    grpc_status,
    is_grpc_media_type,
    own_label,
    status_label,
)

REF = RouteRef(kind="GRPCRoute", namespace="ns", name="r", rule="spec.rules[0]")
GRPC_HEADERS = ((b"content-type", b"application/grpc+proto"),)


def decision(status: int | None, *, matched: bool = True, **action: object) -> Decision:
    return Decision(
        matched=matched,
        status=status,
        reason="test",
        host="a.example.com",
        path="/a.B/C",
        action=RouteAction(route=REF, **action) if action else None,
    )


def test_the_codes_are_those_of_grpc_statuscodes():
    assert [(c.name, int(c)) for c in GrpcCode] == [
        ("DEADLINE_EXCEEDED", 4),
        ("UNIMPLEMENTED", 12),
        ("INTERNAL", 13),
        ("UNAVAILABLE", 14),
    ]


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (404, GrpcCode.UNIMPLEMENTED),
        (500, GrpcCode.UNAVAILABLE),
        (502, GrpcCode.UNAVAILABLE),
        (503, GrpcCode.UNAVAILABLE),
        (504, GrpcCode.DEADLINE_EXCEEDED),
        (408, GrpcCode.DEADLINE_EXCEEDED),
        (400, None),
        (413, None),
        (421, None),
        (431, None),
        (501, None),
    ],
)
def test_each_http_status_has_its_grpc_code(status, code):
    assert grpc_code(status) is code


def test_a_500_for_a_filter_is_internal_and_only_a_500():
    assert grpc_code(500, filter_problem=True) is GrpcCode.INTERNAL
    assert grpc_code(503, filter_problem=True) is GrpcCode.UNAVAILABLE
    assert grpc_code(404, filter_problem=True) is GrpcCode.UNIMPLEMENTED


def test_grpc_message_percent_encodes_outside_printable_ascii_and_the_percent_sign():
    assert grpc_message(" ~") == b" ~"
    assert grpc_message("\x1f\x7f") == b"%1F%7F"
    assert grpc_message("100%") == b"100%25"
    assert grpc_message("$&") == b"$&"
    assert grpc_message("é") == b"%C3%A9"
    assert grpc_message("\n") == b"%0A"
    assert grpc_message("") == b""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("application/grpc", True),
        ("  APPLICATION/GRPC  ", True),
        ("application/grpc;", True),
        ("application/grpc+", True),
        ("application/grpcx", False),
        ("application/grp", False),
        ("xapplication/grpc", False),
        ("", False),
    ],
)
def test_the_grpc_media_type_is_alone_or_followed_by_plus_or_semicolon(value, expected):
    assert is_grpc_media_type(value) is expected


def test_the_first_grpc_status_field_gives_the_label():
    assert status_label([(b"grpc-status", b"0"), (b"grpc-status", b"14")]) == "0"
    assert status_label([(b"grpc-status", b"16")]) == "16"
    assert status_label([(b"Grpc-Status", b"1")]) == ""


def test_an_unmatched_request_answers_in_grpc_only_when_it_is_a_call():
    unmatched = decision(404, matched=False)
    assert answers_in_grpc(unmatched, call=True) is True
    assert answers_in_grpc(unmatched, call=False) is False
    matched_elsewhere = decision(404, matched=True)
    assert answers_in_grpc(matched_elsewhere, call=True) is False


def test_a_rule_answers_in_grpc_when_its_route_is_a_grpcroute_whatever_the_request():
    assert answers_in_grpc(decision(503, grpc=True), call=False) is True
    assert answers_in_grpc(decision(503, grpc=False), call=True) is False


def test_grpc_status_needs_an_answer_of_the_proxy_and_a_grpc_answer():
    assert grpc_status(decision(None, grpc=True), call=True) is None
    assert grpc_status(decision(503, grpc=False), call=True) is None
    assert grpc_status(decision(503, grpc=True), call=False) is GrpcCode.UNAVAILABLE
    assert grpc_status(decision(500, grpc=True, problem="x"), call=True) is GrpcCode.INTERNAL
    assert grpc_status(decision(500, grpc=True), call=True) is GrpcCode.UNAVAILABLE
    assert grpc_status(decision(404, matched=False), call=True) is GrpcCode.UNIMPLEMENTED


def test_the_label_of_the_proxys_own_answer():
    unmatched = decision(404, matched=False)
    assert own_label(unmatched, 404, GRPC_HEADERS) == "12"
    assert own_label(unmatched, 404, ((b"content-type", b"application/json"),)) == ""
    assert own_label(unmatched, 404, ()) == ""
    # only the first content-type counts
    two = ((b"content-type", b"text/plain"), (b"content-type", b"application/grpc"))
    assert own_label(unmatched, 404, two) == ""
    # the status given, not the decision's, picks the code
    assert own_label(unmatched, 504, GRPC_HEADERS) == "4"
    assert own_label(unmatched, 400, GRPC_HEADERS) == ""
    rule = decision(500, grpc=True, problem="ExtensionRef")
    assert own_label(rule, 500, ()) == "13"
    forwarded = decision(None, grpc=True, problem="ExtensionRef")
    assert own_label(forwarded, 500, ()) == "14"
    assert own_label(decision(503, grpc=False), 503, GRPC_HEADERS) == ""
