"""Writing HTTP/1.1 messages: heads, chunk framing, the last chunk (RFC 9112 §3-§5, §7.1).

Shared by both implementations (serializing is trivial and has no leniency to disagree on).
The caller chooses the framing: put ``content-length`` in the headers and send the body as
is, or put ``transfer-encoding: chunked`` and wrap each piece with :func:`frame_chunk`, ending
with :func:`frame_last_chunk`. Headers are written as given, in order.

Every name must be a token and every value free of CR, LF and NUL (RFC 9110 §5.5): a
violation raises ValueError, because it is our bug (header injection), not the peer's.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "RequestFramer",
    "check_fields",
    "frame_chunk",
    "frame_last_chunk",
    "frame_request_head",
    "frame_response_head",
]

_TOKEN: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE: Final = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_TARGET: Final = re.compile(rb"[\x21-\x7e]+")
_REASON: Final = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")


def check_fields(headers: Sequence[tuple[bytes, bytes]]) -> None:
    """Raise ValueError unless every name is a token and every value free of CR, LF, NUL."""
    for name, value in headers:
        if _TOKEN.fullmatch(name) is None or _VALUE.fullmatch(value) is None:
            raise ValueError(f"invalid header field {name!r}: {value!r}")


def _head(start: bytes, headers: Sequence[tuple[bytes, bytes]], validate: bool) -> bytes:
    """``start``, the field lines, the empty line: one join of the pieces (no formatting)."""
    if validate:
        check_fields(headers)
    parts = [start]
    for name, value in headers:
        parts.append(name)
        parts.append(b": ")
        parts.append(value)
        parts.append(b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def frame_request_head(
    *,
    method: bytes,
    target: bytes,
    headers: Sequence[tuple[bytes, bytes]],
    http_version: bytes = b"1.1",
    validate: bool = True,
) -> bytes:
    """The request line and header section (RFC 9112 §3).

    Args:
        method: a token.
        target: the request-target, no spaces or controls.
        headers: (name, value) pairs written in order; include the framing header yourself.
        http_version: b"1.1" or b"1.0".
        validate: False when every field is known to be valid already (parsed from a peer by
            this package's parsers, or passed through :func:`check_fields`); the request line
            is always checked.

    Returns:
        The head bytes, ending with the empty line.
    """
    if _TOKEN.fullmatch(method) is None or _TARGET.fullmatch(target) is None:
        raise ValueError(f"invalid request line {method!r} {target!r}")
    return _head(b"%s %s HTTP/%s\r\n" % (method, target, http_version), headers, validate)


class RequestFramer:
    """:func:`frame_request_head` without field checks (``validate=False``), the last head
    written kept with what it was written from. Why: a forwarder sends a backend the same
    request again and again (a client's repeated request, the same forwarding fields), and a
    head is a pure function of its method, target and fields, so equal ones get the last
    bytes; comparing the fields costs a fraction of writing them. The fields are copied: the
    caller's list may change after."""

    __slots__ = ("_headers", "_method", "_target", "_written")

    def __init__(self) -> None:
        self._method = b""
        self._target = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._written = b""

    def frame(self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
        """The request head (:func:`frame_request_head`, fields known valid).

        Raises:
            ValueError: the request line cannot be written.
        """
        if (
            self._written
            and method == self._method
            and target == self._target
            and headers == self._headers
        ):
            return self._written
        written = frame_request_head(method=method, target=target, headers=headers, validate=False)
        self._method, self._target, self._headers = method, target, list(headers)
        self._written = written
        return written


def frame_response_head(
    *,
    status: int,
    headers: Sequence[tuple[bytes, bytes]],
    reason: bytes | None = None,
    http_version: bytes = b"1.1",
    validate: bool = True,
) -> bytes:
    """The status line and header section (RFC 9112 §4).

    Args:
        status: 100-999.
        headers: as for :func:`frame_request_head`.
        reason: the reason phrase; None picks the standard phrase (empty when unknown).
        http_version: b"1.1" or b"1.0".
        validate: as for :func:`frame_request_head`; the status line is always checked.

    Returns:
        The head bytes, ending with the empty line.
    """
    if not 100 <= status <= 999:
        raise ValueError(f"invalid status {status}")
    if reason is None:
        try:
            reason = HTTPStatus(status).phrase.encode("ascii")
        except ValueError:
            reason = b""
    if _REASON.fullmatch(reason) is None:
        raise ValueError(f"invalid reason phrase {reason!r}")
    return _head(b"HTTP/%s %d %s\r\n" % (http_version, status, reason), headers, validate)


def frame_chunk(data: bytes) -> bytes:
    """One chunk (RFC 9112 §7.1); empty data gives b"" since a zero chunk would end the body."""
    if not data:
        return b""
    return b"%x\r\n%s\r\n" % (len(data), data)


def frame_last_chunk(trailers: Sequence[tuple[bytes, bytes]] = ()) -> bytes:
    """The last chunk and the trailer section (RFC 9112 §7.1.2)."""
    return _head(b"0\r\n", trailers, True)
