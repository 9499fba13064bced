"""Shared HTTP/1.1 head rules: one verdict for both implementations (RFC 9112, RFC 9110).

This module owns every rule where h11 and llhttp disagree or are more lenient than we want,
so both codecs give the same answer. Two stages surround the implementation's parse:

1. **Lexical, before parsing** (:func:`check_request_syntax`, :func:`check_response_syntax`):
   one regular expression over the complete head (linear: see "Linear on client bytes" below).
   Rules: lines end in CRLF (no bare CR or LF, RFC 9112 §2.2); the request line is
   ``token SP target SP HTTP/1.x`` (§3) with a VCHAR target and no ``#``; field lines are
   ``token ":" value`` with no whitespace before the colon (§5.1) and no obs-fold (§5.2, h11
   would unfold it); values hold no CTL other than HTAB (RFC 9110 §5.5: NUL, bare CR, DEL are
   refused). The method must be one we know: llhttp refuses any other token, h11 accepts it,
   so we answer 501 for both (RFC 9110 §9.1).
2. **Semantic, after parsing** (:func:`frame_request`, :func:`frame_response`): framing and
   routing-relevant headers, RFC 9112 §6.1 and §6.3:

   - Content-Length: at most one field, one value of 1-18 digits. POLICY: identical duplicates
     are refused, not folded (llhttp refuses them, h11 folds them; refusing is the stricter).
   - Transfer-Encoding with Content-Length: refused (§6.1, the CL.TE/TE.CL smuggling shape).
   - Transfer-Encoding in a request: exactly one field whose value is ``chunked``
     (case-insensitive). POLICY: codings before ``chunked`` (``gzip, chunked``) are refused
     too; nobody sends them and every variant is a TE.TE obfuscation risk. Responses follow the
     same rule (502), so no response body is ever read until close because of an odd coding.
   - Transfer-Encoding in an HTTP/1.0 message: refused (§6.1 says the framing is faulty).
     The accepted value is rewritten as ``chunked`` (h11 lower-cases it, llhttp keeps case).
   - Host: exactly one in HTTP/1.1, at most one in HTTP/1.0, with authority syntax (§3.2).
   - Request-target forms (§3.2): origin-form, absolute-form (http/https), asterisk-form only
     for OPTIONS; authority-form only exists for CONNECT, which we refuse with 501.

Statuses: 400 for malformed requests, 413 for a declared body over the limit, 501 for CONNECT
and unknown methods, 502 for anything wrong in a response. Pure functions, no I/O.

Linear on client bytes: every check here costs time linear in the head, because a worker that
spends seconds on one request stalls every other connection it serves. Regular expressions
are only used in shapes Python's backtracking engine runs in one pass: a quantified character
class is always followed by a byte outside that class (``[^\r]*\r``, a token then ``:``), never
by another quantifier over an overlapping class (``[ \t]*(.*?)[ \t]*`` is quadratic, cubic under
``fullmatch``); trimming is ``bytes.strip``, and lines are found with ``find``/``split``.
tests/hostile/test_hostile_parsing.py keeps it: it measures each parse point at N and 4N bytes
of adversarial input, and holds every pattern of the modules that read client bytes
(``coxswain.http1``, ``coxswain.route``, ``coxswain.shell.dataplane``) to a reviewed allow-list.
"""

from __future__ import annotations

import re
from typing import Final

from coxswain.http1.events import Headers, ProtocolError, RequestHead, ResponseHead

__all__ = [
    "KNOWN_METHODS",
    "check_request_syntax",
    "check_response_syntax",
    "field_line",
    "find_bare_line_break",
    "frame_request",
    "frame_response",
    "header_tokens",
]

# The methods llhttp 9 accepts that are in use (RFC 9110 §9, WebDAV RFC 4918, CalDAV, PURGE,
# QUERY). llhttp refuses every other token, so this list is what makes h11 agree.
KNOWN_METHODS: Final = frozenset(
    b"GET HEAD POST PUT DELETE OPTIONS TRACE PATCH PROPFIND PROPPATCH MKCOL COPY MOVE LOCK "
    b"UNLOCK SEARCH REPORT MKCALENDAR PURGE QUERY".split()
)

