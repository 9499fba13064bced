"""ingress-nginx's ConfigMap keys as Coxswain's global defaults (``--ingress-default-*``),
through the running proxy over real sockets on 127.0.0.1 (docs/migrating-from-ingress-nginx.md,
"Global defaults")."""

from __future__ import annotations

import http.client
import socket
import ssl
from typing import TYPE_CHECKING, Any

import trustme

from coxswain.compile import CompileConfig
from coxswain.compile.config import IngressDefaults

from .manifests import tls_secret
from .nginx_harness import NGINX, compiled, shop
from .proxy_harness import TIMEOUT, Running, request, run_proxy

if TYPE_CHECKING:
    from pathlib import Path

CA = trustme.CA()


def _secured() -> list[dict[str, Any]]:
    """Ingress ``app/shop`` (open to 10.0.0.0/8 only) and ``app/open``, with a certificate
    for their hosts, and its Secret."""
    leaf = CA.issue_cert("shop.example.com", "open.example.com")
    guarded = shop({NGINX + "whitelist-source-range": "10.0.0.0/8"}, ("/", "Prefix", "one"))
    opened = shop({}, ("/", "Prefix", "two"))
    opened["metadata"]["name"] = "open"
    opened["spec"]["rules"][0]["host"] = "open.example.com"
    for ingress in (guarded, opened):
        host = ingress["spec"]["rules"][0]["host"]
        ingress["spec"]["tls"] = [{"hosts": [host], "secretName": "shop-tls"}]
    return [guarded, opened, tls_secret("app", "shop-tls", leaf)]


def _https(run: Running, target: str, host: str = "shop.example.com") -> http.client.HTTPResponse:
    context = ssl.create_default_context()
    CA.configure_trust(context)
    conn = http.client.HTTPSConnection("127.0.0.1", run.https_port, timeout=TIMEOUT)
    conn.sock = context.wrap_socket(
        socket.create_connection(("127.0.0.1", run.https_port), timeout=TIMEOUT),
        server_hostname=host,
    )
    conn.request("GET", target, headers={"Host": host})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def _config(**defaults: Any) -> CompileConfig:
    return CompileConfig(ingress_defaults=IngressDefaults(**defaults))


def test_hsts_default_marks_https_responses_of_hosts_with_a_certificate(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        response = _https(run, "/page", host="open.example.com")
        assert response.status == 200
        assert response.getheader("strict-transport-security") == (
            "max-age=86400; includeSubDomains; preload"
        )
        refused = _https(run, "/")  # the proxy's own answer carries it too
        assert refused.status == 403
        assert refused.getheader("strict-transport-security") == (
            "max-age=86400; includeSubDomains; preload"
        )
        plain, _ = request(run.http_port, "GET", "/page", host="open.example.com")
        assert plain.status == 308  # ssl-redirect, without the header (RFC 6797 §7.2)
        assert plain.getheader("strict-transport-security") is None

    config = _config(hsts=True, hsts_max_age=86400, hsts_preload=True)
    run_proxy(tmp_path, compiled(*_secured(), config=config), client)


def test_without_the_hsts_default_no_response_carries_it(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        response = _https(run, "/page", host="open.example.com")
        assert (response.status, response.getheader("strict-transport-security")) == (200, None)

    run_proxy(tmp_path, compiled(*_secured()), client)
