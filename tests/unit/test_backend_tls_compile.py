"""BackendTLSPolicy in the compiler (GEP-1897): decode edges, validity, and the client
certificate each Gateway's rules carry."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import trustme

from coxswain.compile import SharedPool, compile, status
from coxswain.compile.model.state import build_state

if TYPE_CHECKING:
    from coxswain.compile.snapshot import Backend

CA = trustme.CA()
CA_PEM = CA.cert_pem.bytes().decode()


def _meta(kind: str, name: str, api: str = "gateway.networking.k8s.io/v1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "app"}}


def _gateway(name: str, port: int, client_secret: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "gatewayClassName": "coxswain",
        "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
    }
    if client_secret is not None:
        spec["tls"] = {"backend": {"clientCertificateRef": {"name": client_secret}}}
    return {**_meta("Gateway", name), "spec": spec}


def _client_secret(name: str) -> dict[str, Any]:
    leaf = CA.issue_cert(f"{name}.example.com")
    return {
        **_meta("Secret", name, "v1"),
        "type": "kubernetes.io/tls",
        "data": {
            "tls.crt": base64.b64encode(leaf.cert_chain_pems[0].bytes()).decode(),
            "tls.key": base64.b64encode(leaf.private_key_pem.bytes()).decode(),
        },
    }


def _policy(name: str, validation: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        **_meta("BackendTLSPolicy", name),
        "spec": {
            "targetRefs": [{"group": "", "kind": "Service", "name": "web"}],
            "validation": {"hostname": "web.example.com", **validation},
            **spec,
        },
    }


def _world(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": "coxswain"},
            "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
        },
        {
            **_meta("Service", "web", "v1"),
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]},
        },
        {**_meta("ConfigMap", "ca", "v1"), "data": {"ca.crt": CA_PEM}},
        {
            **_meta("HTTPRoute", "r"),
            "spec": {
                "parentRefs": [{"name": "one"}, {"name": "two"}],
                "rules": [{"backendRefs": [{"name": "web", "port": 443}]}],
            },
        },
        *extra,
    ]


def _backends(objects: list[dict[str, Any]]) -> dict[str, Backend]:
    """The backend of each Gateway's table, by Gateway name."""
    snapshot = compile(build_state(objects), SharedPool()).snapshot
    return {
        table.gateway.split("/")[1]: rule.action.backends[0]
        for tables in snapshot.gateways.values()
        for table in tables.values()
        for rules in table.hosts.values()
        for rule in rules
    }


def _conditions(objects: list[dict[str, Any]], name: str) -> list[tuple[str, str, str]]:
    for item in status(build_state(objects)):
        if (item.kind, item.name) == ("BackendTLSPolicy", name):
            [ancestor, *_] = json.loads(item.body)["ancestors"]
            return [(c["type"], c["status"], c["reason"]) for c in ancestor["conditions"]]
    raise AssertionError(f"no status for {name}")


