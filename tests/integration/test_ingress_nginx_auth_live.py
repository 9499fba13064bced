"""ingress-nginx's external authentication (``auth-url``), rate limits and session affinity
through the running proxy over real sockets on 127.0.0.1 (docs/migrating-from-ingress-nginx.md,
"Access and limits")."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from typing import TYPE_CHECKING, Any

import h11
import pytest
import trio
import trustme

from .h2_client import H2Client
from .nginx_harness import NGINX, compiled, shop, spread_service
from .proxy_harness import (
    TIMEOUT,
    Running,
    echoed,
    free_port,
    request,
    run_proxy,
    serve_echo,
)

if TYPE_CHECKING:
    from pathlib import Path

AUTH = "auth"


async def _answer_auth(stream: trio.abc.Stream, received: list[dict[str, Any]]) -> None:
    """An auth service deciding on ``Authorization``: ``Bearer good`` is 200 with
    ``X-User: alice`` and a cookie, ``Bearer forbidden`` 403, ``Bearer broken`` 502, none 401
    with a challenge. Each request it got goes into ``received``."""
    conn = h11.Connection(h11.SERVER)
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            if not data:
                return
            conn.receive_data(bytes(data))
            continue
        if not isinstance(event, h11.Request):
            return
        headers = {n.decode(): v.decode() for n, v in event.headers}
        received.append(
            {"method": event.method.decode(), "target": event.target.decode(), "headers": headers}
        )
        said = headers.get("authorization", "")
        status, fields = 401, [("www-authenticate", 'Bearer realm="shop"')]
        if said == "Bearer good":
            status, fields = 200, [("x-user", "alice"), ("set-cookie", "session=1; Path=/")]
        elif said == "Bearer forbidden":
            status, fields = 403, []
        elif said == "Bearer broken":
            status, fields = 502, []
        body = json.dumps({"status": status}).encode()
        response = h11.Response(
            status_code=status,
            headers=[*fields, ("content-length", str(len(body))), ("connection", "close")],
        )
        await stream.send_all(conn.send(response) + conn.send(h11.Data(data=body)))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        return


async def serve_with_auth(
    name: str,
    received: list[dict[str, Any]],
    *,
    tls: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The echo backends, and the auth service under the name ``auth``."""
    if name != AUTH:
        await serve_echo(name, received, tls=tls, task_status=task_status)
        return
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])

    async def handle(stream: trio.abc.Stream) -> None:
        async with stream:
            with contextlib.suppress(trio.BrokenResourceError, h11.RemoteProtocolError):
                await _answer_auth(stream, received)

    await trio.serve_listeners(handle, listeners)


def guarded(annotations: dict[str, str]) -> Any:
    """A snapshot maker: ``shop`` on backend one, its ``auth-url`` on the auth service."""

    def make(ports: dict[str, int]) -> dict[str, Any]:
        url = f"http://127.0.0.1:{ports[AUTH]}/verify?app=shop"
        ingress = shop({NGINX + "auth-url": url, **annotations}, ("/", "Prefix", "one"))
        return compiled(ingress)(ports)

    return make


def fetch(run: Running, target: str, **headers: str) -> tuple[int, Any, bytes]:
    """GET ``target`` of shop.example.com with ``headers`` (``_`` in a name sent as ``-``)."""
    named = {n.replace("_", "-"): v for n, v in headers.items()}
    response, data = request(run.http_port, "GET", target, host="shop.example.com", headers=named)
    return response.status, response, data


