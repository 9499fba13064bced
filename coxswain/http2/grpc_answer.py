"""gRPC's answers on an HTTP/2 stream, as header lists.

Where the proxy answers a gRPC call itself (:mod:`coxswain.route.grpc_status`), the answer is
gRPC's "Trailers-Only" (gRPC over HTTP/2, "Responses"): ``:status 200``, ``content-type:
application/grpc``, ``grpc-status`` and ``grpc-message``, in one HEADERS frame that ends the
stream; the client reads the outcome from ``grpc-status``, not from the HTTP status. A call
cut after its response began ends with the same two fields as trailers.
"""

from __future__ import annotations

from typing import Final

from coxswain.route.grpc_status import grpc_message

__all__ = ["grpc_answer_fields", "grpc_trailers"]

_GRPC_CONTENT_TYPE: Final = b"application/grpc"


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
