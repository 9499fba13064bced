"""gRPC through the proxy on real sockets: grpcio clients, the proxy, a grpcio backend reached
over HTTP/2 (prior knowledge, or TLS with ALPN h2), and the proxy's own answers as gRPC
statuses (gRPC over HTTP/2, PROTOCOL-HTTP2.md; GEP-1016)."""

from __future__ import annotations

import ssl
import struct
import threading
import time
from typing import TYPE_CHECKING, Any

import grpc
import h11
import pytest
import trustme

from coxswain.route.grpc_timeout import grpc_timeout

from .grpc_backend import GrpcBackend, channel_options
from .h2_backend import H2Backend
from .h2_client import H2Client
from .proxy_harness import (
    TIMEOUT,
    backend,
    eventually,
    gateway_rule,
    request,
    run_proxy,
    snapshot,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    import trio

    from .proxy_harness import Running

AUTHORITY = "grpc.example.com"
Snapshot = dict[str, Any]


def grpc_rule(*, path: str = "/", **action: Any) -> dict[str, Any]:
    rule = gateway_rule(
        [backend("grpc", protocol="h2c", **action.pop("backend_extra", {}))],
        grpc=True,
        **action,
    )
    rule["route"]["kind"] = "GRPCRoute"
    rule["match"]["path"] = path
    return rule


def grpc_snapshot(port: int | None, rule: dict[str, Any] | None = None) -> Callable[..., Snapshot]:
    def make(ports: dict[str, int]) -> Snapshot:
        return snapshot(
            endpoints={"grpc": [] if port is None else [port]},
            gateway_port=ports["gateway"],
            gateway_rules=[rule or grpc_rule()],
        )

    return make


def through(
    make: Callable[..., Snapshot], check: Callable[[grpc.Channel, Running], None], tmp_path: Path
) -> None:
    def client(run: Running) -> None:
        channel = grpc.insecure_channel(
            f"127.0.0.1:{run.gateway_port}", options=channel_options(AUTHORITY)
        )
        try:
            check(channel, run)
        finally:
            channel.close()

    run_proxy(tmp_path, make, client, backends=())


def test_unary_and_streaming_calls_pass_through_with_their_statuses(tmp_path: Path) -> None:
    with GrpcBackend() as service:

        def check(channel: grpc.Channel, _: Running) -> None:
            unary = channel.unary_unary("/test.Echo/Unary")
            answer, call = unary.with_call(b"hello", timeout=TIMEOUT)
            assert answer == b"hello"
            metadata = dict(call.initial_metadata())
            assert metadata["seen-forwarded-for"] == "127.0.0.1"
            assert metadata["server"] == "coxswain"
            streamed = channel.unary_stream("/test.Echo/Server")(b"n:50", timeout=TIMEOUT)
            assert list(streamed) == [str(i).encode() for i in range(50)]
            joined = channel.stream_unary("/test.Echo/Client")(
                iter([b"a", b"b", b"c"]), timeout=TIMEOUT
            )
            assert joined == b"a|b|c"
            with pytest.raises(grpc.RpcError) as failed:
                unary(b"fail", timeout=TIMEOUT)
            assert failed.value.code() == grpc.StatusCode.NOT_FOUND  # the backend's trailers
            assert failed.value.details() == "no such thing: ünïcode"

        through(grpc_snapshot(service.port), check, tmp_path)


def test_a_bidirectional_call_streams_each_message_both_ways(tmp_path: Path) -> None:
    """Each answer comes back before the next message is sent: neither side is buffered."""
    with GrpcBackend() as service:

        def check(channel: grpc.Channel, _: Running) -> None:
            outgoing: list[bytes] = []
            ready = threading.Semaphore(0)

            def messages() -> Iterator[bytes]:
                for i in range(20):
                    message = f"m{i}".encode()
                    outgoing.append(message)
                    yield message
                    assert ready.acquire(timeout=TIMEOUT)  # the answer came back first

            answers = channel.stream_stream("/test.Echo/Bidi")(messages(), timeout=TIMEOUT)
            received = []
            for answer in answers:
                received.append(answer)
                ready.release()
            assert received == [m.upper() for m in outgoing]

        through(grpc_snapshot(service.port), check, tmp_path)


def test_a_large_message_goes_both_ways_within_flow_control(tmp_path: Path) -> None:
    with GrpcBackend() as service:

        def check(channel: grpc.Channel, _: Running) -> None:
            big = bytes(range(256)) * (4 * 1024 * 4)  # 4 MiB
            assert channel.unary_unary("/test.Echo/Unary")(big, timeout=TIMEOUT) == big

        through(grpc_snapshot(service.port), check, tmp_path)


def test_many_concurrent_calls_share_a_connection(tmp_path: Path) -> None:
    with GrpcBackend() as service:

        def check(channel: grpc.Channel, run: Running) -> None:
            unary = channel.unary_unary("/test.Echo/Unary")
            futures = [unary.future(f"c{i}".encode(), timeout=TIMEOUT) for i in range(150)]
            assert [f.result() for f in futures] == [f"c{i}".encode() for i in range(150)]
            relay = run.proxy.forwarder.h2
            assert relay is not None
            # 150 at once need two connections at 100 streams each; at most one per 100
            assert 1 <= relay.pool.connection_count(("127.0.0.1", service.port)) <= 2

        through(grpc_snapshot(service.port), check, tmp_path)


def test_grpc_timeout_bounds_the_call_as_deadline_exceeded(tmp_path: Path) -> None:
    """The client sets no deadline of its own: the proxy answers DEADLINE_EXCEEDED."""
    with GrpcBackend() as service:

        def client(run: Running) -> None:
            h2c = H2Client(run.gateway_port)
            stream = h2c.send(
                "POST",
                "/test.Echo/Unary",
                authority=AUTHORITY,
                headers=[
                    ("content-type", "application/grpc"),
                    ("te", "trailers"),
                    ("grpc-timeout", "300m"),
                ],
                body=frame(b"sleep:3"),
            )
            (response,) = h2c.wait(stream)
            assert response.status == 200
            assert response.headers["content-type"] == "application/grpc"
            assert response.headers["grpc-status"] == "4"  # Trailers-Only
            assert response.headers["grpc-message"] == "the call's grpc-timeout passed"
            h2c.close()

        run_proxy(tmp_path, grpc_snapshot(service.port), client, backends=())


def test_the_backend_gets_what_remains_of_the_deadline(tmp_path: Path) -> None:
    """gRPC over HTTP/2 (PROTOCOL-HTTP2.md, "Timeout"): the ``grpc-timeout`` passed on is the
    smaller of the client's and the route's, less what the proxy spent (a retry's backoff);
    a gRPC call without one gets the route's."""
    h2c = H2Backend(unavailable_first=1)

    async def serve(*_: object, tls: object, task_status: trio.TaskStatus[int]) -> None:
        await h2c.serve(task_status=task_status)

    def make(ports: dict[str, int]) -> Snapshot:
        rules = []
        for path, retry, request_timeout in (
            ("/retried", {"codes": [503], "attempts": 1, "backoff": 0.3}, None),
            ("/bounded", None, 2.0),
        ):
            rule = gateway_rule(
                [backend("one", protocol="h2c")],
                retry=retry,
                timeouts={"request": request_timeout, "backend_request": None},
            )
            rule["match"]["path"] = path
            rules.append(rule)
        return snapshot(
            endpoints={"one": [ports["one"]]}, gateway_port=ports["gateway"], gateway_rules=rules
        )

    def client(run: Running) -> None:
        response, _ = request(run.gateway_port, "GET", "/retried", headers={"grpc-timeout": "5S"})
        assert response.status == 200  # after one 503
        first, second = (grpc_timeout(list(fields.items())) for fields in h2c.heads)
        assert first <= 5.0
        assert second <= first - 0.3  # the backoff was spent in the proxy
        for headers, bound in (
            ({"grpc-timeout": "10S"}, 2.0),
            ({}, 2.0),
            ({"grpc-timeout": "1S"}, 1.0),
        ):
            response, _ = request(
                run.gateway_port,
                "POST",
                "/bounded",
                headers={"content-type": "application/grpc", **headers},
                body=frame(b"x"),
            )
            assert response.status == 200
            assert 0 < grpc_timeout(list(h2c.heads[-1].items())) <= bound
        response, _ = request(run.gateway_port, "GET", "/bounded")  # not a gRPC call
        assert response.status == 200
        assert b"grpc-timeout" not in h2c.heads[-1]

    run_proxy(tmp_path, make, client, backends=("one",), echo=serve)


def test_a_whole_body_waits_for_the_backends_window(tmp_path: Path) -> None:
    """A request body all sent with its HEADERS goes out with the proxy's HEADERS when the
    backend's stream window takes it; past that window it goes within the window, as the
    backend opens it (RFC 9113 §5.2), and arrives whole either way."""
    h2c = H2Backend(initial_window=10)

    async def serve(*_: object, tls: object, task_status: trio.TaskStatus[int]) -> None:
        await h2c.serve(task_status=task_status)

    def make(ports: dict[str, int]) -> Snapshot:
        return snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([backend("one", protocol="h2c")])],
        )

    def client(run: Running) -> None:
        h2 = H2Client(run.gateway_port)
        try:
            small, large = b"s" * 8, bytes(range(256)) * 4
            streams = [h2.send("POST", "/", body=body) for body in (small, large)]
            assert [response.status for response in h2.wait(*streams)] == [200, 200]
        finally:
            h2.close()
        eventually(lambda: len(h2c.requests) == 2)  # the backend answers before the body ends
        assert sorted(body for _, body in h2c.requests) == [large, small]

    run_proxy(tmp_path, make, client, backends=("one",), echo=serve)


