"""A gRPC backend and clients for the tests, on grpcio with generic handlers: messages are
bytes both ways (no serializer), so no protobuf code is generated.

The service ``test.Echo``:

- ``Unary``: the request back, or after ``sleep:S`` sleeps S seconds first (a deadline test),
  or for ``fail`` aborts with NOT_FOUND and a message (a status from the backend);
- ``Server``: ``n:N`` streams N messages ``0`` … ``N-1`` back;
- ``Client``: the client's messages joined by ``|``;
- ``Bidi``: each message back as soon as it arrives, upper-cased;
- ``Hold``: waits until the call is cancelled, and records it (a cancellation test).

Each call but ``Hold`` answers the ``x-forwarded-for`` it received in its initial metadata
(``seen-forwarded-for``), so that the tests see that the proxy forwarded the call.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent import futures
from typing import TYPE_CHECKING, Final, Self

import grpc

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["MESSAGE_LIMIT", "GrpcBackend", "channel_options", "proxy_channel"]

MESSAGE_LIMIT: Final = 8 * 1024 * 1024
SERVICE: Final = "test.Echo"


def channel_options(authority: str) -> list[tuple[str, object]]:
    """Client options: the proxy's virtual host as ``:authority``, no proxy from the
    environment, room for the large-message test."""
    return [
        ("grpc.default_authority", authority),
        ("grpc.enable_http_proxy", 0),
        ("grpc.max_receive_message_length", MESSAGE_LIMIT),
        ("grpc.max_send_message_length", MESSAGE_LIMIT),
    ]


@contextlib.contextmanager
def proxy_channel(port: int, authority: str = "grpc.example.com") -> Iterator[grpc.Channel]:
    """A plaintext channel to the proxy's listener on ``port``, closed after."""
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=channel_options(authority))
    try:
        yield channel
    finally:
        channel.close()


class GrpcBackend:
    """The service on 127.0.0.1, plaintext or (``credentials``) TLS; a context manager."""

    def __init__(self, credentials: grpc.ServerCredentials | None = None) -> None:
        self.cancelled = threading.Event()
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=16),
            options=[
                ("grpc.max_receive_message_length", MESSAGE_LIMIT),
                ("grpc.max_send_message_length", MESSAGE_LIMIT),
            ],
        )
        handlers = {
            "Unary": grpc.unary_unary_rpc_method_handler(self._unary),
            "Server": grpc.unary_stream_rpc_method_handler(self._server),
            "Client": grpc.stream_unary_rpc_method_handler(self._client),
            "Bidi": grpc.stream_stream_rpc_method_handler(self._bidi),
            "Hold": grpc.unary_unary_rpc_method_handler(self._hold),
        }
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),)
        )
        address = "127.0.0.1:0"
        if credentials is None:
            self.port = self.server.add_insecure_port(address)
        else:
            self.port = self.server.add_secure_port(address, credentials)

    def __enter__(self) -> Self:
        self.server.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.stop(0).wait()

    @staticmethod
    def _seen(context: grpc.ServicerContext) -> None:
        metadata = dict(context.invocation_metadata())
        context.send_initial_metadata(
            (("seen-forwarded-for", str(metadata.get("x-forwarded-for", ""))),)
        )

    def _unary(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        if request.startswith(b"sleep:"):  # before any metadata: the answer is still to come
            time.sleep(float(request[6:]))
        self._seen(context)
        if request == b"fail":
            context.abort(grpc.StatusCode.NOT_FOUND, "no such thing: ünïcode")
        return request

    def _server(self, request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        self._seen(context)
        for i in range(int(request.partition(b":")[2])):
            yield str(i).encode()

    def _client(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
        self._seen(context)
        return b"|".join(requests)

    def _bidi(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        self._seen(context)
        for request in requests:
            yield request.upper()

    def _hold(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        done = threading.Event()
        context.add_callback(done.set)
        done.wait(30)
        if not context.is_active():
            self.cancelled.set()
        return request
