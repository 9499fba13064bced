"""The GRPCRoute tests' backend and client: a local stand-in for upstream's gRPC echo.

Upstream's GRPCRoute tests (``conformance/tests/grpcroute-*.go``, v1.6.1) reach pods of
``echo-basic`` with ``GRPC_ECHO_SERVER`` (``conformance/echo-basic/grpc``): the service
``gateway_api_conformance.echo_basic.grpcecho.GrpcEcho`` of ``grpcecho.proto``, whose ``Echo``
and ``EchoTwo`` answer an ``EchoResponse`` holding the method called, the request's metadata,
its ``:authority`` and the pod's context, and whose ``EchoThree`` is unimplemented (status
12). The stand-in is a grpcio server speaking h2c, as the pods do behind their Services'
``appProtocol: kubernetes.io/h2c``; its messages are built from a descriptor written here with
the proto file's names and field numbers, so no generated code is needed.

The client is ``conformance/utils/grpc``'s ``DefaultClient.SendRPC``: a call with the
case's metadata (keys lower-cased, as Go's ``metadata.New`` does) and ``:authority`` (the
Gateway's address unless the case names one), its status code, and for an OK call the
``compareResponse`` checks: the fully qualified method, the namespace, the pod's prefix.
"""

from __future__ import annotations

from concurrent import futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import grpc
import trio
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.conformance.echo import pod_name

if TYPE_CHECKING:
    from google.protobuf.message import Message

__all__ = ["SERVICE", "GrpcAnswer", "call_echo", "serve_grpc_echo"]

_PACKAGE: Final = "gateway_api_conformance.echo_basic.grpcecho"
SERVICE: Final = f"{_PACKAGE}.GrpcEcho"
_SERVED: Final = ("Echo", "EchoTwo")  # EchoThree is left unimplemented, as upstream's is
_TIMEOUT: Final = 10.0  # seconds; upstream's MaxTimeToConsistency bounds its calls the same way

_STRING: Final = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_MESSAGE: Final = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
_REPEATED: Final = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
_OPTIONAL: Final = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL

# grpcecho.proto's messages: (field, number, message type or "" for a string, repeated).
_PROTO: Final[dict[str, tuple[tuple[str, int, str, bool], ...]]] = {
    "Header": (("key", 1, "", False), ("value", 2, "", False)),
    "Context": (
        ("namespace", 1, "", False),
        ("ingress", 2, "", False),
        ("service_name", 3, "", False),
        ("pod", 4, "", False),
    ),
    "Assertions": (
        ("fully_qualified_method", 1, "", False),
        ("headers", 2, "Header", True),
        ("authority", 3, "", False),
        ("context", 4, "Context", False),
    ),
    "EchoRequest": (),
    "EchoResponse": (("assertions", 1, "Assertions", False), ("request", 2, "EchoRequest", False)),
}


def _message_classes() -> dict[str, type[Message]]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="grpcecho.proto", package=_PACKAGE, syntax="proto3"
    )
    for name, fields in _PROTO.items():
        message = proto.message_type.add(name=name)
        for field, number, kind, repeated in fields:
            added = message.field.add(
                name=field,
                number=number,
                type=_MESSAGE if kind else _STRING,
                label=_REPEATED if repeated else _OPTIONAL,
            )
            if kind:
                added.type_name = f".{_PACKAGE}.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in _PROTO
    }


_MESSAGES: Final = _message_classes()
_REQUEST: Final = _MESSAGES["EchoRequest"]
_RESPONSE: Final = _MESSAGES["EchoResponse"]


def _handler(method: str, key: str) -> grpc.RpcMethodHandler:
    namespace, deployment = key.split("/")
    context_fields = {"namespace": namespace, "pod": pod_name(deployment, namespace)}

    def echo(request: Message, context: grpc.ServicerContext) -> Message:
        metadata = list(context.invocation_metadata())
        return _RESPONSE(
            assertions={
                "fully_qualified_method": f"/{SERVICE}/{method}",
                "headers": [{"key": k, "value": str(v)} for k, v in metadata],
                "authority": next((str(v) for k, v in metadata if k == ":authority"), ""),
                "context": context_fields,
            },
            request=request,
        )

    return grpc.unary_unary_rpc_method_handler(
        echo,
        request_deserializer=_REQUEST.FromString,
        response_serializer=_RESPONSE.SerializeToString,
    )


async def serve_grpc_echo(key: str, task_status: trio.TaskStatus[int]) -> None:
    """The gRPC echo of Deployment ``key`` (``namespace/name``) on 127.0.0.1, h2c, until
    cancelled; grpcio serves it on its own threads."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handlers = {method: _handler(method, key) for method in _SERVED}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        task_status.started(port)
        await trio.sleep_forever()
    finally:
        server.stop(None)


@dataclass(frozen=True, slots=True)
class GrpcAnswer:
    """A call's outcome: its status code's name, and for an OK call the method, namespace and
    pod the echo reported."""

    code: str
    method: str = ""
    namespace: str = ""
    pod: str = ""


def call_echo(channel: grpc.Channel, method: str, metadata: dict[str, str]) -> GrpcAnswer:
    """One unary call of ``GrpcEcho/<method>`` on ``channel``."""
    call = channel.unary_unary(
        f"/{SERVICE}/{method}",
        request_serializer=_REQUEST.SerializeToString,
        response_deserializer=_RESPONSE.FromString,
    )
    try:
        response: Any = call(
            _REQUEST(), metadata=[(k.lower(), v) for k, v in metadata.items()], timeout=_TIMEOUT
        )
    except grpc.RpcError as err:
        return GrpcAnswer(err.code().name)
    assertions = response.assertions
    return GrpcAnswer(
        "OK",
        assertions.fully_qualified_method,
        assertions.context.namespace,
        assertions.context.pod,
    )