def test_a_cancelled_call_is_cancelled_at_the_backend(tmp_path: Path) -> None:
    with GrpcBackend() as service:

        def check(channel: grpc.Channel, run: Running) -> None:
            hold = channel.unary_unary("/test.Echo/Hold")
            futures = [hold.future(b"x", timeout=TIMEOUT) for _ in range(10)]
            with pytest.raises(grpc.FutureTimeoutError):
                futures[0].result(timeout=0.3)
            for future in futures:
                future.cancel()
            assert service.cancelled.wait(TIMEOUT)
            relay = run.proxy.forwarder.h2
            assert relay is not None
            deadline = time.monotonic() + TIMEOUT  # the resets reach the proxy in their time
            while relay.pool.stream_count():
                assert time.monotonic() < deadline, "backend streams left open"
                time.sleep(0.01)
            (connection,) = relay.pool.connections()
            assert connection.conn.open_streams == 0

        through(grpc_snapshot(service.port), check, tmp_path)


def test_no_rule_is_unimplemented_and_no_endpoint_unavailable(tmp_path: Path) -> None:
    rule = grpc_rule(path="/test.Echo")

    def check(channel: grpc.Channel, _: Running) -> None:
        with pytest.raises(grpc.RpcError) as missing:
            channel.unary_unary("/other.Service/Call")(b"x", timeout=TIMEOUT)
        assert missing.value.code() == grpc.StatusCode.UNIMPLEMENTED
        with pytest.raises(grpc.RpcError) as empty:
            channel.unary_unary("/test.Echo/Unary")(b"x", timeout=TIMEOUT)
        assert empty.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "ready endpoint" in (empty.value.details() or "")

    through(grpc_snapshot(None, rule), check, tmp_path)


