"""The answers the proxy makes itself (404, 421, 5xx, redirects, protocol errors), the same on
HTTP/1.1 (:func:`coxswain.shell.dataplane.wire.own_answer`) and HTTP/2
(:mod:`coxswain.shell.dataplane.h2_connection`): ``Server: coxswain`` (docs/contracts.md), the
proxy's ``Date`` (RFC 9110 §6.6.1), and one line of plain text with its ``Content-Length``:
the status, its reason phrase and why, so that a person reading it with curl learns which layer
answered and for what. A 204 has no content (RFC 9110 §15.3.5); a redirect has its
``Location`` (§10.2.2); a CORS preflight its own fields (:mod:`.cors`)."""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING, Final

from coxswain.route.relay import SERVER

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["TEXT_PLAIN", "own_body", "own_fields"]

TEXT_PLAIN: Final = b"text/plain; charset=utf-8"


def own_body(status: int, text: str) -> bytes:
    """``<status> <phrase>: <text>`` and a newline, UTF-8; empty for 204. Pure."""
    if status == 204:
        return b""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    return f"{status} {phrase}: {text}\n".encode("utf-8", "replace")


def own_fields(
    status: int,
    text: str,
    *,
    date: bytes,
    location: str | None = None,
    fields: Sequence[tuple[bytes, bytes]] = (),
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The header fields (names in lower case) and body of an answer. Pure."""
    headers = [(b"server", SERVER), (b"date", date)]
    body = own_body(status, text)
    if status != 204:
        headers.append((b"content-type", TEXT_PLAIN))
        headers.append((b"content-length", str(len(body)).encode()))
    if location is not None:
        headers.append((b"location", location.encode("latin-1", "replace")))
    headers.extend(fields)
    return headers, body
