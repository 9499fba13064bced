"""Response header lists for an HTTP/2 stream.

The fields of a relayed response come from the backend's HTTP/1.1 response after the proxy's
relay rules and the route's edits (:mod:`coxswain.route.relay`); on an HTTP/2 stream they are
written with ``:status`` first and names in lower case, and without the connection-specific
fields HTTP/2 forbids (RFC 9113 §8.2.2, §8.3.2). There is no reason phrase in HTTP/2.

Compiled with mypyc (setup.py): every relayed response's fields pass here. The proxy's own
gRPC answers are :mod:`.grpc_answer`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["stream_fields"]

_CONNECTION_SPECIFIC: Final = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade", b"te"}
)
_STATUS: Final = {code: str(code).encode() for code in range(100, 600)}


def stream_fields(status: int, headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The header list of a relayed response. Pure."""
    fields = [(b":status", _STATUS.get(status) or str(status).encode())]
    for name, value in headers:
        lower = name.lower()
        if lower not in _CONNECTION_SPECIFIC:
            fields.append((lower, value))
    return fields
