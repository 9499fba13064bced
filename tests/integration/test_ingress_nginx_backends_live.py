"""ingress-nginx's backend annotations through the running proxy over real sockets:
``backend-protocol: HTTPS`` and ``GRPCS`` to trustme backends, with and without the
``proxy-ssl-*`` settings (docs/migrating-from-ingress-nginx.md, "Backends")."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

import grpc
import trustme

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot_json import snapshot_to_data

from .grpc_backend import GrpcBackend, channel_options
from .manifests import backend as manifest_backend
from .manifests import ingress_class
from .proxy_harness import TIMEOUT, Running, echoed, request, run_proxy

if TYPE_CHECKING:
    from pathlib import Path

NGINX = "nginx.ingress.kubernetes.io/"


def _ingress(name: str, service: str, annotations: dict[str, str]) -> dict[str, Any]:
    """Ingress ``app/name`` sending host ``<name>.example.com`` to ``service``:80."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": "app", "annotations": annotations},
        "spec": {
            "ingressClassName": "coxswain",
            "rules": [
                {
                    "host": f"{name}.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": service, "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ],
        },
    }


def _compiled(*bodies: dict[str, Any], services: tuple[str, ...]) -> Any:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        objects = [ingress_class(), *bodies]
        for name in services:
            objects += manifest_backend(name, ports[name])
        return snapshot_to_data(compile(build_state(objects), SharedPool()).snapshot)

    return make


def test_https_backends_unchecked_by_default_and_verified_with_the_secret(tmp_path: Path) -> None:
    ca, stranger, client_ca = trustme.CA(), trustme.CA(), trustme.CA()
    names: list[str | None] = []  # the SNI each handshake of "named" carried

    def context(leaf: trustme.LeafCert, clients: trustme.CA | None = None) -> ssl.SSLContext:
        made = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        leaf.configure_cert(made)
        if clients is not None:  # a client certificate is required
            clients.configure_trust(made)
            made.verify_mode = ssl.CERT_REQUIRED
            made.sni_callback = lambda _obj, name, _ctx: names.append(name)
        return made

    client_leaf = client_ca.issue_cert("coxswain.example.com")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "backend-tls", "namespace": "app"},
        "type": "Opaque",
        "stringData": {
            "ca.crt": ca.cert_pem.bytes().decode(),
            "tls.crt": "".join(b.bytes().decode() for b in client_leaf.cert_chain_pems),
            "tls.key": client_leaf.private_key_pem.bytes().decode(),
        },
    }
    https = {NGINX + "backend-protocol": "HTTPS"}
    with_secret = {**https, NGINX + "proxy-ssl-secret": "app/backend-tls"}
    verified = {**with_secret, NGINX + "proxy-ssl-verify": "on"}
    ingresses = [
        _ingress("unchecked", "stranger", https),
        _ingress("plain", "stranger", {}),  # HTTP to a TLS backend: refused by the backend
        _ingress(
            "sni",
            "named",
            {
                **verified,
                NGINX + "proxy-ssl-name": "web.internal",
                NGINX + "proxy-ssl-server-name": "on",
            },
        ),
        _ingress("nosni", "named", {**verified, NGINX + "proxy-ssl-name": "web.internal"}),
        _ingress("wrongname", "named", {**verified, NGINX + "proxy-ssl-name": "db.internal"}),
        _ingress("untrusted", "stranger", {**verified, NGINX + "proxy-ssl-name": "x.internal"}),
        _ingress("nocert", "named", https),  # the backend requires a client certificate
    ]

    def client(run: Running) -> None:
        def status(host: str) -> tuple[int, bytes]:
            response, data = request(run.http_port, "GET", "/", host=f"{host}.example.com")
            return response.status, data

        code, data = status("unchecked")
        assert (code, echoed(data)["backend"]) == (200, "stranger")
        assert status("plain")[0] == 502
        code, data = status("sni")
        assert (code, echoed(data)["backend"]) == (200, "named")
        assert names == ["web.internal"]
        code, data = status("nosni")
        assert (code, echoed(data)["backend"]) == (200, "named")
        assert names == ["web.internal", None]
        for host in ("wrongname", "untrusted", "nocert"):
            assert status(host)[0] == 502, host

    run_proxy(
        tmp_path,
        _compiled(*ingresses, secret, services=("stranger", "named")),
        client,
        backends=("stranger", "named"),
        tls_backends={
            "stranger": context(stranger.issue_cert("stranger.test")),
            "named": context(ca.issue_cert("web.internal"), client_ca),
        },
    )


def test_grpcs_speaks_http2_over_tls_to_the_backend(tmp_path: Path) -> None:
    leaf = trustme.CA().issue_cert("grpc.backend.test")  # unchecked: no proxy-ssl-secret
    credentials = grpc.ssl_server_credentials(
        [(leaf.private_key_pem.bytes(), leaf.cert_chain_pems[0].bytes())]
    )
    with GrpcBackend(credentials) as service:

        def make(ports: dict[str, int]) -> dict[str, Any]:
            grpcs = _ingress("grpcs", "grpc", {NGINX + "backend-protocol": "GRPCS"})
            objects = [ingress_class(), grpcs, *manifest_backend("grpc", service.port)]
            return snapshot_to_data(compile(build_state(objects), SharedPool()).snapshot)

        def client(run: Running) -> None:
            channel = grpc.insecure_channel(
                f"127.0.0.1:{run.http_port}", options=channel_options("grpcs.example.com")
            )
            try:
                assert channel.unary_unary("/test.Echo/Unary")(b"x", timeout=TIMEOUT) == b"x"
            finally:
                channel.close()

        run_proxy(tmp_path, make, client, backends=())
