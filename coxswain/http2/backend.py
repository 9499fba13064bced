"""What the proxy exchanges with an HTTP/2 backend, the pure parts (RFC 9113 §8).

A request is routed and its head forwarded exactly as towards an HTTP/1.1 backend
(:func:`coxswain.route.forward.forwarded_headers`, the rule's and the backend's edits); only its
form on the wire differs:

1. **Request header list** (:func:`request_fields`): ``:method``, ``:scheme``, ``:authority``
   (the forwarded Host, which replaces the ``host`` field, RFC 9113 §8.3.1) and ``:path``
   first, then the forwarded fields in lower case without the connection-specific ones
   (RFC 9113 §8.2.2), then ``te: trailers``: the proxy takes trailers for itself and its
   client (RFC 9110 §10.1.4), and gRPC servers require the field (gRPC's PROTOCOL-HTTP2,
   "Requests"). A sized body keeps its ``content-length``; an unsized one needs no framing.
2. **Response head** (:func:`response_head`): the backend's header list checked field by field
   (:mod:`.fields`: :mod:`.client` checks frames only) and turned into the
   :class:`~coxswain.http1.ResponseHead` the relay takes from an HTTP/1.1 backend, so that both
   protocols are relayed by one code path. A response whose HEADERS ended the stream has no
   body (a gRPC "Trailers-Only" answer among them); so has one to ``HEAD``, or a 204 or 304.
3. **Trailers** (:func:`trailer_list`): a trailer section as HTTP/2 sends it, names in lower
   case and without the connection-specific fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from coxswain.http1 import ResponseHead
from coxswain.http2.fields import field_problem, quoted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.http1 import Headers

__all__ = ["request_fields", "response_head", "trailer_list"]

_DROPPED: Final = frozenset(
    {
        b"host",
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"transfer-encoding",
        b"upgrade",
    }
)
_TE_TRAILERS: Final = (b"te", b"trailers")
_NO_CONTENT: Final = frozenset({204, 304})
_DIGITS: Final = frozenset(b"0123456789")
_STATUS: Final = {b"%03d" % code: code for code in range(1000)}  # three digits (§8.3.2)


def request_fields(
    *,
    method: bytes,
    scheme: bytes,
    authority: bytes,
    path: bytes,
    headers: Sequence[tuple[bytes, bytes]],
) -> list[tuple[bytes, bytes]]:
    """The header list of a request to an HTTP/2 backend (rule 1). Pure."""
    fields = [(b":method", method), (b":scheme", scheme), (b":authority", authority)]
    fields.append((b":path", path))
    for name, value in headers:
        lower = name if name.islower() else name.lower()  # an HTTP/2 client's are already
        if lower not in _DROPPED:
            fields.append((lower, value))
    fields.append(_TE_TRAILERS)
    return fields


def response_head(
    headers: Sequence[tuple[bytes, bytes]], *, ended: bool, head_request: bool
) -> ResponseHead | str:
    """The response's head, or why it is malformed (one phrase). Pure (rule 2).

    Args:
        headers: the decoded header list of the final response, in order.
        ended: its HEADERS frame ended the stream.
        head_request: the request was ``HEAD``.
    """
    status: int | None = None
    fields: list[tuple[bytes, bytes]] = []
    length: int | None = None
    for name, value in headers:
        if name[:1] == b":":
            if name != b":status" or status is not None or fields:
                return f"unexpected pseudo-header field {quoted(name)}"
            status = _STATUS.get(value)
            if status is None:
                return "invalid :status"
            continue
        problem = field_problem(name, value)
        if problem is not None:
            return problem
        if name == b"content-length":
            if length is not None or not value or not _DIGITS.issuperset(value) or len(value) > 18:
                return "invalid content-length"
            length = int(value)
        fields.append((name, value))
    if status is None or status < 200:
        return "missing or informational :status"
    return ResponseHead(
        status=status,
        reason=b"",
        http_version=b"2",
        headers=tuple(fields),
        connection=(),
        keep_alive=True,
        content_length=length,
        chunked=False,
        has_body=not ended and not head_request and status not in _NO_CONTENT,
    )


def trailer_list(trailers: Headers) -> list[tuple[bytes, bytes]]:
    """A trailer section for an HTTP/2 peer (rule 3). Pure."""
    out = []
    for name, value in trailers:
        lower = name if name.islower() else name.lower()
        if lower not in _DROPPED:
            out.append((lower, value))
    return out