def test_auth_url_decides_each_request_and_passes_its_headers(tmp_path: Path) -> None:
    annotations = {
        NGINX + "auth-response-headers": "X-User, X-Groups",
        "coxswain-labs.dev/auth-always-set-cookie": "true",
    }

    def client(run: Running) -> None:
        status, response, _ = fetch(run, "/orders?id=7")
        assert status == 401
        assert response.getheader("www-authenticate") == 'Bearer realm="shop"'
        assert run.received["one"] == []
        # X-User comes from the auth service; X-Groups, which it did not send, is removed
        status, response, data = fetch(
            run, "/orders?id=7", Authorization="Bearer good", X_User="mallory", X_Groups="admin"
        )
        assert status == 200
        got = echoed(data)
        assert (got["backend"], got["target"]) == ("one", "/orders?id=7")
        assert got["header_map"]["x-user"] == ["alice"]
        assert "x-groups" not in got["header_map"]
        assert response.getheader("set-cookie") == "session=1; Path=/"
        asked = run.received[AUTH][-1]
        assert (asked["method"], asked["target"]) == ("GET", "/verify?app=shop")
        assert asked["headers"]["x-original-url"] == "http://shop.example.com/orders?id=7"
        assert asked["headers"]["x-original-method"] == "GET"
        assert asked["headers"]["x-auth-request-redirect"] == "/orders?id=7"
        assert asked["headers"]["x-forwarded-for"] == "127.0.0.1"
        assert asked["headers"]["host"] == "127.0.0.1"
        assert fetch(run, "/", Authorization="Bearer forbidden")[0] == 403
        assert fetch(run, "/", Authorization="Bearer broken")[0] == 500
        assert len(run.received["one"]) == 1
        h2c = H2Client(run.http_port)  # HTTP/2 streams are authorized alike
        assert h2c.get("/", authority="shop.example.com").status == 401
        allowed = h2c.get(
            "/", authority="shop.example.com", headers=[("authorization", "Bearer good")]
        )
        assert allowed.status == 200
        assert json.loads(allowed.body)["backend"] == "one"
        h2c.close()

    run_proxy(
        tmp_path, guarded(annotations), client, backends=("one", "two", AUTH), echo=serve_with_auth
    )


def test_auth_signin_redirects_a_401_with_the_original_url(tmp_path: Path) -> None:
    annotations = {
        NGINX + "auth-signin": "https://login.example.com/start",
        NGINX + "auth-method": "POST",
    }

    def client(run: Running) -> None:
        status, response, _ = fetch(run, "/cart?x=1")
        assert status == 302
        assert response.getheader("location") == (
            "https://login.example.com/start?rd=http://shop.example.com%2Fcart%3Fx%3D1"
        )
        assert fetch(run, "/", Authorization="Bearer forbidden")[0] == 403
        asked = run.received[AUTH][-1]
        assert asked["method"] == "POST"
        assert asked["headers"]["x-original-uri"] == "/"

    run_proxy(
        tmp_path, guarded(annotations), client, backends=("one", "two", AUTH), echo=serve_with_auth
    )


def test_auth_cache_key_remembers_the_statuses_auth_cache_duration_names(tmp_path: Path) -> None:
    annotations = {
        NGINX + "auth-cache-key": "$remote_addr$http_authorization",
        NGINX + "auth-cache-duration": "200 10m",
        NGINX + "auth-response-headers": "X-User",
    }

    def client(run: Running) -> None:
        for _ in range(3):
            status, _, data = fetch(run, "/", Authorization="Bearer good")
            assert (status, echoed(data)["header_map"]["x-user"]) == (200, ["alice"])
        assert len(run.received[AUTH]) == 1  # remembered for ten minutes
        for _ in range(2):
            assert fetch(run, "/", Authorization="Bearer forbidden")[0] == 403
        assert len(run.received[AUTH]) == 3  # a 403 is not remembered

    run_proxy(
        tmp_path, guarded(annotations), client, backends=("one", "two", AUTH), echo=serve_with_auth
    )


