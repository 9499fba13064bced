"""Boundaries of the shared HTTP/1.1 head rules (coxswain.http1.syntax; RFC 9112, RFC 9110 §5).

Each case states the exact verdict, reason sentence included: the reasons are what an operator
reads in the access log, and the lexical diagnosis names the first fault of a head. The
semantic rules (:func:`frame_request`, :func:`frame_response`) are called directly, with the
parsed fields a codec hands them, so the cases that no codec lets through (two Content-Length
fields past llhttp) are pinned too.
"""

from __future__ import annotations

import pytest

from coxswain.http1.events import Headers, ProtocolError, RequestHead, ResponseHead
from coxswain.http1.syntax import (
    check_request_syntax,
    check_response_syntax,
    field_line,
    find_bare_line_break,
    frame_request,
    frame_response,
    header_tokens,
)


@pytest.mark.parametrize(
    ("data", "start", "found"),
    [
        (b"\nGET", 0, 0),  # a bare LF first: offset 0 is a find, not "none"
        (b"\rX", 0, 0),
        (b"GET\r\n", 0, -1),
        (b"\n\r\n", 1, -1),  # the search starts at ``start``
        (b"a\r\nb\n", 2, 4),
    ],
)
def test_find_bare_line_break_offsets(data: bytes, start: int, found: int) -> None:
    assert find_bare_line_break(data, start) == found


def test_find_bare_line_break_searches_from_the_start_by_default() -> None:
    assert find_bare_line_break(b"\nabc") == 0


# One fault per head; the start line and the lines before the fault are well-formed, so the
# diagnosis must walk past them to the faulty line (RFC 9112 §2.2, §3, §5.1, §5.2).
@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (b"\nGET / HTTP/1.1\r\n\r\n", "line ending is not CRLF (bare CR or LF)"),
        (b"GET / HTTP/1.1\nHost: a\r\n\r\n", "line ending is not CRLF (bare CR or LF)"),
        (b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "malformed start line"),
        (
            b"GET / HTTP/1.1\r\n folded\r\nHost: a\r\n\r\n",
            "obsolete line folding (obs-fold) in the header section",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
            "obsolete line folding (obs-fold) in the header section",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\n\tfolded\r\n\r\n",
            "obsolete line folding (obs-fold) in the header section",
        ),
        (b"GET / HTTP/1.1\r\nHost: a\r\nNo colon here\r\n\r\n", "field line without a colon"),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nName : b\r\n\r\n",
            "whitespace between field name and colon",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nName\t: b\r\n\r\n",
            "whitespace between field name and colon",
        ),
        (b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", "invalid character in field name"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX\x01: b\r\n\r\n", "invalid character in field name"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: \x01:\r\n\r\n", "control character in field value"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", "control character in field value"),
    ],
)
def test_request_lexical_fault_is_named(head: bytes, reason: str) -> None:
    assert check_request_syntax(head) == ProtocolError(400, reason)


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (b"HTTP/1.1  200 OK\r\n\r\n", "upstream: malformed start line"),
        (
            b"HTTP/1.1 200 OK\r\nA: b\r\nBad Name: x\r\n\r\n",
            "upstream: invalid character in field name",
        ),
        (
            b"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
            "upstream: obsolete line folding (obs-fold) in the header section",
        ),
        # The status line pattern lets any byte through after the code, the head pattern only
        # field-value bytes: the one fault left is in the reason phrase.
        (b"HTTP/1.1 200 O\x01K\r\n\r\n", "upstream: malformed header section"),
    ],
)
def test_response_lexical_fault_is_named(head: bytes, reason: str) -> None:
    assert check_response_syntax(head) == ProtocolError(502, reason)


