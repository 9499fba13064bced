"""Server TLS contexts: SNI picks the certificate, client certificates are checked.

Real TLS handshakes run in memory (two ssl.MemoryBIO pairs), with certificates from trustme.
"""

from __future__ import annotations

import gc
import ssl
import weakref
from typing import Any

import pytest
import trustme

from coxswain.compile import SharedPool, build_state, compile
from coxswain.route import build_table
from coxswain.shell.dataplane.tls import TLSContexts
from coxswain.shell.dataplane.tls_openssl import OpenSSLContext

CA = trustme.CA()
FOO = CA.create_child_ca().issue_cert("foo.example.com")  # clients trust CA: the chain is served
WILD = CA.issue_cert("*.example.com")
CLIENT_CA = trustme.CA()
CLIENT = CLIENT_CA.issue_cert("client.example.com")
STRANGER = trustme.CA().issue_cert("client.example.com")


def _secret(name: str, cert: trustme.LeafCert) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "app"},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": "".join(b.bytes().decode() for b in cert.cert_chain_pems),
            "tls.key": cert.private_key_pem.bytes().decode(),
        },
    }


def _tables(mode: str | None = None):
    gateway: dict[str, Any] = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": "app"},
        "spec": {
            "gatewayClassName": "coxswain",
            "listeners": [
                {
                    "name": "foo",
                    "port": 443,
                    "protocol": "HTTPS",
                    "hostname": "foo.example.com",
                    "tls": {"certificateRefs": [{"name": "foo"}]},
                },
                {
                    "name": "wild",
                    "port": 443,
                    "protocol": "HTTPS",
                    "hostname": "*.example.com",
                    "tls": {"certificateRefs": [{"name": "wild"}]},
                },
            ],
        },
    }
    if mode is not None:
        gateway["spec"]["tls"] = {
            "frontend": {
                "default": {
                    "validation": {
                        "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "ca"}],
                        "mode": mode,
                    }
                }
            }
        }
    bodies = [
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": "coxswain"},
            "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
        },
        gateway,
        _secret("foo", FOO),
        _secret("wild", WILD),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ca", "namespace": "app"},
            "data": {"ca.crt": CLIENT_CA.cert_pem.bytes().decode()},
        },
    ]
    snapshot = compile(build_state(bodies), SharedPool()).snapshot
    port = next(iter(snapshot.gateways))
    return TLSContexts(build_table(snapshot)), port


def _handshake(
    server_context: ssl.SSLContext, name: str, client_cert: trustme.LeafCert | None = None
) -> tuple[str, str]:
    """Run a TLS handshake in memory; returns the certificate's common name and ALPN."""
    client_context = ssl.create_default_context()
    CA.configure_trust(client_context)
    if client_cert is not None:
        client_cert.configure_cert(client_context)
    client_context.set_alpn_protocols(["http/1.1"])
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_context.wrap_bio(c_in, c_out, server_hostname=name)
    server = server_context.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for side, obj in (("client", client), ("server", server)):
            if not done[side]:
                try:
                    obj.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            # TLS 1.3: the server only sees a refused client certificate on the first read.
            client.write(b"x")
            s_in.write(c_out.read())
            server.read(1)
            break
    peer = client.getpeercert()
    _HANDSHAKES.append(server)
    return peer["subjectAltName"][0][1], client.selected_alpn_protocol() or ""


_HANDSHAKES: list[ssl.SSLObject] = []


def test_sni_picks_the_listener_certificate_exact_then_wildcard():
    contexts, port = _tables()
    front = contexts.front(port)
    assert _handshake(front, "foo.example.com") == ("foo.example.com", "http/1.1")
    assert _handshake(front, "bar.example.com")[0] == "*.example.com"
    # A Gateway wildcard listener takes deeper names too (clients may still refuse them).
    assert contexts._table.certificate(port, "a.b.example.com").secret == "app/wild"


@pytest.mark.parametrize("mode", [None, "AllowInsecureFallback"])
def test_an_unknown_name_is_refused(mode: str | None):
    contexts, port = _tables(mode)
    with pytest.raises(ssl.SSLError):
        _handshake(contexts.front(port), "other.test")


def _admitted(contexts: TLSContexts, port: int, name: str) -> bool:
    server = _HANDSHAKES[-1]
    der = server.getpeercert(binary_form=True)
    return contexts.admits(port, name, der, der is not None and server.getpeercert() != {})


