"""ingress-nginx annotations through the running proxy over real sockets on 127.0.0.1: each
Ingress is compiled as the controller compiles it, and the echo backend says what it got
(docs/migrating-from-ingress-nginx.md)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from .nginx_harness import NGINX, compiled, shop
from .proxy_harness import Running, echoed, request, run_proxy

if TYPE_CHECKING:
    from pathlib import Path


def get(run: Running, target: str, host: str = "shop.example.com") -> tuple[int, Any, bytes]:
    response, data = request(run.http_port, "GET", target, host=host)
    return response.status, response, data


def test_rewrite_target_sends_the_capture_groups_and_x_forwarded_prefix(tmp_path: Path) -> None:
    ingress = shop(
        {
            NGINX + "rewrite-target": "/$2",
            NGINX + "x-forwarded-prefix": "/api",
            NGINX + "upstream-vhost": "internal.example",
        },
        ("/api(/|$)(.*)", "ImplementationSpecific", "one"),
        ("/", "Prefix", "two"),
    )

    def client(run: Running) -> None:
        status, _, data = get(run, "/API/users/7?x=1")  # case-insensitive, as "location ~*"
        assert status == 200
        got = echoed(data)
        assert (got["backend"], got["target"]) == ("one", "/users/7?x=1")
        assert got["header_map"]["x-forwarded-prefix"] == ["/api"]
        assert got["header_map"]["host"] == ["internal.example"]
        _, _, data = get(run, "/apiary")  # "(/|$)" wants a slash or the end after "/api"
        assert echoed(data)["backend"] == "two"

    run_proxy(tmp_path, compiled(ingress), client)


def test_use_regex_without_rewrite_forwards_the_path_as_received(tmp_path: Path) -> None:
    ingress = shop(
        {NGINX + "use-regex": "true"},
        ("/items/[0-9]+", "ImplementationSpecific", "one"),
        ("/", "ImplementationSpecific", "two"),
    )

    def client(run: Running) -> None:
        _, _, data = get(run, "/ITEMS/42/detail")
        assert (echoed(data)["backend"], echoed(data)["target"]) == ("one", "/ITEMS/42/detail")
        _, _, data = get(run, "/items/x")
        assert echoed(data)["backend"] == "two"

    run_proxy(tmp_path, compiled(ingress), client)


def test_redirect_annotations_answer_without_the_backend(tmp_path: Path) -> None:
    moved = shop(
        {
            NGINX + "permanent-redirect": "https://new.example.com$request_uri",
            NGINX + "permanent-redirect-code": "308",
        },
        ("/old", "Prefix", "one"),
    )
    other = shop(
        {
            NGINX + "app-root": "/app1",
            NGINX + "from-to-www-redirect": "true",
            NGINX + "force-ssl-redirect": "true",
        },
        ("/", "Prefix", "two"),
    )
    other["metadata"]["name"] = "root"

    def client(run: Running) -> None:
        status, response, _ = get(run, "/old/page?a=1")
        assert (status, response.getheader("location")) == (
            308,
            "https://new.example.com/old/page?a=1",
        )
        status, response, _ = get(run, "/")
        assert (status, response.getheader("location")) == (302, "http://shop.example.com/app1")
        status, response, _ = get(run, "/p", host="www.shop.example.com")
        assert (status, response.getheader("location")) == (308, "http://shop.example.com/p")
        status, response, _ = get(run, "/p")
        assert status == 308
        assert response.getheader("location").startswith("https://shop.example.com")

    run_proxy(tmp_path, compiled(moved, other), client)


def test_a_refused_snippet_does_not_stop_the_ingress_serving(tmp_path: Path) -> None:
    ingress = shop(
        {NGINX + "configuration-snippet": "return 500;", NGINX + "server-alias": "alias.example"},
        ("/", "Prefix", "one"),
    )

    def client(run: Running) -> None:
        for host in ("shop.example.com", "alias.example"):
            status, _, data = get(run, "/x", host=host)
            assert (status, echoed(data)["backend"]) == (200, "one")

    run_proxy(tmp_path, compiled(ingress), client)


APR1 = "$apr1$s4lt5alt$zK4L8gxLn4tRwoWC/Svhx."  # openssl passwd -apr1 -salt s4lt5alt secret


def users_secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "users", "namespace": "app"},
        "type": "Opaque",
        "stringData": {"auth": f"ann:{APR1}\n"},
    }


def test_basic_auth_source_ranges_and_body_size_are_checked_per_request(tmp_path: Path) -> None:
    guarded = shop(
        {
            NGINX + "auth-type": "basic",
            NGINX + "auth-secret": "users",
            NGINX + "auth-realm": "Staff",
            NGINX + "whitelist-source-range": "127.0.0.0/8",
            NGINX + "proxy-body-size": "1k",
        },
        ("/", "Prefix", "one"),
    )
    closed = shop({NGINX + "denylist-source-range": "127.0.0.1/32"}, ("/", "Prefix", "two"))
    closed["metadata"]["name"] = "closed"
    closed["spec"]["rules"][0]["host"] = "closed.example.com"
    ann = "Basic " + base64.b64encode(b"ann:secret").decode()

    def client(run: Running) -> None:
        response, _ = request(run.http_port, "GET", "/", host="shop.example.com")
        assert response.status == 401
        assert response.getheader("www-authenticate") == 'Basic realm="Staff"'
        for _ in range(2):  # the second time from the cached decision
            response, data = request(
                run.http_port, "GET", "/", host="shop.example.com", headers={"Authorization": ann}
            )
            assert (response.status, echoed(data)["backend"]) == (200, "one")
            response, _ = request(run.http_port, "GET", "/", host="shop.example.com")
            assert response.status == 401
        response, _ = request(
            run.http_port,
            "POST",
            "/",
            host="shop.example.com",
            headers={"Authorization": ann},
            body=b"x" * 1025,
        )
        assert response.status == 413
        response, _ = request(run.http_port, "GET", "/", host="closed.example.com")
        assert response.status == 403

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return compiled(guarded, closed, users_secret())(ports)

    run_proxy(tmp_path, make, client)


def test_an_auth_annotation_coxswain_cannot_honour_answers_503(tmp_path: Path) -> None:
    ingress = shop({NGINX + "auth-tls-secret": "app/ca"}, ("/", "Prefix", "one"))

    def client(run: Running) -> None:
        status, _, _ = get(run, "/")
        assert status == 503

    run_proxy(tmp_path, compiled(ingress), client)


def test_proxy_read_timeout_ends_a_stalled_backend_with_504(tmp_path: Path) -> None:
    ingress = shop({NGINX + "proxy-read-timeout": "0.5"}, ("/", "Prefix", "one"))

    def client(run: Running) -> None:
        status, _, _ = get(run, "/stall")  # the proxy's own read timeout is 60 s
        assert status == 504

    run_proxy(tmp_path, compiled(ingress), client)


def test_proxy_next_upstream_tries_again_on_a_listed_status(tmp_path: Path) -> None:
    ingress = shop(
        {
            NGINX + "proxy-next-upstream": "error timeout http_503",
            NGINX + "proxy-next-upstream-tries": "3",
        },
        ("/", "Prefix", "one"),
    )
    plain = shop({}, ("/", "Prefix", "two"))
    plain["metadata"]["name"] = "plain"
    plain["spec"]["rules"][0]["host"] = "plain.example.com"

    def client(run: Running) -> None:
        status, _, data = get(run, "/a/flaky?fail=2&code=503")
        assert (status, echoed(data)["backend"]) == (200, "one")
        assert len(run.received["one"]) == 3
        status, _, _ = get(run, "/b/flaky?fail=1&code=503", host="plain.example.com")
        assert status == 503  # no annotation: no retry
        status, _, _ = get(run, "/c/flaky?fail=3&code=503")
        assert status == 503  # three tries in all

    run_proxy(tmp_path, compiled(ingress, plain), client)


def test_canary_by_header_cookie_and_weight(tmp_path: Path) -> None:
    main = shop({}, ("/", "Prefix", "one"))
    canary = shop(
        {
            NGINX + "canary": "true",
            NGINX + "canary-by-header": "X-Canary",
            NGINX + "canary-by-cookie": "try_canary",
            NGINX + "canary-weight": "30",
        },
        ("/", "Prefix", "two"),
    )
    canary["metadata"]["name"] = "shop-canary"

    def served_by(headers: dict[str, str]) -> str:
        response, data = request(run_ports[0], "GET", "/", host="shop.example.com", headers=headers)
        assert response.status == 200
        return str(echoed(data)["backend"])

    run_ports: list[int] = []

    def client(run: Running) -> None:
        run_ports.append(run.http_port)
        for _ in range(5):
            assert served_by({"X-Canary": "always"}) == "two"
            assert served_by({"X-Canary": "never", "Cookie": "try_canary=always"}) == "one"
            assert served_by({"Cookie": "a=b; try_canary=always"}) == "two"
            assert served_by({"Cookie": "try_canary=never"}) == "one"
        # the weight: 30 of 100; 300 draws give 90 on average, sd 7.9; 40 to 140 is ±6 sd
        drawn = [served_by({}) for _ in range(300)]
        assert 40 <= drawn.count("two") <= 140

    run_proxy(tmp_path, compiled(main, canary), client)


def test_cors_preflights_are_answered_before_basic_auth(tmp_path: Path) -> None:
    ingress = shop(
        {
            NGINX + "enable-cors": "true",
            NGINX + "cors-allow-origin": "https://app.example",
            NGINX + "auth-type": "basic",
            NGINX + "auth-secret": "users",
        },
        ("/", "Prefix", "one"),
    )
    ann = "Basic " + base64.b64encode(b"ann:secret").decode()
    origin = {"Origin": "https://app.example"}

    def client(run: Running) -> None:
        preflight = {**origin, "Access-Control-Request-Method": "PUT"}
        response, _ = request(
            run.http_port, "OPTIONS", "/", host="shop.example.com", headers=preflight
        )
        assert response.status == 204
        assert response.getheader("access-control-allow-origin") == "https://app.example"
        assert "PUT" in response.getheader("access-control-allow-methods", "")
        response, _ = request(run.http_port, "GET", "/", host="shop.example.com", headers=origin)
        assert response.status == 401
        response, data = request(
            run.http_port,
            "GET",
            "/",
            host="shop.example.com",
            headers={**origin, "Authorization": ann},
        )
        assert (response.status, echoed(data)["backend"]) == (200, "one")
        assert response.getheader("access-control-allow-origin") == "https://app.example"
        response, _ = request(
            run.http_port,
            "OPTIONS",
            "/",
            host="shop.example.com",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "PUT"},
        )
        assert response.status == 403

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return compiled(ingress, users_secret())(ports)

    run_proxy(tmp_path, make, client)