@pytest.mark.parametrize(
    ("method", "verdict"),
    [
        (b"CONNECT", ProtocolError(501, "CONNECT is not supported by this proxy")),
        (b"BREW", ProtocolError(501, "unknown request method")),
        (b"connect", ProtocolError(501, "unknown request method")),  # methods are case-sensitive
        (b"PURGE", None),
    ],
)
def test_request_method_verdict(method: bytes, verdict: ProtocolError | None) -> None:
    assert check_request_syntax(method + b" / HTTP/1.1\r\nHost: a\r\n\r\n") == verdict


_TWO_LENGTHS = b"Content-Length: 1\r\nContent-Length: 1\r\n\r\n"
_BAD_LENGTH = b"content-length:  5X \r\n\r\n"


def test_raw_content_lengths_are_checked_by_default() -> None:
    assert check_request_syntax(b"POST / HTTP/1.1\r\n" + _TWO_LENGTHS) == ProtocolError(
        400, "more than one Content-Length"
    )
    assert check_response_syntax(b"HTTP/1.1 200 OK\r\n" + _TWO_LENGTHS) == ProtocolError(
        502, "more than one Content-Length"
    )


def test_raw_content_lengths_are_not_checked_when_the_codec_keeps_fields() -> None:
    assert check_request_syntax(b"POST / HTTP/1.1\r\n" + _TWO_LENGTHS, raw_lengths=False) is None
    assert check_response_syntax(b"HTTP/1.1 200 OK\r\n" + _TWO_LENGTHS, raw_lengths=False) is None


def test_raw_content_length_value_is_trimmed_of_ows_only() -> None:
    assert check_request_syntax(b"POST / HTTP/1.1\r\n" + _BAD_LENGTH) == ProtocolError(
        400, "invalid Content-Length"
    )
    assert check_response_syntax(b"HTTP/1.1 200 OK\r\n" + _BAD_LENGTH) == ProtocolError(
        502, "invalid Content-Length"
    )
    assert check_request_syntax(b"POST / HTTP/1.1\r\nContent-Length: \t7 \r\n\r\n") is None


@pytest.mark.parametrize(
    ("line", "field"),
    [
        (b"A-B: x:y ", (b"a-b", b"x:y")),  # the first colon ends the name
        (b"a: \tXvX\t ", (b"a", b"XvX")),  # only spaces and tabs are trimmed
        (b"a b: x", None),
        (b"a: \x00", None),
        (b"no colon", None),
    ],
)
def test_field_line(line: bytes, field: tuple[bytes, bytes] | None) -> None:
    assert field_line(line) == field


def test_header_tokens_of_the_named_field_only() -> None:
    headers = ((b"connection", b"Keep-Alive ,\tXclose"), (b"upgrade", b"h2c"))
    assert header_tokens(headers, b"connection") == [b"keep-alive", b"xclose"]
    assert header_tokens(headers, b"upgrade") == [b"h2c"]
    assert header_tokens(headers, b"te") == []


def test_header_tokens_trim_ows_only() -> None:
    # OWS is spaces and tabs (RFC 9110 §5.6.3); other whitespace stays part of the token.
    assert header_tokens(((b"x", b"\x0ba b\x0c"),), b"x") == [b"\x0ba b\x0c"]


def _request(
    *headers: tuple[bytes, bytes],
    method: bytes = b"GET",
    target: bytes = b"/",
    version: bytes = b"1.1",
    max_body: int | None = None,
) -> RequestHead | ProtocolError:
    return frame_request(
        method=method,
        target=target,
        http_version=version,
        headers=headers,
        max_body_bytes=max_body,
    )


_HOST = (b"host", b"a")


@pytest.mark.parametrize(
    ("method", "target", "error"),
    [
        (b"GET", b"*", ProtocolError(400, "asterisk-form target outside OPTIONS")),
        (
            b"GET",
            b"example.com:80",
            ProtocolError(400, "request target is not origin-form, absolute-form or asterisk-form"),
        ),
    ],
)
def test_request_target_form(method: bytes, target: bytes, error: ProtocolError) -> None:
    assert _request(_HOST, method=method, target=target) == error