_TOKEN: Final = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_FIELD_LINE: Final = _TOKEN + rb":[\t\x20-\x7e\x80-\xff]*\r\n"
_REQUEST_HEAD: Final = re.compile(
    rb"(" + _TOKEN + rb") [\x21\x22\x24-\x7e]+ HTTP/1\.[01]\r\n(?:" + _FIELD_LINE + rb")*\r\n"
)
_RESPONSE_HEAD: Final = re.compile(
    rb"HTTP/1\.[01] [0-9]{3}(?: [\t\x20-\x7e\x80-\xff]*)?\r\n(?:" + _FIELD_LINE + rb")*\r\n"
)
_REQUEST_LINE: Final = re.compile(_TOKEN + rb" [\x21\x22\x24-\x7e]+ HTTP/1\.[01]")
_STATUS_LINE: Final = re.compile(rb"HTTP/1\.[01] [0-9]{3}(?: .*)?")
_FIELD_NAME: Final = re.compile(_TOKEN)
_FIELD_VALUE: Final = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_BARE_LINE_BREAK: Final = re.compile(rb"(?<!\r)\n|\r[^\n]")
_CONTENT_LENGTH: Final = re.compile(rb"[0-9]{1,18}")
_HOST: Final = re.compile(rb"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?")
_ABSOLUTE_FORM: Final = re.compile(rb"(?i)https?://[^/?#@\s]+(?:[/?][\x21-\x7e]*)?")


def find_bare_line_break(data: bytes | bytearray, start: int = 0) -> int:
    """Offset of the first LF without CR or CR without LF at or after ``start``, else -1."""
    found = _BARE_LINE_BREAK.search(data, start)
    return -1 if found is None else found.start()


def _diagnose(head: bytes, *, start_line_ok: bool) -> str:
    """Name the first lexical fault in a head that failed the fast check (error path only)."""
    if find_bare_line_break(head) >= 0:
        return "line ending is not CRLF (bare CR or LF)"
    lines = head[:-4].split(b"\r\n")
    if not start_line_ok:
        return "malformed start line"
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            return "obsolete line folding (obs-fold) in the header section"
        name, colon, value = line.partition(b":")
        if not colon:
            return "field line without a colon"
        if name[-1:] in (b" ", b"\t"):
            return "whitespace between field name and colon"
        if _FIELD_NAME.fullmatch(name) is None:
            return "invalid character in field name"
        if _FIELD_VALUE.fullmatch(value) is None:
            return "control character in field value"
    return "malformed header section"


def check_request_syntax(head: bytes, *, raw_lengths: bool = True) -> ProtocolError | None:
    """Lexical check of a complete request head (RFC 9112 §2.2, §3, §5).

    Args:
        head: request line through the empty line, as received.
        raw_lengths: count and check the Content-Length fields on the raw head (needed when
            the implementation folds them, :attr:`~.interface.HeadCodec.folds_content_length`).

    Returns:
        None when the head is well-formed and the method known, else the error to answer.
    """
    matched = _REQUEST_HEAD.fullmatch(head)
    if matched is None:
        line = head.split(b"\r\n", 1)[0]
        start_ok = _REQUEST_LINE.fullmatch(line) is not None
        return ProtocolError(400, _diagnose(head, start_line_ok=start_ok))
    method = matched.group(1)
    if method == b"CONNECT":
        return ProtocolError(501, "CONNECT is not supported by this proxy")
    if method not in KNOWN_METHODS:
        return ProtocolError(501, "unknown request method")
    return _check_content_length(head, 400) if raw_lengths else None


def _raw_content_lengths(head: bytes) -> list[bytes]:
    """The value of every Content-Length field line of a well-formed head, trimmed of spaces
    and tabs (RFC 9112 §5.1 OWS). h11 folds duplicate and comma-listed values before we could
    see them, so for it the count and the digits are checked on the raw head (llhttp gives
    each field as sent, and :func:`_framing` counts and checks them)."""
    lower = head.lower()
    found: list[bytes] = []
    start = lower.find(b"\r\ncontent-length:")
    while start >= 0:
        value_at = start + len(b"\r\ncontent-length:")
        end = head.find(b"\r\n", value_at)
        found.append(head[value_at:end].strip(b" \t"))
        start = lower.find(b"\r\ncontent-length:", end)
    return found