def test_an_auth_service_that_cannot_be_reached_answers_500(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    ingress = shop(
        {NGINX + "auth-url": f"http://127.0.0.1:{closed}/verify"}, ("/", "Prefix", "one")
    )

    def client(run: Running) -> None:
        assert fetch(run, "/", Authorization="Bearer good")[0] == 500
        assert run.received["one"] == []

    run_proxy(tmp_path, compiled(ingress), client)


def test_limit_rps_admits_its_rate_after_the_burst(tmp_path: Path) -> None:
    limited = shop(
        {NGINX + "limit-rps": "10", NGINX + "limit-burst-multiplier": "1"}, ("/", "Prefix", "one")
    )
    free = shop(
        {NGINX + "limit-rps": "1", NGINX + "limit-whitelist": "10.0.0.0/8, 127.0.0.0/8"},
        ("/", "Prefix", "two"),
    )
    free["metadata"]["name"] = "free"
    free["spec"]["rules"][0]["host"] = "free.example.com"
    admitted: list[float] = []
    refused = 0

    def client(run: Running) -> None:
        nonlocal refused
        for _ in range(20):  # whitelisted: never limited
            assert request(run.http_port, "GET", "/", host="free.example.com")[0].status == 200
        started = time.monotonic()
        while time.monotonic() - started < 4:  # faster than 10 a second, as fast as it goes
            status = fetch(run, "/")[0]
            assert status in (200, 503)
            if status == 200:
                admitted.append(time.monotonic())
            else:
                refused += 1

    run_proxy(tmp_path, compiled(limited, free), client)
    # a new client gets its first request and the burst of 10 at once, then 10 a second
    steady = admitted[11:]
    rate = (len(steady) - 1) / (steady[-1] - steady[0])
    assert refused > len(admitted)
    assert 9 <= rate <= 11, f"admitted {rate:.2f} requests a second under limit-rps 10"


def test_limit_connections_bounds_the_requests_in_progress(tmp_path: Path) -> None:
    ingress = shop(
        {NGINX + "limit-connections": "1", NGINX + "proxy-read-timeout": "3"},
        ("/", "Prefix", "one"),
    )

    def client(run: Running) -> None:
        stalled: list[int] = []

        def stall() -> None:  # tried again while a probe below holds the one place
            while not stalled or stalled[-1] == 503:
                stalled.append(fetch(run, "/stall")[0])

        thread = threading.Thread(target=stall)
        thread.start()
        statuses: list[int] = []
        while 503 not in statuses and thread.is_alive():
            time.sleep(0.05)
            statuses.append(fetch(run, "/")[0])
        thread.join()
        assert stalled[-1] == 504
        assert 503 in statuses  # refused while the stalled request was in progress
        assert fetch(run, "/")[0] == 200  # its place given back

    run_proxy(tmp_path, compiled(ingress), client)


def pair(ports: dict[str, int]) -> list[dict[str, Any]]:
    """Service ``app/pair`` whose two endpoints are the echo backends one and two."""
    return spread_service("pair", {name: ports[name] for name in ("one", "two")})


@pytest.mark.parametrize("mode", ["balanced", "persistent"])
def test_affinity_cookie_keeps_a_client_on_one_endpoint(tmp_path: Path, mode: str) -> None:
    sticky = shop(
        {
            NGINX + "affinity": "cookie",
            NGINX + "affinity-mode": mode,
            NGINX + "session-cookie-max-age": "3600",
            NGINX + "session-cookie-samesite": "Lax",
        },
        ("/cart", "Prefix", "pair"),
    )

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return compiled(sticky, *pair(ports))(ports)

    def client(run: Running) -> None:
        seen = set()
        for _ in range(40):  # new clients are spread over both endpoints
            status, response, data = fetch(run, "/cart")
            assert status == 200
            seen.add(echoed(data)["backend"])
            cookie = response.getheader("set-cookie")
            assert cookie.startswith("INGRESSCOOKIE=")
            assert cookie.endswith("; Max-Age=3600; Path=/cart; HttpOnly; SameSite=Lax")
        assert seen == {"one", "two"}
        for _ in range(5):  # a client with the cookie stays where it was sent first
            _, response, data = fetch(run, "/cart")
            first = echoed(data)["backend"]
            value = response.getheader("set-cookie").split(";")[0]
            for _ in range(10):
                status, again, data = fetch(run, "/cart/item", Cookie=f"a=b; {value}")
                assert (status, echoed(data)["backend"]) == (200, first)
                assert again.getheader("set-cookie") is None

    run_proxy(tmp_path, make, client)


SERVER_CA = trustme.CA()
CLIENT_CA = trustme.CA()
TRUSTED = CLIENT_CA.issue_cert("client.example.com").configure_cert
STRANGER = trustme.CA().issue_cert("client.example.com").configure_cert  # not the Ingress's CA


def tls_secrets() -> list[dict[str, Any]]:
    served = SERVER_CA.issue_cert("shop.example.com", "opt.example.com")
    chain = b"".join(blob.bytes() for blob in served.cert_chain_pems).decode()
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "shop-tls", "namespace": "app"},
            "type": "kubernetes.io/tls",
            "stringData": {"tls.crt": chain, "tls.key": served.private_key_pem.bytes().decode()},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "client-ca", "namespace": "app"},
            "stringData": {"ca.crt": CLIENT_CA.cert_pem.bytes().decode()},
        },
    ]


