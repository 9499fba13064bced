"""The fast head implementation, on httptools (llhttp, RFC 9112 §3-§5), the default.

httptools is a Cython wrapper with callbacks; this module is the only importer and wraps it
in a narrow typed surface (:class:`_Collector` receives the callbacks; errors become
:class:`~.interface.HeadRejected`). llhttp runs in its strict default mode: no
``set_dangerous_leniencies``.

Where llhttp differs from h11 the shared layer decides: llhttp keeps trailing whitespace in
field values (we strip it, RFC 9110 §5.5), raises ``HttpParserUpgrade`` after the head of an
Upgrade request or 101 response (the head is complete, so that is success here), refuses
duplicate Content-Length (policy for both, :mod:`.syntax`) and unknown methods (501 for both).
Only complete heads are fed, so llhttp never sees a body: framing is shared (:mod:`.body`).
"""

from __future__ import annotations

import httptools

from coxswain.http1.interface import HeadRejected, ParsedRequestHead, ParsedResponseHead

__all__ = ["LlhttpCodec"]


class _Collector:
    """The httptools callback target: accumulates one head."""

    __slots__ = ("complete", "headers", "reason", "url")

    def __init__(self) -> None:
        self.url = b""
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.complete = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value.strip(b" \t")))

    def on_headers_complete(self) -> None:
        self.complete = True


def _feed(
    parser: httptools.HttpRequestParser | httptools.HttpResponseParser,
    collector: _Collector,
    head: bytes,
) -> None:
    try:
        parser.feed_data(head)
    except httptools.HttpParserUpgrade:
        pass  # the head is complete; what follows is not HTTP, and we fed none of it
    except httptools.HttpParserError as exc:
        # A 101 response without ``Connection: upgrade`` surfaces as HPE_PAUSED_UPGRADE wrapped
        # in a plain HttpParserError; once the head is complete, nothing else can fail.
        if not collector.complete:
            raise HeadRejected(str(exc) or type(exc).__name__) from exc


class LlhttpCodec:
    """:class:`~.interface.HeadCodec` on llhttp: one fresh parser per head (about 1 µs)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """``"llhttp"``."""
        return "llhttp"

    @property
    def folds_content_length(self) -> bool:
        """False: each field as sent; llhttp refuses a duplicate itself."""
        return False

    def parse_request_head(self, head: bytes) -> ParsedRequestHead:
        """Parse a complete request head with llhttp; see the Protocol."""
        collector = _Collector()
        parser = httptools.HttpRequestParser(collector)
        _feed(parser, collector, head)
        if not collector.complete:
            raise HeadRejected("incomplete request head")
        version = parser.get_http_version().encode("ascii")
        return parser.get_method(), collector.url, version, tuple(collector.headers)

    def parse_response_head(self, head: bytes) -> ParsedResponseHead:
        """Parse a complete response head with llhttp; see the Protocol."""
        collector = _Collector()
        parser = httptools.HttpResponseParser(collector)
        _feed(parser, collector, head)
        if not collector.complete:
            raise HeadRejected("incomplete response head")
        version = parser.get_http_version().encode("ascii")
        status = parser.get_status_code()
        return status, collector.reason, version, tuple(collector.headers)