def test_a_failed_backend_is_unavailable(tmp_path: Path) -> None:
    with GrpcBackend() as service:
        port = service.port  # then stopped: nothing listens there any more

    def check(channel: grpc.Channel, _: Running) -> None:
        with pytest.raises(grpc.RpcError) as failed:
            channel.unary_unary("/test.Echo/Unary")(b"x", timeout=TIMEOUT)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE

    through(grpc_snapshot(port), check, tmp_path)


def test_grpc_over_tls_both_ways_with_alpn_h2(tmp_path: Path) -> None:
    ca = trustme.CA()
    front = ca.issue_cert(AUTHORITY)
    back = ca.issue_cert("grpc.backend.test")
    credentials = grpc.ssl_server_credentials(
        [(back.private_key_pem.bytes(), back.cert_chain_pems[0].bytes())]
    )
    with GrpcBackend(credentials) as service:

        def make(ports: dict[str, int]) -> Snapshot:
            tls = {
                "policy": "app/p",
                "server_name": "grpc.backend.test",
                "ca_bundle": ca.cert_pem.bytes().decode(),
                "subject_alt_names": [],
                "client_certificate": None,
                "problem": None,
            }
            data = grpc_snapshot(service.port, grpc_rule(backend_extra={"tls": tls}))(ports)
            port = str(ports["gateway"])
            data["tls"] = {
                port: {
                    "*": {  # keyed by the listener's hostname, which it has none
                        "cert_chain": "".join(b.bytes().decode() for b in front.cert_chain_pems),
                        "private_key": front.private_key_pem.bytes().decode(),
                        "secret": "app/tls",
                    }
                }
            }
            listener = data["gateways"][port]["*"]
            listener["protocol"] = "HTTPS"
            data["listener_health"][0]["protocol"] = "HTTPS"
            return data

        def client(run: Running) -> None:
            channel = grpc.secure_channel(
                f"127.0.0.1:{run.gateway_port}",
                grpc.ssl_channel_credentials(ca.cert_pem.bytes()),
                options=[*channel_options(AUTHORITY), ("grpc.ssl_target_name_override", AUTHORITY)],
            )
            try:
                unary = channel.unary_unary("/test.Echo/Unary")
                assert unary(b"secret", timeout=TIMEOUT) == b"secret"
                streamed = channel.unary_stream("/test.Echo/Server")(b"n:3", timeout=TIMEOUT)
                assert list(streamed) == [b"0", b"1", b"2"]
            finally:
                channel.close()

        run_proxy(tmp_path, make, client, backends=())


