"""Frontend client-certificate validation that falls back (GEP-91 ``AllowInsecureFallback``), over
real sockets: such a port handshakes on pyOpenSSL (``shell/dataplane/tls_openssl.py``), which
must admit a certificate no bundle trusts while keeping SNI, ALPN and the refusals of
``AllowValidOnly`` exactly as on the ``ssl`` path.

One Gateway port, two HTTPS listeners: ``a.example.com`` falls back, ``b.example.com`` admits
valid certificates only (the same port's bundle trusts ``CLIENT_CA``).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .h2_client import H2Client
from .proxy_harness import TIMEOUT, backend, gateway_rule, run_proxy, snapshot

if TYPE_CHECKING:
    from collections.abc import Callable

    from .proxy_harness import Running

    Client = Callable[[ssl.SSLContext], None] | None

SERVER_CA = trustme.CA()
CLIENT_CA = trustme.CA()
TRUSTED = CLIENT_CA.issue_cert("client.example.com").configure_cert
STRANGER = trustme.CA().issue_cert("client.example.com").configure_cert  # no bundle trusts it


def _server_only(context: ssl.SSLContext) -> None:
    """A certificate issued by ``CLIENT_CA`` for server authentication only: its issuer and
    validity are right, but chain verification refuses it as a client's (RFC 5280 §4.2.1.12)."""
    authority = x509.load_pem_x509_certificate(CLIENT_CA.cert_pem.bytes())
    signer = serialization.load_pem_private_key(CLIENT_CA.private_key_pem.bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client.example.com")])
    leaf = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(authority.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "client.pem"
        path.write_bytes(
            leaf.public_bytes(serialization.Encoding.PEM)
            + key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context.load_cert_chain(path)


LISTENERS = {
    "a.example.com": ("one", "AllowInsecureFallback"),
    "b.example.com": ("two", "AllowValidOnly"),
}


def _pem(leaf: trustme.LeafCert) -> dict[str, str]:
    return {
        "cert_chain": "".join(b.bytes().decode() for b in leaf.cert_chain_pems),
        "private_key": leaf.private_key_pem.bytes().decode(),
        "secret": "app/tls",
    }


def _make(ports: dict[str, int]) -> dict[str, Any]:
    port = str(ports["gateway"])
    data = snapshot(endpoints={"one": [ports["one"]], "two": [ports["two"]]})
    data["gateways"] = {port: {}}
    data["tls"] = {port: {}}
    data["client_certs"] = {port: {}}
    for host, (service, mode) in LISTENERS.items():
        data["gateways"][port][host] = {
            "gateway": "app/gw",
            "listener": host.split(".")[0],
            "port": 443,
            "protocol": "HTTPS",
            "hostname": host,
            "hosts": {host: [gateway_rule([backend(service)])]},
        }
        data["tls"][port][host] = _pem(SERVER_CA.issue_cert(host))
        data["client_certs"][port][host] = {
            "ca_bundle": CLIENT_CA.cert_pem.bytes().decode(),
            "mode": mode,
        }
        data["listener_health"].append(
            {
                "gateway": "app/gw",
                "listener": host.split(".")[0],
                "port": 443,
                "target_port": ports["gateway"],
                "protocol": "HTTPS",
                "hostname": host,
                "attached_routes": 1,
                "ready": True,
                "reason": "Ready",
            }
        )
    return data


def _context(client: Client, alpn: list[str]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    SERVER_CA.configure_trust(context)
    if client is not None:
        client(context)
    context.set_alpn_protocols(alpn)
    return context


def _connect(port: int, host: str, context: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    return context.wrap_socket(raw, server_hostname=host)


def _get(port: int, host: str, client: Client, alpn: str = "http/1.1") -> tuple[int, str, str]:
    """Status, the backend that answered, and the ALPN protocol; the status is 0 when the
    proxy closed the connection instead of answering."""
    tls = _connect(port, host, _context(client, [alpn]))
    assert tls.selected_alpn_protocol() == alpn
    if alpn == "h2":
        h2c = H2Client(port, sock=tls)
        response = h2c.get("/", authority=host)
        h2c.close()
        return response.status, json.loads(response.body)["backend"], alpn
    conn = http.client.HTTPSConnection(host, port, timeout=TIMEOUT)
    conn.sock = tls
    try:
        conn.request("GET", "/", headers={"Host": host})
        response = conn.getresponse()
        return response.status, json.loads(response.read())["backend"], alpn
    except (OSError, http.client.HTTPException):
        return 0, "", alpn  # TLS 1.3: a refused client learns it on its first read
    finally:
        conn.close()


def _served_name(port: int, host: str) -> str:
    with _connect(port, host, _context(None, ["http/1.1"])) as tls:
        peer = tls.getpeercert()
    assert peer is not None
    return str(dict(peer["subjectAltName"])["DNS"])


def test_fallback_admits_trusted_untrusted_and_absent_certificates_over_both_protocols(
    tmp_path: Path,
) -> None:
    def client(run: Running) -> None:
        port = run.gateway_port
        for certificate in (TRUSTED, STRANGER, _server_only, None):
            for alpn in ("http/1.1", "h2"):
                assert _get(port, "a.example.com", certificate, alpn) == (200, "one", alpn)

    run_proxy(tmp_path, _make, client)


def test_valid_only_on_the_same_port_still_refuses_what_did_not_verify(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        port = run.gateway_port
        assert _get(port, "b.example.com", TRUSTED) == (200, "two", "http/1.1")
        assert _get(port, "b.example.com", STRANGER)[0] == 0
        assert _get(port, "b.example.com", _server_only)[0] == 0  # issued right, not verified
        assert _get(port, "b.example.com", None)[0] == 0

    run_proxy(tmp_path, _make, client)


def test_sni_picks_each_listener_certificate_and_refuses_an_unknown_name(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        port = run.gateway_port
        assert _served_name(port, "a.example.com") == "a.example.com"
        assert _served_name(port, "b.example.com") == "b.example.com"
        try:
            _served_name(port, "c.example.com")
            refused = False
        except (ssl.SSLError, OSError):
            refused = True
        assert refused

    run_proxy(tmp_path, _make, client)


def test_garbage_and_a_stalled_handshake_close_only_their_own_connection(
    tmp_path: Path,
) -> None:
    def client(run: Running) -> None:
        port = run.gateway_port
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as garbage:
            garbage.sendall(b"\x16\x03\x01\x00\x05hello" + b"\xff" * 4096)
            _read_to_end(garbage)  # ends, closed or reset (a hang raises after TIMEOUT)
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as stalled:
            stalled.sendall(
                b"\x16\x03\x01\x02\x00\x01"
            )  # a ClientHello's first bytes, then nothing
            assert _read_to_end(stalled) == b""  # the handshake timeout closes it
        assert _get(port, "a.example.com", STRANGER) == (200, "one", "http/1.1")

    run_proxy(tmp_path, _make, client, handshake_timeout=0.5)


def _read_to_end(sock: socket.socket) -> bytes | None:
    """What the proxy sent until it closed (None if it reset the connection)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        return None
    return data
