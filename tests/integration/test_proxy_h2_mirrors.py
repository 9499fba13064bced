"""Request mirrors to HTTP/2 backends, on real sockets: a RequestMirror whose backend speaks h2c
(HTTPRouteBackendProtocolH2C, or a GRPCRoute's) gets its copy as a stream on the proxy's shared
HTTP/2 connections, body and all, and the client's answer never waits for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .grpc_backend import GrpcBackend, proxy_channel
from .h2_backend import H2Backend
from .proxy_harness import (
    TIMEOUT,
    backend,
    echoed,
    eventually,
    gateway_rule,
    request,
    run_proxy,
    serve_echo,
    snapshot,
)

if TYPE_CHECKING:
    from pathlib import Path

    import trio

    from .proxy_harness import Running


def mirror_count(run: Running, result: str) -> float:
    value = run.proxy.metrics.registry.get_sample_value(
        "coxswain_mirror_requests_total", {"result": result}
    )
    return value or 0.0


def with_h2_mirror(mirror: H2Backend) -> Any:
    """The harness's backends: ``h2`` is the HTTP/2 mirror backend, the others echo."""

    async def serve(
        name: str,
        received: list[dict[str, Any]],
        *,
        tls: object,
        task_status: trio.TaskStatus[int],
    ) -> None:
        if name == "h2":
            await mirror.serve(task_status=task_status)
        else:
            await serve_echo(name, received, task_status=task_status)

    return serve


def mirrored_to_h2(ports: dict[str, int]) -> dict[str, Any]:
    """An HTTPRoute to the echo ``one``, every request mirrored to the h2c backend ``h2``."""
    return snapshot(
        endpoints={"one": [ports["one"]], "h2": [ports["h2"]]},
        gateway_port=ports["gateway"],
        gateway_rules=[
            gateway_rule(
                [backend("one")],
                mirrors=[{"backend": backend("h2", protocol="h2c"), "percent": 100}],
            )
        ],
    )


def test_an_h2c_mirror_gets_the_request_and_its_body_as_a_stream(tmp_path: Path) -> None:
    mirror = H2Backend(delay=0.05)

    def client(run: Running) -> None:
        body = b"0123456789" * 20_000  # past the stream's first window: DATA waits for it
        response, data = request(run.gateway_port, "POST", "/upload?q=1", body=body)
        assert response.status == 200
        assert echoed(data)["backend"] == "one"
        response, _ = request(run.gateway_port, "GET", "/plain")
        assert response.status == 200
        eventually(lambda: mirror_count(run, "sent") == 2)
        assert mirror_count(run, "failed") == 0
        (get, get_body), (post, post_body) = sorted(mirror.requests, key=lambda r: r[0][b":path"])
        assert post[b":method"] == b"POST"
        assert post[b":path"] == b"/upload?q=1"
        assert post[b":authority"] == b"a.example.com"
        assert post[b"x-forwarded-for"] == b"127.0.0.1"
        assert b"connection" not in post
        assert post_body == body
        assert get[b":method"] == b"GET"
        assert get_body == b""
        assert mirror.connections == 1  # the second mirror took a stream on the same connection

    run_proxy(tmp_path, mirrored_to_h2, client, backends=("one", "h2"), echo=with_h2_mirror(mirror))


def test_a_grpc_call_is_mirrored_to_an_h2c_backend(tmp_path: Path) -> None:
    mirror = H2Backend()
    with GrpcBackend() as service:

        def make(ports: dict[str, int]) -> dict[str, Any]:
            rule = gateway_rule(
                [backend("grpc", protocol="h2c")],
                grpc=True,
                mirrors=[{"backend": backend("h2", protocol="h2c"), "percent": 100}],
            )
            rule["route"]["kind"] = "GRPCRoute"
            return snapshot(
                endpoints={"grpc": [service.port], "h2": [ports["h2"]]},
                gateway_port=ports["gateway"],
                gateway_rules=[rule],
            )

        def client(run: Running) -> None:
            with proxy_channel(run.gateway_port) as channel:
                unary = channel.unary_unary("/test.Echo/Unary")
                assert unary(b"hello", timeout=TIMEOUT) == b"hello"
                joined = channel.stream_unary("/test.Echo/Client")(
                    iter([b"a", b"b"]), timeout=TIMEOUT
                )
                assert joined == b"a|b"
            # "sent" counts a mirror once its answer came; the backend may record the
            # request a moment after it answered
            eventually(lambda: mirror_count(run, "sent") == 2 and len(mirror.requests) == 2)
            paths = sorted(fields[b":path"] for fields, _ in mirror.requests)
            assert paths == [b"/test.Echo/Client", b"/test.Echo/Unary"]
            bodies = {fields[b":path"]: body for fields, body in mirror.requests}
            assert bodies[b"/test.Echo/Unary"] == b"\0\0\0\0\x05hello"  # the gRPC message
            assert all(fields[b"te"] == b"trailers" for fields, _ in mirror.requests)

        run_proxy(tmp_path, make, client, backends=("h2",), echo=with_h2_mirror(mirror))


def test_mirrors_past_the_limit_running_at_once_are_dropped_unsent(tmp_path: Path) -> None:
    mirror = H2Backend(delay=1.0)

    def client(run: Running) -> None:
        mirrors = run.proxy.forwarder.mirrors
        assert mirrors is not None
        mirrors.limit = 1
        for _ in range(3):  # the first mirror is still waiting for its answer meanwhile
            response, _ = request(run.gateway_port, "GET", "/")
            assert response.status == 200
        assert mirror_count(run, "dropped") == 2
        eventually(lambda: mirror_count(run, "sent") == 1)
        assert len(mirror.heads) == 1

    run_proxy(tmp_path, mirrored_to_h2, client, backends=("one", "h2"), echo=with_h2_mirror(mirror))