def https_get(run: Running, host: str, client: Any = None) -> tuple[int, Any, bytes]:
    """GET / of ``host`` over TLS with SNI, with the client certificate ``client`` loads."""
    context = ssl.create_default_context()
    SERVER_CA.configure_trust(context)
    if client is not None:
        client(context)
    conn = http.client.HTTPSConnection(
        "127.0.0.1", run.https_port, timeout=TIMEOUT, context=context
    )
    conn.sock = context.wrap_socket(
        socket.create_connection(("127.0.0.1", run.https_port), timeout=TIMEOUT),
        server_hostname=host,
    )
    conn.request("GET", "/", headers={"Host": host, "ssl-client-verify": "SUCCESS"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response, data


def test_auth_tls_checks_the_client_certificate_per_request(tmp_path: Path) -> None:
    required = shop(
        {
            NGINX + "auth-tls-secret": "app/client-ca",
            NGINX + "auth-tls-pass-certificate-to-upstream": "true",
            NGINX + "auth-tls-match-cn": "O=trustme",  # trustme's subjects carry it
        },
        ("/", "Prefix", "one"),
    )
    optional = shop(
        {
            NGINX + "auth-tls-secret": "client-ca",
            NGINX + "auth-tls-verify-client": "optional",
            NGINX + "auth-tls-error-page": "https://help.example.com/certificates",
        },
        ("/", "Prefix", "two"),
    )
    optional["metadata"]["name"] = "optional"
    optional["spec"]["rules"][0]["host"] = "opt.example.com"
    for ingress in (required, optional):
        ingress["spec"]["tls"] = [
            {"hosts": [ingress["spec"]["rules"][0]["host"]], "secretName": "shop-tls"}
        ]

    def client(run: Running) -> None:
        assert https_get(run, "shop.example.com")[0] == 400
        assert https_get(run, "shop.example.com", STRANGER)[0] == 400
        status, _, data = https_get(run, "shop.example.com", TRUSTED)
        got = echoed(data)["header_map"]
        assert (status, got["ssl-client-verify"]) == (200, ["SUCCESS"])
        assert got["ssl-client-subject-dn"][0].startswith("OU=Testing cert")  # trustme's names
        assert got["ssl-client-issuer-dn"][0].startswith("OU=Testing CA")
        assert got["ssl-client-cert"][0].startswith("-----BEGIN%20CERTIFICATE-----%0A")
        status, _, data = https_get(run, "opt.example.com")  # no certificate: passes
        assert (status, echoed(data)["header_map"]["ssl-client-verify"]) == (200, ["NONE"])
        context = ssl.create_default_context()
        SERVER_CA.configure_trust(context)
        TRUSTED(context)
        h2c = H2Client(run.https_port, tls=context, server_name="shop.example.com")
        response = h2c.get("/", authority="shop.example.com")  # streams see the handshake
        assert (h2c.alpn, response.status) == ("h2", 200)
        h2c.close()
        status, response, _ = https_get(run, "opt.example.com", STRANGER)
        assert (status, response.getheader("location")) == (
            302,
            "https://help.example.com/certificates",
        )

    run_proxy(tmp_path, compiled(required, optional, *tls_secrets()), client)
