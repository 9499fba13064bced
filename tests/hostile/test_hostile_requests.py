"""Hostile clients of the request path: upgrades that would escape routing, absolute-form
targets that disagree with Host, and forged forwarding headers.

Every attack runs on real sockets through the in-process proxy (``tests.integration.
proxy_harness``); each asserts the exact answer or the head the backend received, and that the
next request on the same connection (or proxy) is unaffected.

- Only ``websocket`` is tunnelled; any other ``Upgrade`` (``h2c`` first) is forwarded without
  it, ``HTTP2-Settings`` and the ``Connection`` options naming them (``coxswain.route.forward``,
  rule 4). A 101 to anything but websocket is 502.
- An absolute-form target is routed by its authority, not by Host, and forwarded in origin form
  with that authority as Host (``coxswain.route.target``).
- ``X-Real-IP``, ``Forwarded`` and ``X-Forwarded-*`` from a peer outside ``--trusted-proxies``
  are dropped; ``X-Real-IP`` and ``X-Forwarded-For`` are the peer's address
  (``coxswain.route.forward``, rule 3).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import socket
import threading
import weakref
from typing import TYPE_CHECKING, Any

import pytest

from coxswain.cli.types import networks
from coxswain.route import RequestHead, select
from coxswain.route.forward import switched_to_websocket, tunnelled_upgrade
from coxswain.route.target import Target, origin_form
from tests.integration.proxy_harness import (
    TIMEOUT,
    Running,
    echoed,
    ingress_path,
    run_proxy,
    snapshot,
)
from tests.unit.ingress_world import ingress, path, rule, table_of

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def public_only(ports: dict[str, int]) -> dict[str, Any]:
    """``a.example.com/public`` → one; ``b.example.com`` → two. Nothing routes ``/admin``."""
    return snapshot(
        hosts={
            "a.example.com": [ingress_path("one", "/public")],
            "b.example.com": [ingress_path("two")],
        },
        endpoints={"one": [ports["one"]], "two": [ports["two"]]},
    )


_unread: weakref.WeakKeyDictionary[socket.socket, bytes] = weakref.WeakKeyDictionary()


def read_answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """One response: its head (lower-cased) and its Content-Length body. Bytes past it (the
    answer to a pipelined request, read in the same receive) are kept for the next call."""
    data = _unread.pop(sock, b"")
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError(f"closed after {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    head = head.lower()
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError(f"closed inside the body after {body!r}")
        body += chunk
    body, _unread[sock] = body[:length], body[length:]
    return head, body


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)


def names(seen: dict[str, Any]) -> set[str]:
    return {name.lower() for name, _ in seen["headers"]}


# --- upgrades -----------------------------------------------------------------------------------

H2C = (
    b"GET /public HTTP/1.1\r\nHost: a.example.com\r\n"
    b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
    b"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
)


def test_an_h2c_upgrade_is_forwarded_without_it(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            sock.sendall(H2C + b"GET /public/next HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
            head, body = read_answer(sock)
            assert head.startswith(b"http/1.1 200 ")
            seen = echoed(body)
            assert seen["target"] == "/public"
            assert not names(seen) & {"upgrade", "http2-settings", "connection"}
            head, body = read_answer(sock)  # the same connection carries on with HTTP/1.1
            assert head.startswith(b"http/1.1 200 ")
            assert echoed(body)["target"] == "/public/next"
            # HTTP/2 bytes after a refused upgrade are not HTTP/1.1: 400, never routed
            sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            head, _ = read_answer(sock)
            assert head.startswith(b"http/1.1 400 ")

    run_proxy(tmp_path, public_only, client)


def test_an_h2c_upgrade_with_a_body_is_forwarded_whole_and_the_connection_carries_on(
    tmp_path: Path,
) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            sock.sendall(
                b"POST /public/form HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 5\r\n"
                b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                b"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\nhello"
                b"GET http://b.example.com/after HTTP/1.1\r\nHost: a.example.com\r\n\r\n"
            )
            head, body = read_answer(sock)
            assert head.startswith(b"http/1.1 200 ")
            seen = echoed(body)
            assert (seen["method"], seen["target"], seen["body"]) == (
                "POST",
                "/public/form",
                "hello",
            )
            assert not names(seen) & {"upgrade", "http2-settings", "connection"}
            head, body = read_answer(sock)
            seen = echoed(body)
            assert (seen["backend"], seen["target"]) == ("two", "/after")

    run_proxy(tmp_path, public_only, client)


@pytest.mark.parametrize("offer", [b"h2c", b"shout", b"TLS/1.2", b"h2c, websocket/13", b"h2"])
def test_an_upgrade_other_than_websocket_is_not_asked_of_the_upstream(
    tmp_path: Path, offer: bytes
) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            for _ in range(2):
                sock.sendall(
                    b"GET /public/x HTTP/1.1\r\nHost: a.example.com\r\nConnection: upgrade\r\n"
                    b"Upgrade: " + offer + b"\r\n\r\n"
                )
                head, body = read_answer(sock)
                assert head.startswith(b"http/1.1 200 ")
                assert b"upgrade" not in head
                seen = echoed(body)
                assert seen["target"] == "/public/x"
                assert not names(seen) & {"upgrade", "connection"}

    run_proxy(tmp_path, public_only, client)


def test_websocket_among_other_offers_is_tunnelled_alone(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            sock.sendall(
                b"GET /public/ws HTTP/1.1\r\nHost: a.example.com\r\nConnection: upgrade\r\n"
                b"Upgrade: h2c, WebSocket\r\n\r\nping"
            )
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(1)
            assert head.startswith(b"HTTP/1.1 101 ")
            assert b"upgrade: websocket\r\n" in head.lower()
            received = b""
            while len(received) < 4:
                received += sock.recv(4096)
            assert received == b"PING"

    run_proxy(tmp_path, public_only, client)


@contextlib.contextmanager
def switching_backend(answer: bytes) -> Iterator[int]:
    """A backend that answers every request head with ``answer`` and closes; its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(TIMEOUT)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                peer, _ = listener.accept()
                with peer:
                    data = b""
                    while b"\r\n\r\n" not in data and (chunk := peer.recv(4096)):
                        data += chunk
                    peer.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        listener.close()
        thread.join(TIMEOUT)


