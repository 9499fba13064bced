"""Response header lists for an HTTP/2 stream.

The fields of a relayed response come from the backend's HTTP/1.1 response after the proxy's
relay rules and the route's edits (:mod:`coxswain.route.relay`); on an HTTP/2 stream they are
written with ``:status`` first and names in lower case, and without the connection-specific
fields HTTP/2 forbids (RFC 9113 §8.2.2, §8.3.2). There is no reason phrase in HTTP/2.

Where the proxy answers a gRPC call itself (:mod:`coxswain.route.grpc_status`), the answer is
gRPC's "Trailers-Only" (gRPC over HTTP/2, "Responses"): ``:status 200``, ``content-type:
application/grpc``, ``grpc-status`` and ``grpc-message``, in one HEADERS frame that ends the
stream; the client reads the outcome from ``grpc-status``, not from the HTTP status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from coxswain.route.grpc_status import grpc_message

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["grpc_answer_fields", "grpc_trailers", "stream_fields"]

_CONNECTION_SPECIFIC: Final = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade", b"te"}
)
_STATUS: Final = {code: str(code).encode() for code in range(100, 600)}
_GRPC_CONTENT_TYPE: Final = b"application/grpc"


def stream_fields(status: int, headers: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The header list of a relayed response. Pure."""
    fields = [(b":status", _STATUS.get(status) or str(status).encode())]
    for name, value in headers:
        lower = name.lower()
        if lower not in _CONNECTION_SPECIFIC:
            fields.append((lower, value))
    return fields


def grpc_answer_fields(
    code: int, message: str, *, server: bytes, date: bytes
) -> list[tuple[bytes, bytes]]:
    """The header list of a Trailers-Only answer with ``grpc-status: code``. Pure."""
    return [
        (b":status", b"200"),
        (b"content-type", _GRPC_CONTENT_TYPE),
        *grpc_trailers(code, message),
        (b"server", server),
        (b"date", date),
    ]


def grpc_trailers(code: int, message: str) -> list[tuple[bytes, bytes]]:
    """``grpc-status`` and ``grpc-message``: the trailers that end a gRPC response. Pure."""
    return [(b"grpc-status", str(code).encode()), (b"grpc-message", grpc_message(message))]
