"""ingress-nginx's session-cookie annotations through the running proxy over real sockets on
127.0.0.1 (docs/migrating-from-ingress-nginx.md, "Session affinity")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .nginx_harness import NGINX, compiled, shop
from .proxy_harness import Running, request, run_proxy

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