def field_line(line: bytes) -> tuple[bytes, bytes] | None:
    """``(lower-cased name, value without surrounding spaces and tabs)`` of one field line
    without its CRLF (RFC 9112 §5.1, values as RFC 9110 §5.5), else None."""
    name, colon, value = line.partition(b":")
    if not colon or _FIELD_NAME.fullmatch(name) is None or _FIELD_VALUE.fullmatch(value) is None:
        return None
    return name.lower(), value.strip(b" \t")


def _check_content_length(head: bytes, status: int) -> ProtocolError | None:
    lengths = _raw_content_lengths(head)
    if len(lengths) > 1:
        return ProtocolError(status, "more than one Content-Length")
    if lengths and _CONTENT_LENGTH.fullmatch(lengths[0]) is None:
        return ProtocolError(status, "invalid Content-Length")
    return None


def check_response_syntax(head: bytes, *, raw_lengths: bool = True) -> ProtocolError | None:
    """Lexical check of a complete response head (RFC 9112 §4, §5); errors are 502;
    ``raw_lengths`` as for requests."""
    if _RESPONSE_HEAD.fullmatch(head) is None:
        line = head.split(b"\r\n", 1)[0]
        start_ok = _STATUS_LINE.fullmatch(line) is not None
        return ProtocolError(502, "upstream: " + _diagnose(head, start_line_ok=start_ok))
    return _check_content_length(head, 502) if raw_lengths else None


def header_tokens(headers: Headers, name: bytes) -> list[bytes]:
    """The comma-separated, lower-cased, stripped tokens of every ``name`` field."""
    return _tokens([value for key, value in headers if key == name])


# The fields the shared rules read, gathered in one pass over the header section.
_RULE_FIELDS: Final = frozenset(
    (b"host", b"content-length", b"transfer-encoding", b"connection", b"expect", b"upgrade")
)
_NONE: Final[list[bytes]] = []


def _collect(headers: Headers) -> dict[bytes, list[bytes]]:
    found: dict[bytes, list[bytes]] = {}
    for key, value in headers:
        if key in _RULE_FIELDS:
            found.setdefault(key, []).append(value)
    return found


def _tokens(values: list[bytes]) -> list[bytes]:
    return [t.strip(b" \t").lower() for value in values for t in value.split(b",")]


def _framing(
    found: dict[bytes, list[bytes]], http_version: bytes, status: int
) -> tuple[int | None, bool] | ProtocolError:
    """Content-Length and chunked from the header section (RFC 9112 §6.1-§6.3)."""
    lengths = found.get(b"content-length", _NONE)
    codings = found.get(b"transfer-encoding", _NONE)
    if len(lengths) > 1:
        return ProtocolError(status, "more than one Content-Length")
    if lengths and codings:
        return ProtocolError(status, "both Content-Length and Transfer-Encoding")
    if codings:
        if http_version == b"1.0":
            return ProtocolError(status, "Transfer-Encoding in an HTTP/1.0 message")
        if len(codings) > 1 or codings[0].lower() != b"chunked":
            return ProtocolError(status, "Transfer-Encoding other than a single chunked")
        return None, True
    if lengths:
        if _CONTENT_LENGTH.fullmatch(lengths[0]) is None:
            return ProtocolError(status, "invalid Content-Length")
        return int(lengths[0]), False
    return None, False


def _canonical_chunked(headers: Headers) -> Headers:
    """Write the one Transfer-Encoding value as ``chunked``: h11 lower-cases it, llhttp not."""
    return tuple((k, b"chunked") if k == b"transfer-encoding" else (k, v) for k, v in headers)


def _keep_alive(http_version: bytes, connection: list[bytes]) -> bool:
    if http_version == b"1.1":
        return b"close" not in connection
    return b"keep-alive" in connection and b"close" not in connection


