"""``compile.ingress.backend_settings.read_backend_settings`` at its edges
(docs/migrating-from-ingress-nginx.md, "Backends"): a protocol Coxswain does not speak is not
spoken over TLS, booleans read whatever their case, and the exact finding for a proxy-ssl
Secret without ``ca.crt``."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import pytest
import trustme

from coxswain.compile.ingress.backend_settings import BackendSettings, read_backend_settings
from coxswain.compile.snapshot import BackendProtocol
from tests.unit.ingress_world import annotated

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.keys import ObjectKey


def settings(
    annotations: dict[str, str], *extra: dict[str, object]
) -> tuple[BackendSettings, list[str]]:
    only, state = annotated(annotations, *extra)
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    return read_backend_settings(only, state.secrets, found, read), [d.message for d in found]


@pytest.mark.parametrize("protocol", [None, "FCGI", "bogus"])
def test_a_protocol_not_spoken_is_plain_http1(protocol):
    read, _ = settings({} if protocol is None else {"backend-protocol": protocol})
    assert (read.protocol, read.tls) == (BackendProtocol.HTTP1, None)


@pytest.mark.parametrize(("written", "on"), [("True", True), ("FALSE", False), ("false", False)])
def test_booleans_whatever_their_case(written, on):
    read, found = settings({"service-upstream": written, "ssl-passthrough": written})
    assert (read.cluster_ip, read.passthrough, found) == (on, on, [])


def test_a_proxy_ssl_secret_without_ca_crt_leaves_the_certificate_unchecked_saying_so():
    pair = trustme.CA().issue_cert("backend.example")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "client", "namespace": "apps"},
        "type": "kubernetes.io/tls",
        "data": {
            "tls.crt": base64.b64encode(pair.cert_chain_pems[0].bytes()).decode(),
            "tls.key": base64.b64encode(pair.private_key_pem.bytes()).decode(),
        },
    }
    read, found = settings({"backend-protocol": "HTTPS", "proxy-ssl-secret": "client"}, secret)
    assert read.tls is not None
    assert (read.tls.verify, read.tls.sni) == (False, False)
    assert found == [
        "Secret apps/client has no ca.crt, so the proxy-ssl settings are not applied (as in "
        "ingress-nginx): the backend's certificate is taken unchecked"
    ]