def test_each_gateway_presents_its_own_client_certificate() -> None:
    objects = _world(
        _gateway("one", 80, "one-client"),
        _gateway("two", 81, None),
        _client_secret("one-client"),
        _policy("p", {"caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "ca"}]}),
    )
    backends = _backends(objects)
    one, two = backends["one"].tls, backends["two"].tls
    assert one is not None
    assert two is not None
    assert one.client_certificate is not None
    assert one.client_certificate.secret == "app/one-client"
    assert two.client_certificate is None
    assert (one.server_name, one.ca_pem) == ("web.example.com", CA_PEM)


def test_system_trust_is_accepted_and_other_well_known_sets_are_refused_closed() -> None:
    system = _world(_gateway("one", 80, None), _policy("p", {"wellKnownCACertificates": "System"}))
    tls = _backends(system)["one"].tls
    assert tls is not None
    assert (tls.ca_pem, tls.problem) == (None, None)
    assert ("Accepted", "True", "Accepted") in _conditions(system, "p")
    other = _world(
        _gateway("one", 80, None), _policy("p", {"wellKnownCACertificates": "example.com/set"})
    )
    backend = _backends(other)["one"]
    assert not backend.valid  # answered 500, never sent plaintext
    assert ("Accepted", "False", "Invalid") in _conditions(other, "p")


def test_a_malformed_subject_alt_name_refuses_the_policy() -> None:
    objects = _world(
        _gateway("one", 80, None),
        _policy(
            "p",
            {
                "wellKnownCACertificates": "System",
                "subjectAltNames": [{"type": "URI", "hostname": "web.example.com"}],
            },
        ),
    )
    assert not _backends(objects)["one"].valid
    assert ("Accepted", "False", "Invalid") in _conditions(objects, "p")


def test_a_section_name_takes_its_port_before_a_whole_service_policy() -> None:
    objects = _world(
        _gateway("one", 80, None),
        _policy("whole", {"wellKnownCACertificates": "System"}),
        _policy(
            "port",
            {
                "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "ca"}],
                "hostname": "port.example.com",
            },
            targetRefs=[{"group": "", "kind": "Service", "name": "web", "sectionName": "https"}],
        ),
    )
    tls = _backends(objects)["one"].tls
    assert tls is not None
    assert (tls.policy, tls.server_name) == ("app/port", "port.example.com")
    assert ("Accepted", "True", "Accepted") in _conditions(objects, "whole")


def test_a_target_of_another_kind_is_a_warning_and_secures_nothing() -> None:
    objects = _world(
        _gateway("one", 80, None),
        _policy(
            "p",
            {"wellKnownCACertificates": "System"},
            targetRefs=[{"group": "apps", "kind": "Deployment", "name": "web"}],
        ),
    )
    assert _backends(objects)["one"].tls is None
    found = compile(build_state(objects), SharedPool()).diagnostics
    assert any(d.reason == "InvalidKind" and d.field == "spec.targetRefs[0]" for d in found)
    assert ("app/p", "spec.targetRefs[0]", "InvalidKind") in _findings(objects)  # its policy


def test_a_policy_without_a_route_has_no_ancestor() -> None:
    objects = _world(_policy("p", {"wellKnownCACertificates": "System"}))
    [item] = [s for s in status(build_state(objects)) if s.kind == "BackendTLSPolicy"]
    assert json.loads(item.body) == {"ancestors": []}


# --- exact values at the edges (survivors of tools/mutate) --------------------------------------

OTHER_CA_PEM = trustme.CA().cert_pem.bytes().decode()
CA_REF = {"group": "", "kind": "ConfigMap", "name": "ca"}


def _findings(objects: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(object, field, reason) of each finding about a BackendTLSPolicy."""
    return [
        (d.key.ref, d.field, d.reason)
        for d in compile(build_state(objects), SharedPool()).diagnostics
        if d.key is not None and d.key.kind == "BackendTLSPolicy"
    ]


def test_an_unsupported_well_known_set_is_reported_at_its_field() -> None:
    objects = _world(
        _gateway("one", 80, None), _policy("p", {"wellKnownCACertificates": "Mozilla"})
    )
    assert ("app/p", "spec.validation.wellKnownCACertificates", "Invalid") in _findings(objects)


def test_usable_bundles_after_unusable_refs_are_joined_each_ending_in_a_newline() -> None:
    objects = _world(
        _gateway("one", 80, None),
        {
            **_meta("Secret", "other-ca", "v1"),
            "data": {"ca.crt": base64.b64encode(OTHER_CA_PEM.rstrip("\n").encode()).decode()},
        },
        _policy(
            "p",
            {
                "caCertificateRefs": [
                    {"group": "", "kind": "Pod", "name": "ca"},
                    {"group": "", "kind": "ConfigMap", "name": "missing"},
                    CA_REF,
                    {"group": "", "kind": "Secret", "name": "other-ca"},
                ]
            },
        ),
    )
    tls = _backends(objects)["one"].tls
    assert tls is not None
    assert (tls.ca_pem, tls.problem) == (CA_PEM + OTHER_CA_PEM.rstrip("\n") + "\n", None)


def test_a_mirror_to_a_secured_service_is_secured_with_the_gateways_certificate() -> None:
    route = {
        **_meta("HTTPRoute", "r"),
        "spec": {
            "parentRefs": [{"name": "one"}],
            "rules": [
                {
                    "backendRefs": [{"name": "plain", "port": 80}],
                    "filters": [
                        {
                            "type": "RequestMirror",
                            "requestMirror": {"backendRef": {"name": "web", "port": 443}},
                        }
                    ],
                }
            ],
        },
    }
    objects = [
        *(o for o in _world() if o["kind"] != "HTTPRoute"),
        {**_meta("Service", "plain", "v1"), "spec": {"ports": [{"port": 80}]}},
        route,
        _gateway("one", 80, "one-client"),
        _client_secret("one-client"),
        _policy("p", {"caCertificateRefs": [CA_REF]}),
    ]
    snapshot = compile(build_state(objects), SharedPool()).snapshot
    [action] = [
        rule.action
        for tables in snapshot.gateways.values()
        for table in tables.values()
        for rules in table.hosts.values()
        for rule in rules
    ]
    assert action.backends[0].tls is None
    tls = action.mirrors[0].backend.tls
    assert tls is not None
    assert tls.policy == "app/p"
    assert tls.client_certificate is not None
    assert tls.client_certificate.secret == "app/one-client"


def test_an_unnamed_port_takes_the_whole_service_policy_only() -> None:
    objects = [
        *(o for o in _world() if o["kind"] != "Service"),
        {**_meta("Service", "web", "v1"), "spec": {"ports": [{"port": 443}]}},
        _gateway("one", 80, None),
        _policy(
            "p",
            {"wellKnownCACertificates": "System"},
            targetRefs=[{"group": "", "kind": "Service", "name": "web", "sectionName": "XXXX"}],
        ),
    ]
    assert _backends(objects)["one"].tls is None


def test_a_backend_whose_service_is_missing_is_invalid_and_takes_no_policy() -> None:
    objects = [
        *(o for o in _world() if o["kind"] != "Service"),
        _gateway("one", 80, None),
        _policy("p", {"wellKnownCACertificates": "System"}),
    ]
    backend = _backends(objects)["one"]
    assert (backend.valid, backend.tls) == (False, None)