def test_a_backend_without_h2_by_alpn_fails_clearly(tmp_path: Path) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("echo.backend.test")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    leaf.configure_cert(context)
    context.set_alpn_protocols(["http/1.1"])
    tls = {
        "policy": "app/p",
        "server_name": "echo.backend.test",
        "ca_bundle": ca.cert_pem.bytes().decode(),
        "subject_alt_names": [],
        "client_certificate": None,
        "problem": None,
    }

    def make(ports: dict[str, int]) -> Snapshot:
        return snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([backend("one", protocol="h2c", tls=tls)])],
        )

    def client(run: Running) -> None:
        h2c = H2Client(run.gateway_port)
        response = h2c.get("/", authority="anything.example")
        assert response.status == 502
        assert b"did not select h2 by ALPN" in response.body
        h2c.close()

    run_proxy(tmp_path, make, client, backends=("one",), tls_backends={"one": context})


def test_an_http1_client_reaches_an_h2c_backend_with_trailers_when_asked(tmp_path: Path) -> None:
    """An HTTPRoute to a Service port whose appProtocol is kubernetes.io/h2c
    (HTTPRouteBackendProtocolH2C), by an HTTP/1.1 client: the response comes back chunked,
    with the backend's trailers only for a client that said ``TE: trailers``."""
    with GrpcBackend() as service:

        def make(ports: dict[str, int]) -> Snapshot:
            return snapshot(
                endpoints={"grpc": [service.port]},
                gateway_port=ports["gateway"],
                gateway_rules=[gateway_rule([backend("grpc", protocol="h2c")])],
            )

        def client(run: Running) -> None:
            for te, trailers in (("trailers", [(b"grpc-status", b"0")]), (None, [])):
                head, body, got = http1_call(run.gateway_port, frame(b"via h1"), te=te)
                assert head.status_code == 200
                assert dict(head.headers)[b"transfer-encoding"] == b"chunked"
                assert body == frame(b"via h1")
                assert [(n, v) for n, v in got if n == b"grpc-status"] == trailers

        run_proxy(tmp_path, make, client, backends=())


def frame(message: bytes) -> bytes:
    """A gRPC Length-Prefixed-Message, uncompressed."""
    return struct.pack(">BI", 0, len(message)) + message


def http1_call(
    port: int, body: bytes, *, te: str | None
) -> tuple[h11.Response, bytes, list[tuple[bytes, bytes]]]:
    """A gRPC unary call written by hand over HTTP/1.1: the head, body and trailers back."""
    import socket

    headers = [
        ("host", AUTHORITY),
        ("content-type", "application/grpc"),
        ("content-length", str(len(body))),
    ]
    if te is not None:
        headers.append(("te", te))
    conn = h11.Connection(h11.CLIENT)
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(
            conn.send(h11.Request(method="POST", target="/test.Echo/Unary", headers=headers))
            + conn.send(h11.Data(data=body))
            + conn.send(h11.EndOfMessage())
        )
        response: h11.Response | None = None
        received = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(sock.recv(65536))
            elif isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                received += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert response is not None
                return response, received, list(event.headers)