@pytest.mark.parametrize(
    ("headers", "version", "error"),
    [
        ((_HOST, _HOST), b"1.1", ProtocolError(400, "more than one Host")),
        ((), b"1.1", ProtocolError(400, "missing Host in an HTTP/1.1 request")),
        (((b"host", b"a b"),), b"1.1", ProtocolError(400, "invalid Host")),
        (
            (_HOST, (b"content-length", b"1"), (b"content-length", b"1")),
            b"1.1",
            ProtocolError(400, "more than one Content-Length"),
        ),
        (
            (_HOST, (b"content-length", b"1"), (b"transfer-encoding", b"chunked")),
            b"1.1",
            ProtocolError(400, "both Content-Length and Transfer-Encoding"),
        ),
        (
            (_HOST, (b"transfer-encoding", b"chunked")),
            b"1.0",
            ProtocolError(400, "Transfer-Encoding in an HTTP/1.0 message"),
        ),
        (
            (_HOST, (b"transfer-encoding", b"chunked"), (b"transfer-encoding", b"chunked")),
            b"1.1",
            ProtocolError(400, "Transfer-Encoding other than a single chunked"),
        ),
        (
            (_HOST, (b"transfer-encoding", b"gzip, chunked")),
            b"1.1",
            ProtocolError(400, "Transfer-Encoding other than a single chunked"),
        ),
        (
            (_HOST, (b"content-length", b"-1")),
            b"1.1",
            ProtocolError(400, "invalid Content-Length"),
        ),
    ],
)
def test_request_framing_error(headers: Headers, version: bytes, error: ProtocolError) -> None:
    assert _request(*headers, version=version) == error


def test_declared_length_over_the_body_limit() -> None:
    at_limit = _request(_HOST, (b"content-length", b"10"), max_body=10)
    assert isinstance(at_limit, RequestHead)
    assert at_limit.content_length == 10
    assert _request(_HOST, (b"content-length", b"11"), max_body=10) == ProtocolError(
        413, "declared Content-Length over the body limit"
    )


def test_request_upgrade_offers_are_joined() -> None:
    head = _request(
        _HOST, (b"connection", b"Upgrade"), (b"upgrade", b"h2c"), (b"upgrade", b"websocket")
    )
    assert isinstance(head, RequestHead)
    assert head.upgrade == b"h2c, websocket"


def test_request_upgrade_without_an_offer_is_none() -> None:
    head = _request(_HOST, (b"connection", b"upgrade"))
    assert isinstance(head, RequestHead)
    assert (head.connection, head.upgrade) == ((b"upgrade",), None)


@pytest.mark.parametrize(
    ("connection", "keep_alive"),
    [
        (b"keep-alive", True),
        (b"keep-alive, close", False),
        (b"Keep-Alive, CLOSE", False),
        (b"", False),
    ],
)
def test_http_1_0_keep_alive(connection: bytes, keep_alive: bool) -> None:
    head = _request((b"connection", connection), version=b"1.0")
    assert isinstance(head, RequestHead)
    assert head.keep_alive is keep_alive


def _response(
    *headers: tuple[bytes, bytes], status: int = 200, version: bytes = b"1.1"
) -> ResponseHead | ProtocolError:
    return frame_response(
        status=status, reason=b"", http_version=version, headers=headers, request_method=b"GET"
    )


def test_response_status_below_100() -> None:
    assert _response(status=99) == ProtocolError(502, "upstream: status code below 100")


def test_response_connection_options() -> None:
    head = _response((b"connection", b"Close, TE"), (b"content-length", b"0"))
    assert isinstance(head, ResponseHead)
    assert (head.connection, head.keep_alive) == ((b"close", b"te"), False)


def test_response_two_lengths() -> None:
    assert _response((b"content-length", b"1"), (b"content-length", b"1")) == ProtocolError(
        502, "more than one Content-Length"
    )
