"""The reference head implementation, on h11 (RFC 9112 §3-§5 as h11 reads them).

h11 parses the head; the shared layer (:mod:`.syntax`, :mod:`.body`, :mod:`.parser`) owns
framing and the rules where h11 is more lenient than our policy: h11 unfolds obs-fold, folds
duplicate and comma-listed Content-Length values (``5, 5`` becomes ``5``), accepts any token
as a method and any bytes after ``;`` in a chunk line. Those are all refused in shared code
before or after this parse, so here we only translate h11's events and errors.

h11 reads a response only on a connection that sent a request, so :meth:`parse_response_head`
first sends a fixed request that offers an upgrade (h11 refuses a 101 nobody asked for; the
proxy, which knows what it sent, decides whether a 101 was solicited).
"""

from __future__ import annotations

from typing import Final

import h11

from coxswain.http1.interface import HeadRejected, ParsedRequestHead, ParsedResponseHead

__all__ = ["H11Codec"]

_PRIMER: Final = h11.Request(
    method="GET",
    target="/",
    headers=[("Host", "upstream"), ("Connection", "upgrade"), ("Upgrade", "any")],
)


class H11Codec:
    """:class:`~.interface.HeadCodec` on h11: one fresh ``h11.Connection`` per head."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """``"h11"``."""
        return "h11"

    @property
    def folds_content_length(self) -> bool:
        """True: h11 folds duplicates and comma lists."""
        return True

    def parse_request_head(self, head: bytes) -> ParsedRequestHead:
        """Parse a complete request head with h11; see the Protocol."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=len(head) + 1)
        conn.receive_data(head)
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise HeadRejected(str(exc)) from exc
        if not isinstance(event, h11.Request):
            raise HeadRejected("incomplete request head")
        headers = tuple((name, value) for name, value in event.headers)
        return event.method, event.target, event.http_version, headers

    def parse_response_head(self, head: bytes) -> ParsedResponseHead:
        """Parse a complete response head with h11; see the Protocol."""
        conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=len(head) + 1)
        conn.send(_PRIMER)
        conn.send(h11.EndOfMessage())
        conn.receive_data(head)
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise HeadRejected(str(exc)) from exc
        if not isinstance(event, h11.Response | h11.InformationalResponse):
            raise HeadRejected("incomplete response head")
        headers = tuple((name, value) for name, value in event.headers)
        return event.status_code, event.reason, event.http_version, headers
