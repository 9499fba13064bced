"""The proxy over real sockets on 127.0.0.1: routing, answers, forwarding, keep-alive."""

from __future__ import annotations

import email.utils
import http.client
import socket
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot_json import snapshot_to_data
from coxswain.shell.dataplane.upstream import Timeouts

from .manifests import backend as manifest_backend
from .manifests import default_ingress, ingress_class
from .proxy_harness import (
    TIMEOUT,
    Running,
    backend,
    echoed,
    free_port,
    gateway_rule,
    ingress_path,
    request,
    run_proxy,
    snapshot,
)

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def two_hosts(ports: dict[str, int]) -> dict[str, Any]:
    return snapshot(
        hosts={
            "a.example.com": [ingress_path("one")],
            "b.example.com": [
                ingress_path("two"),
                ingress_path("one", "/secure", tls_redirect=True),
            ],
            "empty.example.com": [ingress_path("nobody")],
        },
        endpoints={"one": [ports["one"]], "two": [ports["two"]]},
    )


def test_ingress_routes_by_host_and_forwards_headers(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        response, data = request(
            run.http_port,
            "GET",
            "/x?q=1",
            headers={
                "X-Forwarded-For": "10.9.9.9",
                "X-Forwarded-Proto": "spoofed",
                "Connection": "keep-alive, X-Private",
                "X-Private": "secret",
                "Keep-Alive": "timeout=5",
            },
        )
        assert response.status == 200
        got = echoed(data)
        assert got["backend"] == "one"
        assert got["target"] == "/x?q=1"
        h = got["header_map"]
        assert h["host"] == ["a.example.com"]
        assert h["x-forwarded-for"] == ["127.0.0.1"]  # the peer is no trusted proxy
        assert h["x-real-ip"] == ["127.0.0.1"]
        assert h["x-forwarded-proto"] == ["http"]
        assert h["x-forwarded-host"] == ["a.example.com"]
        assert "x-private" not in h
        assert "keep-alive" not in h
        # the response: hop-by-hop fields named by the upstream's Connection are dropped
        assert response.getheader("x-hop") is None
        assert response.getheader("x-backend") == "one"
        assert response.getheader("content-length") == str(len(data))
        # the proxy's Server and Date replace the upstream's (coxswain.route.relay)
        assert response.headers.get_all("server") == ["coxswain"]
        assert [recent_date(d) for d in response.headers.get_all("date")] == [True]

        response, data = request(run.http_port, "GET", "/", host="b.example.com:80")
        assert echoed(data)["backend"] == "two"

    run_proxy(tmp_path, two_hosts, client)


def recent_date(value: str) -> bool:
    """Whether ``value`` is an IMF-fixdate within a minute of now (RFC 9110 §5.6.7)."""
    sent = email.utils.parsedate_to_datetime(value)
    return value.endswith(" GMT") and abs(time.time() - sent.timestamp()) < 60


def test_the_ingress_default_backend_serves_any_host_with_the_conformance_headers(
    tmp_path: Path,
) -> None:
    """Ingress controller conformance, "Default backend": an Ingress with only a
    ``defaultBackend`` gets every host and path, and the response has ``Content-Length``,
    ``Content-Type``, ``Date`` and ``Server``."""

    def make(ports: dict[str, int]) -> dict[str, Any]:
        bodies = [ingress_class(), default_ingress("one"), *manifest_backend("one", ports["one"])]
        return snapshot_to_data(compile(build_state(bodies), SharedPool()).snapshot)

    def client(run: Running) -> None:
        for host, path in (("any-host", "/"), ("foo.bar", "/a/b?c=d")):
            response, data = request(run.http_port, "GET", path, host=host)
            assert response.status == 200
            assert echoed(data)["target"] == path
            assert response.version == 11
            assert response.getheader("content-length") == str(len(data))
            assert response.getheader("content-type") == "application/json"
            assert recent_date(response.getheader("date", ""))
            assert response.getheader("server") == "coxswain"

    run_proxy(tmp_path, make, client, backends=("one",))


def test_with_pass_server_header_the_backend_names_itself(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        response, _ = request(run.http_port, "GET", "/x")
        assert response.headers.get_all("server") == ["echo-one"]
        assert [recent_date(d) for d in response.headers.get_all("date")] == [True]
        response, _ = request(run.http_port, "GET", "/chunked")  # the echo sends no Server
        assert response.headers.get_all("server") == ["coxswain"]

    run_proxy(tmp_path, two_hosts, client, pass_server=True)


def test_own_answers_404_redirect_503(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        response, data = request(run.http_port, "GET", "/", host="nowhere.example.com")
        assert response.status == 404
        assert response.getheader("server") == "coxswain"
        assert recent_date(response.getheader("date", ""))
        assert response.getheader("content-length") == str(len(data))
        assert data.startswith(b"404 Not Found")

        response, _ = request(run.http_port, "GET", "/secure/a?b=c", host="b.example.com")
        assert response.status == 308
        assert response.getheader("location") == "https://b.example.com/secure/a?b=c"
        assert response.getheader("server") == "coxswain"
        # A client that named the proxy's port is sent to the proxy's HTTPS port (README).
        named = f"b.example.com:{run.http_port}"
        response, _ = request(run.http_port, "GET", "/secure/a?b=c", host=named)
        assert response.status == 308
        location = f"https://b.example.com:{run.https_port}/secure/a?b=c"
        assert response.getheader("location") == location

        response, _ = request(run.http_port, "GET", "/", host="empty.example.com")
        assert response.status == 503

        response, data = request(run.http_port, "HEAD", "/", host="nowhere.example.com")
        assert response.status == 404
        assert data == b""

    run_proxy(tmp_path, two_hosts, client)


def test_the_body_of_a_request_the_proxy_answers_itself_is_read_and_dropped(
    tmp_path: Path,
) -> None:
    """A 404 for a request with a body: the body is read so the connection can carry the next
    request; a body that stalls or runs over 64 KiB gets the answer with Connection: close."""

    def answer(sock: socket.socket, sent: bytes) -> http.client.HTTPResponse:
        sock.sendall(sent)
        response = http.client.HTTPResponse(sock)
        response.begin()
        response.read()
        return response

    def client(run: Running) -> None:
        head = b"POST / HTTP/1.1\r\nHost: nowhere.example.com\r\nContent-Length: %d\r\n\r\n"
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            response = answer(sock, head % 5 + b"hello")
            assert response.status == 404
            assert response.getheader("connection") is None  # kept alive
            assert answer(sock, head % 2 + b"hi").status == 404  # the same connection
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            response = answer(sock, head % 10 + b"abc")  # then nothing: a stall
            assert response.status == 404
            assert response.getheader("connection") == "close"
            assert sock.recv(16) == b""
        big = 65 * 1024
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            response = answer(sock, head % big + b"x" * big)
            assert response.status == 404
            assert response.getheader("connection") == "close"

    run_proxy(tmp_path, two_hosts, client, timeouts=Timeouts(client_body=0.2))


def test_keep_alive_carries_several_requests_and_answers(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", run.http_port, timeout=TIMEOUT)
        for host, expected in [
            ("a.example.com", 200),
            ("nowhere.example.com", 404),
            ("b.example.com", 200),
        ]:
            conn.request("POST", "/k", body=b"hello", headers={"Host": host})
            response = conn.getresponse()
            data = response.read()
            assert response.status == expected
            if expected == 200:
                assert echoed(data)["body"] == "hello"
        assert conn.sock is not None  # the same connection served all three
        conn.close()

    run_proxy(tmp_path, two_hosts, client)


def test_chunked_request_body_is_streamed_and_chunked_response_relayed(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.sendall(
                b"POST /chunked HTTP/1.1\r\nHost: a.example.com\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            sock.sendall(b"5\r\nhello\r\n")
            sock.sendall(b"6\r\n world\r\n0\r\n\r\n")
            file = sock.makefile("rb")
            response = http.client.HTTPResponse(sock)
            response.fp = file
            response.begin()
            assert response.status == 200
            assert response.getheader("transfer-encoding") == "chunked"
            got = echoed(response.read())
            assert got["body"] == "hello world"
            assert got["header_map"]["transfer-encoding"] == ["chunked"]

    run_proxy(tmp_path, two_hosts, client)


def test_malformed_request_is_400_and_other_clients_are_served(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.sendall(
                b"POST / HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 3\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 400 ")
            assert b"server: coxswain" in answer.lower()
            assert b"connection: close" in answer.lower()
        response, _ = request(run.http_port, "GET", "/")
        assert response.status == 200

    run_proxy(tmp_path, two_hosts, client)


def test_oversized_head_is_431(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        response, _ = request(run.http_port, "GET", "/", headers={"X-Big": "a" * 70_000})
        assert response.status == 431

    run_proxy(tmp_path, two_hosts, client)


def test_upstream_failures_are_502_and_timeouts_504(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={
                "a.example.com": [ingress_path("one")],
                "down.example.com": [ingress_path("down")],
            },
            endpoints={"one": [ports["one"]], "down": [free_port()]},
            gateway_port=ports["gateway"],
            gateway_rules=[
                gateway_rule([backend("one")], timeouts={"request": 0.2, "backend_request": None})
            ],
        )

    def client(run: Running) -> None:
        response, _ = request(run.http_port, "GET", "/", host="down.example.com")
        assert response.status == 502
        response, _ = request(run.http_port, "GET", "/bad")
        assert response.status == 502
        response, _ = request(run.gateway_port, "GET", "/stall")
        assert response.status == 504

    run_proxy(tmp_path, make, client)


def test_gateway_port_routing_splits_by_weight_and_edits_headers(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]], "two": [ports["two"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[
                gateway_rule(
                    [backend("one", weight=3), backend("two", weight=1)],
                    request_headers={"set": [["x-set", "yes"]], "add": [], "remove": ["x-drop"]},
                    response_headers={"set": [], "add": [["x-added", "1"]], "remove": []},
                )
            ],
        )

    def client(run: Running) -> None:
        seen: Counter[str] = Counter()
        conn = http.client.HTTPConnection("127.0.0.1", run.gateway_port, timeout=TIMEOUT)
        for _ in range(200):
            conn.request("GET", "/", headers={"Host": "any.example.com", "X-Drop": "1"})
            response = conn.getresponse()
            got = echoed(response.read())
            seen[got["backend"]] += 1
            assert got["header_map"]["x-set"] == ["yes"]
            assert "x-drop" not in got["header_map"]
            assert response.getheader("x-added") == "1"
        conn.close()
        assert seen["one"] + seen["two"] == 200
        assert 110 <= seen["one"] <= 185  # 150 expected; 3:1 by weight

    run_proxy(tmp_path, make, client)


def test_a_cors_preflight_is_answered_and_a_cors_response_marked(tmp_path: Path) -> None:
    cors = {
        "allow_origins": ["https://www.foo.com", "https://*.bar.com"],
        "allow_methods": ["GET", "OPTIONS"],
        "allow_headers": ["x-header-1"],
        "expose_headers": ["x-header-3"],
        "allow_credentials": True,
        "max_age": 3600,
    }

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([backend("one")], cors=cors)],
        )

    def client(run: Running) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", run.gateway_port, timeout=TIMEOUT)
        preflight = {
            "Host": "any.example.com",
            "Origin": "https://xpto.www.bar.com",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "x-header-1",
        }
        conn.request("OPTIONS", "/cors", headers=preflight)
        response = conn.getresponse()
        assert (response.status, response.read()) == (204, b"")
        assert response.getheader("content-length") is None  # RFC 9110 §8.6
        assert response.getheader("access-control-allow-origin") == "https://xpto.www.bar.com"
        assert response.getheader("access-control-allow-methods") == "GET, OPTIONS"
        assert response.getheader("access-control-allow-headers") == "x-header-1"
        assert response.getheader("access-control-allow-credentials") == "true"
        assert response.getheader("access-control-max-age") == "3600"
        # the same connection carries the actual request, which is forwarded and marked
        conn.request(
            "GET", "/cors", headers={"Host": "any.example.com", "Origin": "https://www.foo.com"}
        )
        response = conn.getresponse()
        assert echoed(response.read())["method"] == "GET"
        assert response.getheader("access-control-allow-origin") == "https://www.foo.com"
        assert response.getheader("access-control-expose-headers") == "x-header-3"
        assert response.getheader("vary") == "Origin"
        # another origin: the preflight is refused, the request forwarded unmarked
        conn.request("OPTIONS", "/cors", headers={**preflight, "Origin": "https://foobar.com"})
        response = conn.getresponse()
        assert response.status == 403
        assert response.read().startswith(b"403 Forbidden: ")
        assert response.getheader("access-control-allow-origin") is None
        conn.request(
            "GET", "/cors", headers={"Host": "any.example.com", "Origin": "https://foobar.com"}
        )
        response = conn.getresponse()
        assert (response.status, response.getheader("access-control-allow-origin")) == (200, None)
        response.read()
        conn.close()
        assert [r["method"] for r in run.received["one"]] == ["GET", "GET"]  # no preflight

    run_proxy(tmp_path, make, client)


def test_a_refused_connection_is_retried_on_another_endpoint(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path("one")]},
            endpoints={"one": [free_port(), ports["one"]]},
        )

    def client(run: Running) -> None:
        for _ in range(4):  # round-robin starts on the dead endpoint every other time
            response, data = request(run.http_port, "GET", "/")
            assert response.status == 200
            assert echoed(data)["backend"] == "one"

    run_proxy(tmp_path, make, client)


def test_an_invalid_backend_is_500(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([backend("one", valid=False)])],
        )

    def client(run: Running) -> None:
        response, _ = request(run.gateway_port, "GET", "/")
        assert response.status == 500
        assert response.getheader("server") == "coxswain"

    run_proxy(tmp_path, make, client)


def test_expect_continue_is_answered_before_the_body_is_sent(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.sendall(
                b"PUT /up HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 4\r\n"
                b"Expect: 100-continue\r\n\r\n"
            )
            interim = b""
            while not interim.endswith(b"\r\n\r\n"):
                interim += sock.recv(1)
            assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(b"data")
            response = http.client.HTTPResponse(sock)
            response.begin()
            got = echoed(response.read())
            assert got["body"] == "data"
            assert "expect" not in got["header_map"]

    run_proxy(tmp_path, two_hosts, client)


def test_a_large_body_streams_through_in_both_directions(tmp_path: Path) -> None:
    body = b"x" * (8 * 1024 * 1024)

    def client(run: Running) -> None:
        response, data = request(run.http_port, "POST", "/big", body=body)
        assert response.status == 200
        assert len(echoed(data)["body"]) == len(body)

    run_proxy(tmp_path, two_hosts, client)


def test_an_idle_client_is_disconnected_after_the_header_timeout(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: a.exa")  # a head that never completes
            assert sock.recv(4096) == b""  # closed by the proxy, not by our timeout
        response, _ = request(run.http_port, "GET", "/")
        assert response.status == 200

    run_proxy(tmp_path, two_hosts, client, header_timeout=0.2)


def test_upstream_connections_are_reused_and_a_closed_one_is_replaced(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        first = echoed(request(run.http_port, "GET", "/once")[1])["connection"]
        # the upstream closed that connection after answering: a new one carries the next
        second = echoed(request(run.http_port, "GET", "/")[1])["connection"]
        assert second != first
        # from a different client connection, the idle upstream connection is reused
        third = echoed(request(run.http_port, "GET", "/")[1])["connection"]
        assert third == second
        _, data = request(run.http_port, "POST", "/", body=b"abc")
        assert echoed(data)["connection"] == second
        assert echoed(data)["body"] == "abc"

    run_proxy(tmp_path, two_hosts, client)


def test_an_upstream_connection_with_bytes_after_its_response_is_not_reused(
    tmp_path: Path,
) -> None:
    """Bytes the upstream sent after a complete response would be read as the next exchange's
    response: that connection is closed, not pooled (else a POST, never retried, got 502)."""

    def client(run: Running) -> None:
        response, data = request(run.http_port, "GET", "/extra")
        assert response.status == 200
        dirty = echoed(data)["connection"]
        response, data = request(run.http_port, "POST", "/", body=b"abc")
        assert response.status == 200
        assert echoed(data)["connection"] != dirty
        assert echoed(data)["body"] == "abc"

    run_proxy(tmp_path, two_hosts, client)


def test_a_stale_reused_connection_is_retried_only_when_repeating_is_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every idle connection looks alive, so the pool hands out the one /once closed and the
    # proxy learns of the close by using it: the race between an upstream's close and reuse.
    # Without this, whether the pool's check drops it first depends on the time between the
    # two requests (it polls only connections idle CHECK_AFTER or longer). The check itself is
    # tested on its own in tests/unit/test_pool_idle.py.
    monkeypatch.setattr("coxswain.shell.dataplane.pool._quiet", lambda stream: True)

    def client(run: Running) -> None:
        request(run.http_port, "GET", "/once")
        response, _data = request(run.http_port, "GET", "/")  # idempotent, no body: retried
        assert response.status == 200
        request(run.http_port, "GET", "/once")
        response, _ = request(run.http_port, "POST", "/", body=b"abc")  # not repeated
        assert response.status == 502

    run_proxy(tmp_path, two_hosts, client)


def test_a_header_edit_that_cannot_be_sent_is_500(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[
                gateway_rule(
                    [backend("one")],
                    request_headers={"set": [["x-bad", "a\nb"]], "add": [], "remove": []},
                )
            ],
        )

    def client(run: Running) -> None:
        response, _ = request(run.gateway_port, "GET", "/")
        assert response.status == 500
        assert request(run.gateway_port, "GET", "/")[0].status == 500  # still serving

    run_proxy(tmp_path, make, client)


def test_an_upgrade_is_tunnelled_both_ways(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.sendall(
                b"GET /chat HTTP/1.1\r\nHost: a.example.com\r\nConnection: Upgrade\r\n"
                b"Upgrade: websocket\r\n\r\nearly "
            )
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(1)
            assert head.startswith(b"HTTP/1.1 101 ")
            assert b"upgrade: websocket" in head.lower()
            received = b""
            while len(received) < len(b"EARLY "):
                received += sock.recv(4096)
            sock.sendall(b"hello")
            while len(received) < len(b"EARLY HELLO"):
                received += sock.recv(4096)
            assert received == b"EARLY HELLO"

    run_proxy(tmp_path, two_hosts, client)


def test_framing_follows_the_client_http10_and_head(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.sendall(b"GET /chunked HTTP/1.0\r\nHost: a.example.com\r\n\r\n")
            answer = b""
            while chunk := sock.recv(4096):  # an HTTP/1.0 client reads until the close
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"transfer-encoding" not in head.lower()
        assert echoed(body)["target"] == "/chunked"

        response, data = request(run.http_port, "HEAD", "/")
        assert response.status == 200
        assert data == b""
        assert int(response.getheader("content-length") or 0) > 0  # the upstream's, kept

    run_proxy(tmp_path, two_hosts, client)