def test_allow_valid_only_admits_only_a_client_certificate_from_the_bundle():
    contexts, port = _tables("AllowValidOnly")
    front = contexts.front(port)
    assert _handshake(front, "foo.example.com", CLIENT)[0] == "foo.example.com"
    assert _admitted(contexts, port, "foo.example.com")
    _handshake(front, "foo.example.com")  # no certificate: the handshake completes...
    assert not _admitted(contexts, port, "foo.example.com")  # ...and the listener refuses
    with pytest.raises(ssl.SSLError):
        _handshake(front, "foo.example.com", STRANGER)


def test_allow_valid_only_refuses_a_certificate_the_handshake_did_not_verify():
    contexts, port = _tables("AllowValidOnly")
    _handshake(contexts.front(port), "foo.example.com", CLIENT)
    der = _HANDSHAKES[-1].getpeercert(binary_form=True)
    assert contexts.admits(port, "foo.example.com", der, True)
    assert not contexts.admits(port, "foo.example.com", der, False)


def test_allow_insecure_fallback_admits_a_client_without_certificate():
    contexts, port = _tables("AllowInsecureFallback")
    assert _handshake(contexts.front(port), "foo.example.com")[0] == "foo.example.com"
    assert _HANDSHAKES[-1].getpeercert() is None
    assert _admitted(contexts, port, "foo.example.com")


def test_allow_insecure_fallback_admits_a_certificate_no_bundle_trusts_and_says_so():
    contexts, port = _tables("AllowInsecureFallback")
    front = contexts.front(port)
    assert _handshake(front, "foo.example.com", STRANGER)[0] == "foo.example.com"
    assert _HANDSHAKES[-1].getpeercert() == {}  # received, not verified
    stranger = ssl.PEM_cert_to_DER_cert(STRANGER.cert_chain_pems[0].bytes().decode())
    assert _HANDSHAKES[-1].getpeercert(binary_form=True) == stranger
    assert _admitted(contexts, port, "foo.example.com")
    _handshake(front, "bar.example.com", CLIENT)  # the wildcard listener, a trusted client
    assert _HANDSHAKES[-1].getpeercert()  # verified: a non-empty dict
    assert _admitted(contexts, port, "bar.example.com")


def test_only_ports_that_fall_back_leave_the_ssl_module():
    for mode, native in ((None, False), ("AllowValidOnly", False), ("AllowInsecureFallback", True)):
        contexts, port = _tables(mode)
        front, server = _served(contexts, port, "foo.example.com")
        assert isinstance(front, OpenSSLContext) is native
        assert isinstance(server.context, OpenSSLContext) is native
        assert server.context is not front


def test_a_port_without_validation_admits_everyone():
    contexts, port = _tables()
    _handshake(contexts.front(port), "foo.example.com")
    assert _admitted(contexts, port, "foo.example.com")


def test_contexts_are_shared_between_names_with_the_same_certificate():
    contexts, port = _tables()
    front = contexts.front(port)
    _handshake(front, "bar.example.com")
    _handshake(front, "baz.example.com")
    assert len(contexts._by_material) == 1


def _served(contexts: TLSContexts, port: int, name: str) -> tuple[ssl.SSLContext, ssl.SSLObject]:
    """The front context of ``port`` and the handshake's server side, whose context is the one
    the SNI callback chose for ``name``."""
    front = contexts.front(port)
    _handshake(front, name)
    return front, _HANDSHAKES[-1]


def test_contexts_take_tls_1_2_or_later_offer_http_1_1_and_ask_no_certificate_by_default():
    contexts, port = _tables()
    front, server = _served(contexts, port, "foo.example.com")
    assert server.context is not front
    assert server.selected_alpn_protocol() == "http/1.1"
    for context in (front, server.context):
        assert context.minimum_version is ssl.TLSVersion.TLSv1_2  # RFC 8996
        assert context.verify_mode is ssl.CERT_NONE
        assert context.get_ca_certs() == []


def test_contexts_of_a_port_with_validation_ask_for_a_certificate_from_its_bundles():
    contexts, port = _tables("AllowValidOnly")
    front, server = _served(contexts, port, "foo.example.com")
    bundle = [ssl.PEM_cert_to_DER_cert(CLIENT_CA.cert_pem.bytes().decode())]
    for context in (front, server.context):
        assert context.minimum_version is ssl.TLSVersion.TLSv1_2
        assert context.verify_mode is ssl.CERT_OPTIONAL
        assert context.get_ca_certs(binary_form=True) == bundle


def test_a_fallback_connection_is_freed_without_the_cycle_collector():
    contexts, port = _tables("AllowInsecureFallback")
    _handshake(contexts.front(port), "foo.example.com", STRANGER)
    server = _HANDSHAKES.pop()
    native = weakref.ref(server._connection)
    gc.disable()
    try:
        del server
        assert native() is None
    finally:
        gc.enable()
