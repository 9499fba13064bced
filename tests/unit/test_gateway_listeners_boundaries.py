"""compile.gateway.listeners: a certificate reference that resolves, as returned exactly."""

from __future__ import annotations

import base64

import trustme

from coxswain.compile.gateway.listeners import resolve_certificate
from coxswain.compile.gateway.refgrants import index_grants
from coxswain.compile.model.gateway_objects import ObjectRef
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.state import build_state
from coxswain.compile.snapshot import Certificate


def test_a_certificate_in_the_owners_namespace_resolves_with_no_message() -> None:
    leaf = trustme.CA().issue_cert("a.example")
    chain, key = leaf.cert_chain_pems[0].bytes(), leaf.private_key_pem.bytes()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "cert", "namespace": "app"},
        "type": "kubernetes.io/tls",
        "data": {
            "tls.crt": base64.b64encode(chain).decode(),
            "tls.key": base64.b64encode(key).decode(),
        },
    }
    state = build_state([secret])
    read: set[ObjectKey] = set()
    found = resolve_certificate(
        ObjectKey("Gateway", "app", "gw"),
        ObjectRef(group="", kind="Secret", name="cert"),
        state,
        index_grants(state),
        read,
    )
    assert found == (
        "ResolvedRefs",
        "",
        Certificate(chain_pem=chain.decode(), key_pem=key.decode(), secret="app/cert"),
    )
    assert read == {ObjectKey("Secret", "app", "cert")}
