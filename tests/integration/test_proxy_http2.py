"""HTTP/2 towards clients over real sockets (RFC 9113): prior knowledge on a cleartext port,
ALPN on TLS, many streams on one connection, bodies both ways with flow control, the proxy's
own answers, malformed requests and floods that end only their stream or connection."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from typing import TYPE_CHECKING, Any

import h2.errors
import hpack
import trio
import trustme
from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame

from coxswain.http2 import frames
from coxswain.shell.dataplane.upstream import Timeouts

from .h2_client import H2Client
from .proxy_harness import (
    TIMEOUT,
    Running,
    backend,
    gateway_rule,
    ingress_path,
    request,
    run_proxy,
    snapshot,
)

if TYPE_CHECKING:
    from pathlib import Path


def hosts(ports: dict[str, int]) -> dict[str, Any]:
    return snapshot(
        hosts={
            "a.example.com": [ingress_path("one")],
            "b.example.com": [ingress_path("two")],
        },
        endpoints={"one": [ports["one"]], "two": [ports["two"]]},
    )


def echo(body: bytes) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(body)
    seen["header_map"] = {n.lower(): v for n, v in seen["headers"]}
    return seen


def test_prior_knowledge_routes_and_forwards_as_http1_does(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        h2c = H2Client(run.http_port)
        response = h2c.get(
            "/x?q=1", headers=[("x-test", "yes"), ("cookie", "a=1"), ("cookie", "b=2")]
        )
        assert response.status == 200
        assert response.headers["server"] == "coxswain"
        assert "date" in response.headers
        assert "connection" not in response.headers
        seen = echo(response.body)
        assert seen["backend"] == "one"
        assert (seen["method"], seen["target"]) == ("GET", "/x?q=1")
        fields = seen["header_map"]
        assert fields["host"] == "a.example.com"
        assert fields["x-test"] == "yes"
        assert fields["x-forwarded-proto"] == "http"
        assert fields["cookie"] == "a=1; b=2"  # RFC 9113 §8.2.3
        other = h2c.get("/", authority="b.example.com")
        assert echo(other.body)["backend"] == "two"
        missing = h2c.get("/", authority="nowhere.example.com")
        assert missing.status == 404
        assert missing.headers["content-type"].startswith("text/plain")
        assert b"404 Not Found" in missing.body
        h2c.close()
        # HTTP/1.1 on the same port, as before
        response1, _ = request(run.http_port, "GET", "/")
        assert response1.status == 200

    run_proxy(tmp_path, hosts, client)


def test_many_streams_share_one_connection(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        h2c = H2Client(run.http_port)
        for _ in range(2):  # the second round on the tasks the first left parked (.h2_workers)
            streams = [h2c.send("GET", f"/n{i}") for i in range(20)]
            responses = h2c.wait(*streams)
            assert [r.status for r in responses] == [200] * 20
            assert sorted(echo(r.body)["target"] for r in responses) == sorted(
                f"/n{i}" for i in range(20)
            )
        h2c.close()

    run_proxy(tmp_path, hosts, client)


def test_streams_after_a_cut_one_are_served_on_the_same_connection(tmp_path: Path) -> None:
    """A stream cut by its body's timeout (408) and one reset by the client end only
    themselves: the task that served them serves the next streams (.h2_workers), none of
    which is cut in turn."""

    def client(run: Running) -> None:
        h2c = H2Client(run.http_port)
        [stalled] = h2c.wait(h2c.send("POST", "/stalled", body=b"part", end=False))
        assert stalled.status == 408
        assert h2c.get("/after-the-cut").status == 200
        reset = h2c.send("POST", "/reset", body=b"part", end=False)
        h2c.conn.reset_stream(reset)
        h2c.flush()
        responses = h2c.wait(*(h2c.send("GET", f"/after-the-reset/{i}") for i in range(3)))
        assert [r.status for r in responses] == [200] * 3
        h2c.close()

    run_proxy(tmp_path, hosts, client, timeouts=Timeouts(client_body=0.5))


def test_request_bodies_sized_and_unsized_reach_the_backend(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        h2c = H2Client(run.http_port)
        sized = h2c.send(
            "POST", "/sized", body=b"x" * 100_000, headers=[("content-length", "100000")]
        )
        unsized = h2c.send("POST", "/unsized", body=b"y" * 70_000)
        first, second = h2c.wait(sized, unsized)
        assert echo(first.body)["body"] == "x" * 100_000
        seen = echo(second.body)
        assert seen["body"] == "y" * 70_000
        assert seen["header_map"]["transfer-encoding"] == "chunked"
        h2c.close()

    run_proxy(tmp_path, hosts, client)


def test_a_large_response_waits_for_the_clients_window(tmp_path: Path) -> None:
    """The client opens its window only as it reads: the whole body still arrives."""

    def client(run: Running) -> None:
        h2c = H2Client(run.http_port, window=1024)
        big = "z" * 300_000
        stream = h2c.send("POST", "/big", body=big.encode())
        (response,) = h2c.wait(stream)
        assert response.status == 200
        assert echo(response.body)["body"] == big
        h2c.close()

    run_proxy(tmp_path, hosts, client)


def test_large_responses_of_many_streams_share_the_writer_within_the_clients_windows(
    tmp_path: Path,
) -> None:
    """Eight streams relay large bodies at once through the connection's one writer while the
    client opens its windows only as it reads: every body arrives whole, on its own stream."""

    def client(run: Running) -> None:
        h2c = H2Client(run.http_port, window=1024)
        bodies = [bytes([ord("a") + n]) * (120_000 + n) for n in range(8)]
        streams = [h2c.send("POST", f"/big{n}", body=body) for n, body in enumerate(bodies)]
        responses = h2c.wait(*streams)
        for n, response in enumerate(responses):
            assert response.status == 200
            seen = echo(response.body)
            assert seen["target"] == f"/big{n}"
            assert seen["body"] == bodies[n].decode()
        h2c.close()

    run_proxy(tmp_path, hosts, client)


def test_alpn_h2_on_a_tls_listener(tmp_path: Path) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("a.example.com")

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path("one")]},
            endpoints={"one": [ports["one"]]},
            tls={
                "a.example.com": {
                    "cert_chain": "".join(b.bytes().decode() for b in leaf.cert_chain_pems),
                    "private_key": leaf.private_key_pem.bytes().decode(),
                    "secret": "app/tls",
                }
            },
        )

    def client(run: Running) -> None:
        context = ssl.create_default_context()
        ca.configure_trust(context)
        h2c = H2Client(run.https_port, tls=context, server_name="a.example.com")
        assert h2c.alpn == "h2"
        response = h2c.get("/secure")
        assert response.status == 200
        assert echo(response.body)["header_map"]["x-forwarded-proto"] == "https"
        h2c.close()

    run_proxy(tmp_path, make, client)


def test_a_malformed_request_resets_its_stream_only(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        h2c = H2Client(run.http_port, checked=False)
        bad = h2c.send("GET", "/", headers=[("connection", "keep-alive")])
        good = h2c.send("GET", "/fine")
        bad_response, good_response = h2c.wait(bad, good)
        assert bad_response.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR
        assert good_response.status == 200
        connect = h2c.send("CONNECT", "/")
        assert h2c.wait(connect)[0].status == 501
        h2c.close()

    run_proxy(tmp_path, hosts, client)


def test_gateway_rules_route_http2_requests(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            endpoints={"one": [ports["one"]], "two": [ports["two"]]},
            gateway_port=ports["gateway"],
            gateway_rules=[gateway_rule([backend("two")])],
        )

    def client(run: Running) -> None:
        h2c = H2Client(run.gateway_port)
        response = h2c.get("/any", authority="anything.example")
        assert response.status == 200
        assert echo(response.body)["backend"] == "two"
        h2c.close()

    run_proxy(tmp_path, make, client)


def test_an_http1_backends_trailers_reach_http2_clients_and_http1_clients_that_asked(
    tmp_path: Path,
) -> None:
    """RFC 9110 §6.5: trailers pass through to an HTTP/2 client; an HTTP/1.1 client gets them
    in the last chunk only when it sent ``TE: trailers`` (§10.1.4)."""

    def client(run: Running) -> None:
        h2c = H2Client(run.http_port)
        response = h2c.get("/trailers")
        assert echo(response.body)["target"] == "/trailers"
        assert response.trailers == {"x-checksum": "42"}
        h2c.close()
        for te, expected in (("trailers", b"x-checksum: 42\r\n"), (None, None)):
            raw = raw_get(run.http_port, "/trailers", te=te)
            last = raw.rpartition(b"\r\n0\r\n")[2]
            if expected is None:
                assert last == b"\r\n"
            else:
                assert last.lower() == expected + b"\r\n"

    run_proxy(tmp_path, hosts, client)


def raw_get(port: int, path: str, *, te: str | None) -> bytes:
    """An HTTP/1.1 GET that closes, and every byte of the answer."""
    fields = f"te: {te}\r\nconnection: te, close\r\n" if te else "connection: close\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nhost: a.example.com\r\n{fields}\r\n".encode())
        answer = b""
        while data := sock.recv(65536):
            answer += data
    return answer


def test_a_drain_sends_two_goaways_and_finishes_the_stream_in_flight(tmp_path: Path) -> None:
    """RFC 9113 §6.8: GOAWAY with the highest stream identifier, a PING, GOAWAY with the last
    stream taken after its acknowledgement; the stream in flight is answered, then the
    connection closes."""

    def client(run: Running) -> None:
        sock = socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT)
        reader = _FrameReader(sock)
        request = hpack.Encoder().encode(
            [
                (b":method", b"POST"),
                (b":scheme", b"http"),
                (b":authority", b"a.example.com"),
                (b":path", b"/drained"),
                (b"expect", b"100-continue"),
            ]
        )
        sock.sendall(
            frames.PREFACE
            + frames.settings([])
            + frames.frame(frames.HEADERS, frames.END_HEADERS, 1, request)
        )
        assert isinstance(reader.until(HeadersFrame), HeadersFrame)  # 100: the stream is taken
        token = trio.from_thread.run_sync(trio.lowlevel.current_trio_token)
        drain = threading.Thread(
            target=lambda: trio.from_thread.run(run.proxy.drain, TIMEOUT, trio_token=token)
        )
        drain.start()
        first = reader.until(GoAwayFrame)
        assert isinstance(first, GoAwayFrame)
        assert (first.last_stream_id, first.error_code) == (2**31 - 1, 0)
        ping = reader.until(PingFrame)
        assert isinstance(ping, PingFrame)
        sock.sendall(frames.ping(ping.opaque_data, ack=True))
        second = reader.until(GoAwayFrame)
        assert isinstance(second, GoAwayFrame)
        assert (second.last_stream_id, second.error_code) == (1, 0)
        sock.sendall(frames.frame(frames.DATA, frames.END_STREAM, 1, b"body"))
        answer = reader.until(HeadersFrame)
        assert isinstance(answer, HeadersFrame)
        body = reader.until(DataFrame)
        assert isinstance(body, DataFrame)
        assert echo(body.data)["body"] == "body"
        reader.until(None)  # the connection closes
        drain.join()
        sock.close()

    run_proxy(tmp_path, hosts, client)


class _FrameReader:
    """Frames as the server sends them, parsed by ``hyperframe``."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def until(self, kind: type[Frame] | None) -> Frame | None:
        """The next frame of ``kind`` (others skipped); None when the connection closes."""
        while True:
            while len(self.buffer) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
                if len(self.buffer) < 9 + length:
                    break
                frame.parse_body(memoryview(self.buffer[9 : 9 + length]))
                self.buffer = self.buffer[9 + length :]
                if kind is not None and isinstance(frame, kind):
                    return frame
            data = self.sock.recv(65536)
            if not data:
                return None
            self.buffer += data


def test_a_connection_idle_after_its_streams_is_closed_after_the_header_timeout(
    tmp_path: Path,
) -> None:
    def client(run: Running) -> None:
        h2c = H2Client(run.http_port)
        assert h2c.get("/").status == 200
        goaway = h2c.until_goaway()  # idle from the stream's end: bounded by header_timeout
        assert goaway is not None
        assert goaway.error_code == h2.errors.ErrorCodes.NO_ERROR
        assert goaway.last_stream_id == 1

    run_proxy(tmp_path, hosts, client, header_timeout=0.5)
