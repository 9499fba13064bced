"""The one small interface both HTTP/1.1 implementations satisfy: parse a complete head.

Design (RFC 9112 §2.2, §6.3): request smuggling is two parsers disagreeing on where a message
ends. So *framing* is decided once, in shared code (:mod:`.parser`, :mod:`.body`): finding the
end of a head, the size limits, Content-Length and chunked bodies, keep-alive. An
implementation only turns one complete, lexically valid head (start line through the empty
line, see :mod:`.syntax`) into its parts. That is the expensive part (h11's pure-Python head
parsing is most of its CPU per proxied request), so it is the part worth a C parser.

- :class:`HeadCodec` is the Protocol; :mod:`.h11_codec` (the reference) and
  :mod:`.llhttp_codec` (httptools, the fast default) implement it.
- Peer errors are reported by raising :class:`HeadRejected`; the shared parser turns it into a
  ``ProtocolError`` event (400 for requests, 502 for responses).
- Returned header names are lower-cased and values stripped of OWS, so outputs compare equal
  across implementations; the differential test (tests/property/test_http1_differential.py)
  holds them to that.
"""

from __future__ import annotations

from typing import Protocol

from coxswain.http1.events import Headers

__all__ = ["HeadCodec", "HeadRejected", "ParsedRequestHead", "ParsedResponseHead"]

ParsedRequestHead = tuple[bytes, bytes, bytes, Headers]
"""(method, target, http_version such as b"1.1", headers)."""

ParsedResponseHead = tuple[int, bytes, bytes, Headers]
"""(status, reason, http_version, headers)."""


class HeadRejected(Exception):
    """The implementation refused a head; ``str(exc)`` is the reason sentence."""


class HeadCodec(Protocol):
    """Parses one complete HTTP/1.1 head. Stateless between calls; no I/O."""

    @property
    def name(self) -> str:
        """Short identifier: ``"h11"`` or ``"llhttp"``."""
        ...

    @property
    def folds_content_length(self) -> bool:
        """Repeated or comma-listed Content-Length values come out folded into one (h11), so
        the shared rules must count them on the raw head (:mod:`.syntax`); an implementation
        that returns each field as sent, and refuses duplicates itself (llhttp), spares that."""
        ...

    def parse_request_head(self, head: bytes) -> ParsedRequestHead:
        """Parse a request head (RFC 9112 §3, §5).

        Args:
            head: the bytes from the request line through the terminating empty line.

        Returns:
            The method, target, version and headers (names lower-cased, values stripped).

        Raises:
            HeadRejected: the implementation found the head invalid.
        """
        ...

    def parse_response_head(self, head: bytes) -> ParsedResponseHead:
        """Parse a response head (RFC 9112 §4, §5); arguments and errors as for requests."""
        ...
