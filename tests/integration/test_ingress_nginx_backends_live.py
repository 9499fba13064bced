"""ingress-nginx's backend annotations through the running proxy over real sockets:
``backend-protocol: HTTPS`` and ``GRPCS`` to trustme backends, with and without the
``proxy-ssl-*`` settings (docs/migrating-from-ingress-nginx.md, "Backends")."""

from __future__ import annotations

import http.client
import socket
import ssl
from typing import TYPE_CHECKING, Any

import grpc
import trustme

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot_json import snapshot_to_data

from .grpc_backend import GrpcBackend, channel_options
from .h2_client import H2Client
from .manifests import backend as manifest_backend
from .manifests import ingress_class, tls_secret
from .proxy_harness import TIMEOUT, Running, echoed, free_port, request, run_proxy

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


def test_proxy_send_timeout_ends_a_backend_that_stops_taking_the_body_with_504(
    tmp_path: Path,
) -> None:
    body = b"x" * (32 * 1024 * 1024)  # more than the sockets' buffers hold
    with socket.socket() as sink:  # accepts connections (the backlog) and never reads
        sink.bind(("127.0.0.1", 0))
        sink.listen(8)
        timed = _ingress("timed", "sink", {NGINX + "proxy-send-timeout": "0.5"})

        def make(ports: dict[str, int]) -> dict[str, Any]:
            objects = [ingress_class(), timed, *manifest_backend("sink", sink.getsockname()[1])]
            return snapshot_to_data(compile(build_state(objects), SharedPool()).snapshot)

        def client(run: Running) -> None:  # the proxy's own send timeout is 60 s
            response, _ = request(run.http_port, "POST", "/", host="timed.example.com", body=body)
            assert response.status == 504

        run_proxy(tmp_path, make, client, backends=())


def test_proxy_body_size_counts_chunked_and_http2_bodies_and_answers_413_once_passed(
    tmp_path: Path,
) -> None:
    limited = _ingress("limited", "one", {NGINX + "proxy-body-size": "1k"})

    def chunked(size: int) -> bytes:
        piece = b"x" * 256
        chunks = b"".join(b"100\r\n" + piece + b"\r\n" for _ in range(size // 256))
        return chunks + b"0\r\n\r\n"

    def client(run: Running) -> None:
        def post(size: int) -> int:
            response, _ = request(
                run.http_port,
                "POST",
                "/",
                host="limited.example.com",
                headers={"Transfer-Encoding": "chunked"},
                body=chunked(size),
            )
            return response.status

        assert post(1024) == 200  # the limit itself is admitted
        assert post(1280) == 413
        assert post(1024) == 200  # a later request on the path is served
        # HTTP/2 bodies need no content-length (RFC 9113 §8.1.1): their DATA are counted
        h2c = H2Client(run.http_port)
        host = "limited.example.com"
        over = h2c.send("POST", "/", authority=host, body=b"x" * 1280)
        at = h2c.send("POST", "/", authority=host, body=b"x" * 1024)
        over_answer, at_answer = h2c.wait(over, at)
        assert over_answer.status == 413
        assert at_answer.status == 200  # the connection's other streams go on
        assert h2c.get("/", authority=host).status == 200
        h2c.close()

    run_proxy(tmp_path, _compiled(limited, services=("one",)), client, backends=("one",))


def test_service_upstream_sends_to_the_cluster_ip_and_port(tmp_path: Path) -> None:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        service, endpoints = manifest_backend("one", free_port())  # the slice: nobody there
        service["spec"] = {"clusterIP": "127.0.0.1", "ports": [{"port": ports["one"]}]}
        endpoints["ports"] = [{"name": "", "port": free_port()}]
        ingresses = [
            _ingress("virtual", "one", {NGINX + "service-upstream": "true"}),
            _ingress("direct", "one", {}),
        ]
        for made in ingresses:
            made["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] = {
                "number": ports["one"]
            }
        objects = [ingress_class(), *ingresses, service, endpoints]
        return snapshot_to_data(compile(build_state(objects), SharedPool()).snapshot)

    def client(run: Running) -> None:
        response, data = request(run.http_port, "GET", "/", host="virtual.example.com")
        assert (response.status, echoed(data)["backend"]) == (200, "one")
        response, _ = request(run.http_port, "GET", "/", host="direct.example.com")
        assert response.status == 502  # the endpoints refuse the connection

    run_proxy(tmp_path, make, client, backends=("one",))


def _https_get(port: int, server_name: str, trust: trustme.CA) -> tuple[int, bytes, str]:
    """GET / over TLS with SNI ``server_name``, trusting ``trust``: the status, the body and
    the first DNS name of the certificate served."""
    context = ssl.create_default_context()
    trust.configure_trust(context)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        served = tls.getpeercert()
        tls.sendall(f"GET / HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n".encode())
        response = http.client.HTTPResponse(tls)  # type: ignore[arg-type]
        response.begin()
        data = response.read()
    names = [value for kind, value in served.get("subjectAltName", ()) if kind == "DNS"]
    return response.status, data, str(names[0])


def test_ssl_passthrough_hands_the_connection_to_the_backend_by_sni(tmp_path: Path) -> None:
    front, back = trustme.CA(), trustme.CA()
    front_leaf = front.issue_cert("shop.example.com")
    backend_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    back.issue_cert("pass.example.com").configure_cert(backend_context)
    shop_tls = tls_secret("app", "shop-tls", front_leaf)
    shop = _ingress("shop", "one", {})
    shop["spec"]["tls"] = [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]
    passed = _ingress("pass", "secure", {NGINX + "ssl-passthrough": "true"})

    def client(run: Running) -> None:
        status, data, name = _https_get(run.https_port, "pass.example.com", back)
        assert (status, echoed(data)["backend"], name) == (200, "secure", "pass.example.com")
        status, data, name = _https_get(run.https_port, "shop.example.com", front)
        assert (status, echoed(data)["backend"], name) == (200, "one", "shop.example.com")
        assert len(run.received["secure"]) == 1
        with socket.create_connection(("127.0.0.1", run.https_port), timeout=TIMEOUT) as raw:
            raw.sendall(b"GET / HTTP/1.1\r\nHost: pass.example.com\r\n\r\n")
            assert raw.recv(100) == b""  # no ClientHello: closed, nothing passed through
        assert len(run.received["secure"]) == 1

    run_proxy(
        tmp_path,
        _compiled(shop, passed, shop_tls, services=("one", "secure")),
        client,
        backends=("one", "secure"),
        tls_backends={"secure": backend_context},
    )