def _check_target(method: bytes, target: bytes) -> str | None:
    """Request-target form by method (RFC 9112 §3.2); the reason when it is wrong."""
    if target[:1] == b"/":
        return None
    if target == b"*":
        return None if method == b"OPTIONS" else "asterisk-form target outside OPTIONS"
    if _ABSOLUTE_FORM.fullmatch(target) is not None:
        return None
    return "request target is not origin-form, absolute-form or asterisk-form"


def frame_request(
    *,
    method: bytes,
    target: bytes,
    http_version: bytes,
    headers: Headers,
    max_body_bytes: int | None,
) -> RequestHead | ProtocolError:
    """Apply the semantic request rules and decide the body framing (RFC 9112 §3.2, §6).

    Args:
        method: the request method, already known to be in :data:`KNOWN_METHODS`.
        target: the request-target as received.
        http_version: b"1.0" or b"1.1".
        headers: lower-cased names, stripped values.
        max_body_bytes: a declared Content-Length above it is answered 413; None for no limit.

    Returns:
        The request head event, or the error to answer.
    """
    reason = _check_target(method, target)
    if reason is not None:
        return ProtocolError(400, reason)
    found = _collect(headers)
    hosts = found.get(b"host", _NONE)
    if len(hosts) > 1:
        return ProtocolError(400, "more than one Host")
    if not hosts and http_version == b"1.1":
        return ProtocolError(400, "missing Host in an HTTP/1.1 request")
    if hosts and _HOST.fullmatch(hosts[0]) is None:
        return ProtocolError(400, "invalid Host")
    framing = _framing(found, http_version, 400)
    if isinstance(framing, ProtocolError):
        return framing
    content_length, chunked = framing
    if chunked:
        headers = _canonical_chunked(headers)
    if (
        max_body_bytes is not None
        and content_length is not None
        and (content_length > max_body_bytes)
    ):
        return ProtocolError(413, "declared Content-Length over the body limit")
    connection = _tokens(found[b"connection"]) if b"connection" in found else _NONE
    upgrade = None
    if http_version == b"1.1" and b"upgrade" in connection:
        offers = found.get(b"upgrade", _NONE)
        upgrade = b", ".join(offers) if offers else None
    expect = _tokens(found[b"expect"]) if b"expect" in found else _NONE
    return RequestHead(
        method=method,
        target=target,
        http_version=http_version,
        headers=headers,
        host=hosts[0] if hosts else None,
        connection=tuple(connection),
        keep_alive=_keep_alive(http_version, connection),
        content_length=content_length,
        chunked=chunked,
        expect_continue=http_version == b"1.1" and b"100-continue" in expect,
        upgrade=upgrade,
    )


def frame_response(
    *,
    status: int,
    reason: bytes,
    http_version: bytes,
    headers: Headers,
    request_method: bytes,
) -> ResponseHead | ProtocolError:
    """Apply the response rules and decide the body framing (RFC 9112 §6.3 rules 1-8).

    Args:
        status: the status code, three digits.
        reason: the reason phrase, possibly empty.
        http_version: b"1.0" or b"1.1".
        headers: lower-cased names, stripped values.
        request_method: the method of the request this answers (HEAD means no body).

    Returns:
        The response head event, or a 502 error.
    """
    if status < 100:
        return ProtocolError(502, "upstream: status code below 100")
    found = _collect(headers)
    framing = _framing(found, http_version, 502)
    if isinstance(framing, ProtocolError):
        return framing
    content_length, chunked = framing
    if chunked:
        headers = _canonical_chunked(headers)
    has_body = not (status < 200 or status in (204, 304) or request_method == b"HEAD")
    connection = _tokens(found[b"connection"]) if b"connection" in found else _NONE
    close_delimited = has_body and content_length is None and not chunked
    return ResponseHead(
        status=status,
        reason=reason,
        http_version=http_version,
        headers=headers,
        connection=tuple(connection),
        keep_alive=_keep_alive(http_version, connection) and not close_delimited,
        content_length=content_length if has_body else None,
        chunked=chunked and has_body,
        has_body=has_body,
    )
