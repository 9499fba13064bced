"""An HTTP/2 request's header list as the proxy's :class:`~coxswain.http1.RequestHead`.

One routing path for both protocols: a request that arrived on an HTTP/2 stream is routed,
filtered and forwarded (to either kind of backend) exactly as one that arrived on an HTTP/1.1
connection. This module is the one place its header list is checked — the ``h2`` library's own
validation is off (:mod:`coxswain.shell.dataplane.h2_connection`), so each field is looked at
once, by the rules the HTTP/1.1 parser applies, which are what the backend will be sent:

1. Pseudo-header fields (RFC 9113 §8.3.1): ``:method``, ``:scheme`` and ``:path`` exactly once,
   ``:authority`` at most once, all before any regular field, no other. ``:path`` is ``*`` (for
   ``OPTIONS``) or an origin-form target: ``/`` then visible ASCII. ``CONNECT`` (and with it
   WebSocket over HTTP/2, RFC 8441) is not served: the caller answers 501.
2. Regular fields: lower-case tokens (RFC 9113 §8.2.1), values of visible ASCII, obs-text, space
   and tab with no leading or trailing whitespace (RFC 9113 §8.2.1, RFC 9110 §5.5). The
   connection-specific fields ``connection``, ``keep-alive``, ``proxy-connection``,
   ``transfer-encoding`` and ``upgrade`` make the request malformed, as does ``te`` other than
   ``trailers`` (RFC 9113 §8.2.2).
3. The Host is ``:authority``; without it, the ``host`` field (RFC 9113 §8.3.1). The head's
   fields start with that ``host``, as an HTTP/1.1 request's do, and a ``host`` field the
   client sent beside ``:authority`` is dropped.
4. Cookies sent as several fields are joined with ``; `` (RFC 9113 §8.2.3): an HTTP/1.1 backend
   expects one ``cookie`` field.
5. Framing: ``content-length`` (one value, digits) sizes the body; a request whose headers did
   not end the stream and give no length has a body of unknown length, sent chunked to the
   backend. ``expect: 100-continue`` is answered by the proxy (:attr:`RequestHead.expect_continue`)
   and not forwarded.

A malformed request is the stream's error only (RFC 9113 §8.1.1): the caller resets that
stream; the connection and its other streams go on.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from coxswain.http1 import RequestHead
from coxswain.http2.fields import field_problem, quoted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.http1 import Headers

__all__ = ["CONNECT_REFUSED", "RequestHeads", "request_head", "trailer_fields"]

CONNECT_REFUSED: Final = "CONNECT (and WebSocket over HTTP/2, RFC 8441) is not served"
"""The reason :func:`request_head` gives for a ``CONNECT``, which the caller answers 501."""

_METHOD: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PATH: Final = re.compile(rb"/[\x21-\x7e]*")
_LENGTH: Final = re.compile(rb"[0-9]{1,18}")
_PSEUDO: Final = frozenset({b":method", b":scheme", b":path", b":authority"})


def request_head(headers: Sequence[tuple[bytes, bytes]], *, ended: bool) -> RequestHead | str:
    """The request's head, or why the request is malformed (one phrase). Pure.

    Args:
        headers: the decoded header list, in order.
        ended: the HEADERS frame ended the stream: the request has no body.
    """
    pseudo: dict[bytes, bytes] = {}
    fields: list[tuple[bytes, bytes]] = []
    cookies: list[bytes] = []
    host: bytes | None = None
    length: int | None = None
    expect = False
    regular = False
    for name, value in headers:
        if name[:1] == b":":
            if regular:
                return f"pseudo-header field {quoted(name)} after a regular field"
            if name not in _PSEUDO:
                return f"unknown pseudo-header field {quoted(name)}"
            if name in pseudo:
                return f"pseudo-header field {quoted(name)} twice"
            pseudo[name] = value
            continue
        regular = True
        problem = field_problem(name, value)
        if problem is not None:
            return problem
        if name == b"host":
            host = value
        elif name == b"cookie":
            cookies.append(value)
        elif name == b"content-length":
            if length is not None or _LENGTH.fullmatch(value) is None:
                return "invalid content-length"
            length = int(value)
            fields.append((name, value))
        elif name == b"expect" and value.lower() == b"100-continue":
            expect = True
        else:
            fields.append((name, value))
    method = pseudo.get(b":method")
    if method == b"CONNECT":
        return CONNECT_REFUSED
    path = pseudo.get(b":path")
    if method is None or path is None or b":scheme" not in pseudo:
        return "missing :method, :scheme or :path"
    if _METHOD.fullmatch(method) is None:
        return "invalid :method"
    if _PATH.fullmatch(path) is None and not (path == b"*" and method == b"OPTIONS"):
        return "invalid :path"
    authority = pseudo.get(b":authority", host)
    if authority is not None:
        fields.insert(0, (b"host", authority))
    if cookies:
        fields.append((b"cookie", b"; ".join(cookies)))
    if ended and length:
        return "content-length without a body"
    return RequestHead(
        method=method,
        target=path,
        http_version=b"2",
        headers=tuple(fields),
        host=authority,
        connection=(),
        keep_alive=True,
        content_length=length,
        chunked=not ended and length is None,
        expect_continue=expect and not ended,
        upgrade=None,
    )


class RequestHeads:
    """:func:`request_head` for one connection, with the last header list it accepted kept.

    Why: a client repeats its requests' header lists on a connection (HPACK makes that cheap
    for it, RFC 7541 §2.3.2: the decoder hands back the same table entries), and checking
    every field costs more than the rest of a small request's path through the connection.
    The head is a pure function of the list and ``ended``, so an equal list gets the head
    made for the last one, without the checks; a list that differs costs one comparison. Each
    call returns a head of its own: the proxy may set a request's fields (the client
    certificate's, :mod:`coxswain.shell.dataplane.served`).
    """

    __slots__ = ("_ended", "_fields", "_head")

    def __init__(self) -> None:
        self._fields: Sequence[tuple[bytes, bytes]] = ()
        self._ended = False
        self._head: RequestHead | None = None

    def head(self, headers: Sequence[tuple[bytes, bytes]], *, ended: bool) -> RequestHead | str:
        """:func:`request_head` of ``headers``."""
        last = self._head
        if last is None or ended != self._ended or headers != self._fields:
            made = request_head(headers, ended=ended)
            if isinstance(made, str):
                return made
            self._fields, self._ended, self._head = headers, ended, made
            last = made
        return RequestHead(
            method=last.method,
            target=last.target,
            http_version=last.http_version,
            headers=last.headers,
            host=last.host,
            connection=last.connection,
            keep_alive=last.keep_alive,
            content_length=last.content_length,
            chunked=last.chunked,
            expect_continue=last.expect_continue,
            upgrade=last.upgrade,
        )


def trailer_fields(headers: Sequence[tuple[bytes, bytes]]) -> Headers | str:
    """A trailer section's fields, checked as a head's regular fields are (no pseudo-header
    field, RFC 9113 §8.1), or why it is malformed. Pure."""
    for name, value in headers:
        problem = field_problem(name, value)
        if problem is not None:
            return problem
    return tuple(headers)
