"""ingress-nginx's session-cookie annotations through the running proxy over real sockets on
127.0.0.1 (docs/migrating-from-ingress-nginx.md, "Session affinity")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from .nginx_harness import NGINX, compiled, shop, spread_service
from .proxy_harness import Running, free_port, request, run_proxy

if TYPE_CHECKING:
    from pathlib import Path

OLD_CHROME = "Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/58.0.3029 Safari/537.36"
NEW_CHROME = "Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/120.0.0 Safari/537.36"


def test_conditional_samesite_none_spares_the_browsers_that_mishandle_it(tmp_path: Path) -> None:
    sticky = shop(
        {
            NGINX + "affinity": "cookie",
            NGINX + "session-cookie-samesite": "None",
            NGINX + "session-cookie-conditional-samesite-none": "true",
        },
        ("/", "Prefix", "one"),
    )

    def cookie(run: Running, agent: str) -> str:
        response, _ = request(
            run.http_port, "GET", "/", host="shop.example.com", headers={"User-Agent": agent}
        )
        assert response.status == 200
        return str(response.getheader("set-cookie"))

    def client(run: Running) -> None:
        assert cookie(run, NEW_CHROME).endswith("; Path=/; HttpOnly; SameSite=None")
        assert cookie(run, OLD_CHROME).endswith("; Path=/; HttpOnly")

    run_proxy(tmp_path, compiled(sticky), client)


@pytest.mark.parametrize("mode", ["balanced", "persistent"])
def test_change_on_failure_moves_a_client_off_an_endpoint_that_refuses(
    tmp_path: Path, mode: str
) -> None:
    annotations = {NGINX + "affinity": "cookie", NGINX + "affinity-mode": mode}
    moving = shop(
        {**annotations, NGINX + "session-cookie-change-on-failure": "true"},
        ("/", "Prefix", "flaky"),
    )
    staying = shop(annotations, ("/", "Prefix", "flaky"))
    staying["metadata"]["name"] = "staying"
    staying["spec"]["rules"][0]["host"] = "stay.example.com"
    dead = free_port()  # nothing listens there: connecting is refused

    def make(ports: dict[str, int]) -> dict[str, Any]:
        flaky = spread_service("flaky", {"one": ports["one"], "dead": dead})
        return compiled(moving, staying, *flaky)(ports)

    def get(run: Running, host: str, cookie: str | None = None) -> tuple[int, str | None]:
        headers = {} if cookie is None else {"Cookie": cookie}
        response, _ = request(run.http_port, "GET", "/", host=host, headers=headers)
        return response.status, response.getheader("set-cookie")

    def client(run: Running) -> None:
        statuses = [get(run, "stay.example.com")[0] for _ in range(30)]
        assert set(statuses) == {200, 502}  # new clients are placed on both endpoints
        for _ in range(30):
            status, placed = get(run, "shop.example.com")
            assert status == 200  # the refused ones were passed to the live endpoint
            assert placed is not None
            value = placed.split(";")[0]
            # the cookie names the live endpoint: without failover too, it is served there
            assert get(run, "stay.example.com", value) == (200, None)

    run_proxy(tmp_path, make, client)
