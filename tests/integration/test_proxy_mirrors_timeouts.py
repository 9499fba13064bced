"""Request mirrors (fire-and-forget) and the proxy's own timeouts, over real sockets."""

from __future__ import annotations

import http.client
import socket
import time
from typing import TYPE_CHECKING, Any

import pytest

from coxswain.shell.dataplane.upstream import Timeouts

from .proxy_harness import (
    TIMEOUT,
    Running,
    backend,
    echoed,
    free_port,
    gateway_rule,
    request,
    run_proxy,
    snapshot,
)

if TYPE_CHECKING:
    from pathlib import Path


def _eventually(check: Any, seconds: float = TIMEOUT) -> None:
    """Poll ``check`` until it is true: a mirror's request is never awaited by the client."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _mirrored(ports: dict[str, int], mirrors: list[dict[str, Any]]) -> dict[str, Any]:
    return snapshot(
        endpoints={"one": [ports["one"]], "two": [ports["two"]], "down": [free_port()]},
        gateway_port=ports["gateway"],
        gateway_rules=[
            gateway_rule(
                [backend("one")],
                mirrors=mirrors,
                request_headers={"set": [["x-rule", "yes"]], "add": [], "remove": []},
            )
        ],
    )


def _mirror_count(run: Running, result: str) -> float:
    value = run.proxy.metrics.registry.get_sample_value(
        "coxswain_mirror_requests_total", {"result": result}
    )
    return value or 0.0


def test_a_mirror_gets_a_copy_of_each_request_and_its_answer_is_dropped(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return _mirrored(
            ports,
            [
                {"backend": backend("two"), "percent": 100},
                {"backend": backend("one"), "percent": 0},  # never fires
            ],
        )

    def client(run: Running) -> None:
        response, data = request(run.gateway_port, "POST", "/sized?q=1", body=b"hello")
        assert response.status == 200
        assert echoed(data)["backend"] == "one"
        response, data = request(
            run.gateway_port,
            "POST",
            "/chunked-in",
            body=b"2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n",
            headers={"Transfer-Encoding": "chunked"},
        )
        assert response.status == 200
        _eventually(lambda: len(run.received["two"]) == 2)
        chunked, sized = sorted(run.received["two"], key=lambda seen: seen["target"])
        assert chunked["target"] == "/chunked-in"
        assert chunked["body"] == "abcd"
        assert sized["target"] == "/sized?q=1"
        assert sized["body"] == "hello"
        headers = dict(sized["headers"])
        assert headers["host"] == "a.example.com"
        assert headers["x-rule"] == "yes"  # the rule's edits reach the mirror too
        assert headers["x-forwarded-for"] == "127.0.0.1"
        assert headers["connection"] == "close"
        # the primary backend saw each request once: the 0 % mirror on it never fired
        assert len(run.received["one"]) == 2
        _eventually(lambda: _mirror_count(run, "sent") == 2)

    run_proxy(tmp_path, make, client)


def test_a_mirror_that_fails_never_fails_the_request(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return _mirrored(ports, [{"backend": backend("down"), "percent": 100}])

    def client(run: Running) -> None:
        for _ in range(3):
            response, data = request(run.gateway_port, "POST", "/", body=b"x" * 1000)
            assert response.status == 200
            assert echoed(data)["backend"] == "one"
        _eventually(lambda: _mirror_count(run, "failed") == 3)

    run_proxy(tmp_path, make, client)


def test_a_mirror_still_running_at_its_timeout_is_dropped(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return _mirrored(ports, [{"backend": backend("two"), "percent": 100}])

    def client(run: Running) -> None:
        # the mirror's backend never answers /stall; the client's answer does not wait for it
        response, _ = request(run.gateway_port, "GET", "/stall")
        assert response.status == 504
        _eventually(lambda: _mirror_count(run, "dropped") == 1)
        assert _mirror_count(run, "sent") == 0

    run_proxy(tmp_path, make, client, timeouts=Timeouts(read=0.2, mirror=0.2))


def test_a_stalled_request_body_is_408(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return _mirrored(ports, [])

    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.gateway_port), timeout=TIMEOUT) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 10\r\n\r\nabc")
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"connection: close" in answer.lower()
        response, _ = request(run.gateway_port, "GET", "/")  # others are served
        assert response.status == 200

    run_proxy(tmp_path, make, client, timeouts=Timeouts(client_body=0.2))


def test_an_upstream_that_sends_nothing_is_504_without_a_route_timeout(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return _mirrored(ports, [])

    def client(run: Running) -> None:
        started = time.monotonic()
        response, _ = request(run.gateway_port, "GET", "/stall")
        assert response.status == 504
        assert time.monotonic() - started < TIMEOUT
        response, _ = request(run.gateway_port, "GET", "/")
        assert response.status == 200

    run_proxy(tmp_path, make, client, timeouts=Timeouts(read=0.2))


def test_an_upstream_that_stalls_mid_body_gets_the_client_connection_closed(
    tmp_path: Path,
) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return _mirrored(ports, [])

    def client(run: Running) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", run.gateway_port, timeout=TIMEOUT)
        conn.request("GET", "/stall-body", headers={"Host": "a.example.com"})
        response = conn.getresponse()
        assert response.status == 200  # the head went out before the upstream stalled
        with pytest.raises(http.client.IncompleteRead) as cut:
            response.read()
        assert cut.value.partial == b"0123456789"
        conn.close()
        response, _ = request(run.gateway_port, "GET", "/")  # others are served
        assert response.status == 200

    run_proxy(tmp_path, make, client, timeouts=Timeouts(read=0.2))


def test_a_mirror_that_falls_behind_is_cut_off_and_the_client_is_served(tmp_path: Path) -> None:
    body = b"x" * (32 * 1024 * 1024)
    with socket.socket() as sink:  # accepts connections (the backlog) and never reads
        sink.bind(("127.0.0.1", 0))
        sink.listen(8)
        sink_port = sink.getsockname()[1]

        def make(ports: dict[str, int]) -> dict[str, Any]:
            data = _mirrored(ports, [{"backend": backend("sink"), "percent": 100}])
            data["endpoints"]["app/sink/80"] = [{"address": "127.0.0.1", "port": sink_port}]
            return data

        def client(run: Running) -> None:
            response, data = request(run.gateway_port, "POST", "/", body=body)
            assert response.status == 200
            assert len(echoed(data)["body"]) == len(body)
            _eventually(lambda: _mirror_count(run, "dropped") == 1)

        run_proxy(tmp_path, make, client)
