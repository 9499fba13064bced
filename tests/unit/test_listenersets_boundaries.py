"""compile.gateway.listenersets: a ListenerSet's ``Accepted`` condition, exactly (GEP-1713)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import trustme

from coxswain.compile import SharedPool, build_state, compile, status

GW = "gateway.networking.k8s.io/v1"
CLASS = {
    "apiVersion": GW,
    "kind": "GatewayClass",
    "metadata": {"name": "coxswain"},
    "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
}


def _accepted(
    namespaces_from: str,
    listeners: list[dict[str, Any]],
    gateway_listeners: tuple[dict[str, Any], ...] = (
        {"name": "http", "port": 80, "protocol": "HTTP"},
    ),
) -> dict[str, Any]:
    """The ListenerSet's Accepted condition, without its transition time."""
    state = build_state(
        [
            CLASS,
            {
                "apiVersion": GW,
                "kind": "Gateway",
                "metadata": {"name": "web", "namespace": "app"},
                "spec": {
                    "gatewayClassName": "coxswain",
                    "allowedListeners": {"namespaces": {"from": namespaces_from}},
                    "listeners": list(gateway_listeners),
                },
            },
            {
                "apiVersion": GW,
                "kind": "ListenerSet",
                "metadata": {"name": "more", "namespace": "app"},
                "spec": {"parentRef": {"name": "web"}, "listeners": listeners},
            },
        ]
    )
    [found] = [s for s in status(state) if s.kind == "ListenerSet"]
    [accepted] = [c for c in json.loads(found.body)["conditions"] if c["type"] == "Accepted"]
    return {k: accepted[k] for k in ("status", "reason", "message")}


def _listener(name: str, protocol: str = "HTTP") -> dict[str, Any]:
    return {"name": name, "port": 80, "protocol": protocol, "hostname": f"{name}.example"}


@pytest.mark.parametrize(
    ("namespaces_from", "listeners", "accepted"),
    [
        (
            "Elsewhere",
            [_listener("a")],
            {
                "status": "False",
                "reason": "NotAllowed",
                "message": "Gateway app/web has allowedListeners.namespaces.from 'Elsewhere', "
                "which admits none (spec.allowedListeners)",
            },
        ),
        (
            "Same",
            [],
            {"status": "False", "reason": "ListenersNotValid", "message": "no listener"},
        ),
        (
            "Same",
            [_listener("a", "FTP"), _listener("b", "FTP"), _listener("c")],
            {
                "status": "True",
                "reason": "ListenersNotValid",
                "message": "listeners not valid: a, b",
            },
        ),
    ],
)
def test_a_listener_set_is_refused_or_accepted_with_the_reason_why(
    namespaces_from: str, listeners: list[dict[str, Any]], accepted: dict[str, Any]
) -> None:
    assert _accepted(namespaces_from, listeners) == accepted


def test_a_gateway_listener_refused_for_its_own_reason_claims_no_port() -> None:
    refused = {"name": "ftp", "port": 8080, "protocol": "FTP"}
    listener = {"name": "a", "port": 8080, "protocol": "HTTP", "hostname": "a.example"}
    assert _accepted("Same", [listener], (refused,)) == {
        "status": "True",
        "reason": "Accepted",
        "message": "",
    }


def test_a_frontend_validation_problem_on_a_listener_set_names_the_gateway() -> None:
    leaf = trustme.CA().issue_cert("a.example")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "cert", "namespace": "app"},
        "type": "kubernetes.io/tls",
        "data": {
            "tls.crt": base64.b64encode(leaf.cert_chain_pems[0].bytes()).decode(),
            "tls.key": base64.b64encode(leaf.private_key_pem.bytes()).decode(),
        },
    }
    ca = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ca", "namespace": "app"},
        "data": {"ca.crt": trustme.CA().cert_pem.bytes().decode()},
    }
    https = {"port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "cert"}]}}
    refs = [
        {"group": "", "kind": "Pod", "name": "x"},
        {"group": "", "kind": "Secret", "name": "missing"},
        {"group": "", "kind": "ConfigMap", "name": "ca"},
    ]
    gateway = {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": "web", "namespace": "app"},
        "spec": {
            "gatewayClassName": "coxswain",
            "allowedListeners": {"namespaces": {"from": "Same"}},
            "tls": {"frontend": {"default": {"validation": {"caCertificateRefs": refs}}}},
            "listeners": [{"name": "https", "hostname": "g.example", **https}],
        },
    }
    listener_set = {
        "apiVersion": GW,
        "kind": "ListenerSet",
        "metadata": {"name": "more", "namespace": "app"},
        "spec": {
            "parentRef": {"name": "web"},
            "listeners": [{"name": "a", "hostname": "a.example", **https}],
        },
    }
    state = build_state([CLASS, gateway, listener_set, secret, ca])
    found = {s.kind: json.loads(s.body) for s in status(state)}

    def conditions(kind: str) -> dict[str, tuple[str, str, str]]:
        [listener] = found[kind]["listeners"]
        return {c["type"]: (c["status"], c["reason"], c["message"]) for c in listener["conditions"]}

    why = "Pod app/x: not a ConfigMap or Secret"
    assert conditions("Gateway")["ResolvedRefs"] == ("False", "InvalidCACertificateKind", why)
    assert conditions("Gateway")["Accepted"][:2] == ("True", "Accepted")
    assert conditions("ListenerSet")["ResolvedRefs"] == (
        "False",
        "InvalidCACertificateKind",
        f"Gateway app/web spec.tls.frontend.default.validation: {why}",
    )
    fields = {
        (d.key.kind, d.field)
        for d in compile(state, SharedPool()).diagnostics
        if d.key is not None and d.reason == "InvalidCACertificateKind"
    }
    assert fields == {
        ("Gateway", "spec.tls.frontend.default.validation.caCertificateRefs[0]"),
        ("ListenerSet", "spec.listeners[0]"),
    }
