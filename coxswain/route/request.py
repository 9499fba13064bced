"""What routing needs to know about a request: the port it arrived on and its head."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestHead"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHead:
    """A request as routing sees it.

    Attributes:
        port: the local port the connection arrived on.
        method: the request method.
        target: the origin-form target, path and query.
        host: the Host header value, port included, or None when absent.
        tls: whether the connection is TLS.
        sni: the TLS server name, if any.
        headers: the request's header fields (names in any case), for Gateway API matches.
    """

    port: int
    method: str
    target: str
    host: str | None
    tls: bool = False
    sni: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