@pytest.mark.parametrize(
    "switch",
    [
        b"Connection: upgrade\r\nUpgrade: h2c\r\n",
        b"Connection: upgrade\r\nUpgrade: websocket, h2c\r\n",
        b"Connection: upgrade\r\n",
    ],
)
def test_a_101_to_another_protocol_than_websocket_is_502(tmp_path: Path, switch: bytes) -> None:
    with switching_backend(b"HTTP/1.1 101 Switching Protocols\r\n" + switch + b"\r\n") as port:

        def make(ports: dict[str, int]) -> dict[str, Any]:
            return snapshot(
                hosts={
                    "a.example.com": [ingress_path("evil")],
                    "b.example.com": [ingress_path("two")],
                },
                endpoints={"evil": [port], "two": [ports["two"]]},
            )

        def client(run: Running) -> None:
            with connect(run.http_port) as sock:
                sock.sendall(
                    b"GET /ws HTTP/1.1\r\nHost: a.example.com\r\nConnection: upgrade\r\n"
                    b"Upgrade: websocket\r\n\r\n"
                )
                head, _ = read_answer(sock)
                assert head.startswith(b"http/1.1 502 ")
                assert b"connection: close" in head
                # nothing the backend sent after its 101 follows: the connection just ends
                assert _unread.get(sock, b"") + sock.recv(4096) == b""
            with connect(run.http_port) as sock:  # the proxy serves the others as before
                sock.sendall(b"GET /b HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
                head, body = read_answer(sock)
                assert head.startswith(b"http/1.1 200 ")
                assert echoed(body)["target"] == "/b"

        run_proxy(tmp_path, make, client)


@pytest.mark.parametrize(
    ("offer", "asked"),
    [
        (None, None),
        (b"websocket", b"websocket"),
        (b"WebSocket", b"websocket"),
        (b"h2c", None),
        (b"h2c, websocket", b"websocket"),
        (b"websocket/13", None),
        (b"", None),
    ],
)
def test_only_websocket_is_asked_of_the_upstream(offer: bytes | None, asked: bytes | None) -> None:
    assert tunnelled_upgrade(offer) == asked


def test_a_101_must_switch_to_websocket_alone() -> None:
    assert switched_to_websocket([(b"upgrade", b"websocket")])
    assert switched_to_websocket([(b"upgrade", b"WebSocket ")])
    assert not switched_to_websocket([])
    assert not switched_to_websocket([(b"upgrade", b"h2c")])
    assert not switched_to_websocket([(b"upgrade", b"websocket"), (b"upgrade", b"h2c")])


# --- absolute-form targets ----------------------------------------------------------------------


def test_an_absolute_form_target_is_routed_by_its_authority(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            sock.sendall(b"GET http://b.example.com/x?q=1 HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
            head, body = read_answer(sock)
            assert head.startswith(b"http/1.1 200 ")
            seen = echoed(body)
            assert seen["backend"] == "two"
            assert seen["target"] == "/x?q=1"
            assert seen["header_map"]["host"] == ["b.example.com"]
            assert seen["header_map"]["x-forwarded-host"] == ["b.example.com"]
            # the authority names a host whose only rule is /public: /admin is not routed,
            # whatever Host says (b.example.com routes every path)
            sock.sendall(b"GET HTTP://A.example.com/admin HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
            head, _ = read_answer(sock)
            assert head.startswith(b"http/1.1 404 ")
            sock.sendall(
                b"GET http://a.example.com/public/../admin HTTP/1.1\r\nHost: b.example.com\r\n\r\n"
            )
            head, _ = read_answer(sock)
            assert head.startswith(b"http/1.1 404 ")
            sock.sendall(b"GET http://a.example.com:80 HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
            head, _ = read_answer(sock)
            assert head.startswith(b"http/1.1 404 ")  # path "/": not under /public
            sock.sendall(b"GET http://b.example.com?x HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
            head, body = read_answer(sock)
            seen = echoed(body)
            assert (seen["backend"], seen["target"]) == ("two", "/?x")
            # an origin-form request on the same connection is routed by Host as before
            sock.sendall(b"GET /public/y HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
            head, body = read_answer(sock)
            seen = echoed(body)
            assert (seen["backend"], seen["target"]) == ("one", "/public/y")
            assert seen["header_map"]["x-forwarded-host"] == ["a.example.com"]

    run_proxy(tmp_path, public_only, client)


@pytest.mark.parametrize(
    "target", [b"ftp://b.example.com/x", b"http://user@b.example.com/x", b"http:///x"]
)
def test_an_absolute_form_target_the_proxy_cannot_serve_is_400(
    tmp_path: Path, target: bytes
) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            sock.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
            head, _ = read_answer(sock)
            assert head.startswith(b"http/1.1 400 ")
        with connect(run.http_port) as sock:
            sock.sendall(b"GET /z HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
            head, body = read_answer(sock)
            assert echoed(body)["target"] == "/z"

    run_proxy(tmp_path, public_only, client)


@pytest.mark.parametrize(
    ("target", "form"),
    [
        ("/a?b", Target("/a?b", None)),
        ("*", Target("*", None)),
        ("http://c.example/x", Target("/x", "c.example")),
        ("HTTPS://c.example:8443", Target("/", "c.example:8443")),
        ("http://c.example?q", Target("/?q", "c.example")),
        ("http://[::1]:80/p#f", Target("/p#f", "[::1]:80")),
    ],
)
def test_origin_form_of_a_target(target: str, form: Target) -> None:
    assert origin_form(target) == form


@pytest.mark.parametrize(
    "target", ["ftp://c.example/x", "http://u@c.example/", "http:///x", "c.example/x", "x"]
)
def test_a_target_that_names_no_http_origin_is_a_reason(target: str) -> None:
    assert isinstance(origin_form(target), str)


def test_select_routes_an_absolute_form_target_by_its_authority() -> None:
    table = table_of(
        ingress(
            "hosts",
            rule("a.example.com", path("/public", "a")),
            rule("b.example.com", path("/", "b")),
        )
    )

    def decide(target: str, host: str) -> Any:
        return select(
            table, RequestHead(port=80, method="GET", target=target, host=host, tls=False)
        )

    found = decide("http://b.example.com/x/../y?q", "a.example.com")
    assert (found.status, found.backends[0].service) == (None, "b")
    assert (found.host, found.path, found.authority) == ("b.example.com", "/y?q", "b.example.com")
    assert decide("http://a.example.com/admin", "b.example.com").status == 404
    refused = decide("gopher://b.example.com/", "b.example.com")
    assert (refused.status, refused.matched, refused.backends) == (400, False, ())
    plain = decide("/x", "b.example.com")
    assert (plain.host, plain.path, plain.authority) == ("b.example.com", "/x", None)


# --- forwarding fields --------------------------------------------------------------------------

FORGED = (
    b"X-Real-IP: 6.6.6.6\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n"
    b"X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Port: 443\r\n"
    b"X-Real-Ip: 7.7.7.7\r\n"
)
FORGING = {"x-real-ip", "forwarded", "x-forwarded-port"}


def forwarding(seen: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = seen["header_map"]
    return {n: v for n, v in found.items() if n in FORGING or n.startswith("x-forwarded-")}


@pytest.mark.parametrize("trusted_proxies", ["", "10.0.0.0/8,::1/128"])
def test_an_untrusted_client_cannot_forge_its_address(tmp_path: Path, trusted_proxies: str) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            for extra in (FORGED, b""):  # and the next request on the connection alike
                sock.sendall(b"GET /public HTTP/1.1\r\nHost: a.example.com\r\n" + extra + b"\r\n")
                head, body = read_answer(sock)
                assert head.startswith(b"http/1.1 200 ")
                assert forwarding(echoed(body)) == {
                    "x-forwarded-for": ["127.0.0.1"],
                    "x-real-ip": ["127.0.0.1"],
                    "x-forwarded-proto": ["http"],
                    "x-forwarded-host": ["a.example.com"],
                }

    run_proxy(tmp_path, public_only, client, trusted_proxies=trusted_proxies)


def test_a_trusted_proxy_keeps_its_fields_and_is_appended(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with connect(run.http_port) as sock:
            sock.sendall(b"GET /public HTTP/1.1\r\nHost: a.example.com\r\n" + FORGED + b"\r\n")
            head, body = read_answer(sock)
            assert head.startswith(b"http/1.1 200 ")
            assert forwarding(echoed(body)) == {
                "x-real-ip": ["6.6.6.6", "7.7.7.7"],
                "x-forwarded-for": ["6.6.6.6, 127.0.0.1"],
                "forwarded": ["for=6.6.6.6"],
                "x-forwarded-proto": ["https"],
                "x-forwarded-host": ["evil.example"],
                "x-forwarded-port": ["443"],
            }
            sock.sendall(b"GET /public HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
            _, body = read_answer(sock)
            assert forwarding(echoed(body)) == {
                "x-forwarded-for": ["127.0.0.1"],
                "x-real-ip": ["127.0.0.1"],
                "x-forwarded-proto": ["http"],
                "x-forwarded-host": ["a.example.com"],
            }

    run_proxy(tmp_path, public_only, client, trusted_proxies="192.0.2.0/24, 127.0.0.0/8")


def test_trusted_proxies_flag_takes_cidrs_and_refuses_anything_else() -> None:
    assert networks("") == ()
    assert networks("10.0.0.0/8, fd00::/8,192.0.2.1") == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("fd00::/8"),
        ipaddress.ip_network("192.0.2.1/32"),
    )
    for bad in ("10.0.0.1/8", "nope", "10.0.0.0/33"):
        with pytest.raises(argparse.ArgumentTypeError, match=bad.replace(".", r"\.")):
            networks(bad)
