"""decode_object: raw API bodies → typed objects, diagnostics naming the field; never raises."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest
import trustme

from coxswain.compile import build_state
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.decode import Decoded, Malformed, Unrecognised, decode_object
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.manifests import parse_manifests
from coxswain.compile.model.objects import (
    EndpointSlice,
    Ingress,
    IngressClass,
    Namespace,
    Secret,
    Service,
)
from coxswain.compile.model.state import build_state_once

NETWORKING = "networking.k8s.io/v1"


def body(kind: str, name: str = "x", *, api: str = "v1", ns: str | None = None, **top: Any):
    metadata: dict[str, Any] = {"name": name}
    if ns is not None:
        metadata["namespace"] = ns
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **top}


def decoded(raw: object) -> Any:
    result = decode_object(raw)
    assert isinstance(result, Decoded), result
    return result.obj


def fields_of(obj: Any) -> list[str]:
    return [d.field for d in obj.diagnostics]


def backend(service: str = "svc", port: object = None) -> dict[str, Any]:
    return {"service": {"name": service, "port": {"number": 80} if port is None else port}}


def path(p: str = "/", path_type: str = "Prefix", **extra: Any) -> dict[str, Any]:
    return {"path": p, "pathType": path_type, "backend": backend(), **extra}


def ingress(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    raw = body("Ingress", "web", api=NETWORKING, ns="apps", spec=spec)
    raw["metadata"].update(meta)
    return raw


@pytest.fixture(scope="module")
def keypair_pem() -> tuple[bytes, bytes]:
    ca = trustme.CA()
    cert = ca.issue_cert("secure.example.com", "*.wild.example.com")
    return b"".join(p.bytes() for p in cert.cert_chain_pems), cert.private_key_pem.bytes()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- recognition --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cls", "key"),
    [
        (
            body("Ingress", "i", api=NETWORKING, ns="apps"),
            Ingress,
            ObjectKey("Ingress", "apps", "i"),
        ),
        (
            body("IngressClass", "c", api=NETWORKING),
            IngressClass,
            ObjectKey("IngressClass", "", "c"),
        ),
        (body("Service", "s", ns="apps"), Service, ObjectKey("Service", "apps", "s")),
        (
            body("EndpointSlice", "e", api="discovery.k8s.io/v1", ns="apps"),
            EndpointSlice,
            ObjectKey("EndpointSlice", "apps", "e"),
        ),
        (body("Secret", "t", ns="apps"), Secret, ObjectKey("Secret", "apps", "t")),
        (body("Namespace", "n"), Namespace, ObjectKey("Namespace", "", "n")),
    ],
)
def test_every_kind_is_decoded_with_its_key(raw, cls, key):
    obj = decoded(raw)
    assert type(obj) is cls
    assert obj.meta.key == key
    assert obj.diagnostics == []


@pytest.mark.parametrize(
    ("kind", "api"),
    [
        ("Ingress", NETWORKING),
        ("Service", "v1"),
        ("EndpointSlice", "discovery.k8s.io/v1"),
        ("Secret", "v1"),
    ],
)
def test_namespace_defaults_to_default_when_a_namespaced_object_has_none(kind, api):
    assert decoded(body(kind, api=api)).meta.key.namespace == "default"
    assert decoded(body(kind, api=api, ns="")).meta.key.namespace == "default"


@pytest.mark.parametrize(("kind", "api"), [("IngressClass", NETWORKING), ("Namespace", "v1")])
def test_namespace_is_empty_when_the_kind_is_cluster_scoped_even_if_one_is_given(kind, api):
    assert decoded(body(kind, api=api, ns="somewhere")).meta.key.namespace == ""


@pytest.mark.parametrize(
    ("kind", "api"),
    [
        ("Ingress", "networking.k8s.io/v1beta1"),
        ("Ingress", "extensions/v1beta1"),
        ("Ingress", "v1"),
        ("Service", "v2"),
        ("Service", "example.com/v1"),
        ("Pod", "v1"),
        ("StatefulSet", "apps/v1"),
        ("TCPRoute", "gateway.networking.k8s.io/v1alpha2"),
        ("EndpointSlice", "discovery.k8s.io/v1beta1"),
    ],
)
def test_unrecognised_when_kind_or_api_version_is_not_read(kind, api):
    assert decode_object(body(kind, api=api)) == Unrecognised(kind, api)


NO_NAME = "Service has no metadata.name"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (None, "expected an object, found NoneType"),
        ("a string", "expected an object, found str"),
        (42, "expected an object, found int"),
        (["kind", "Service"], "expected an object, found list"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "object has no kind"),
        ({"apiVersion": "v1", "kind": "", "metadata": {"name": "x"}}, "object has no kind"),
        ({"apiVersion": "v1", "kind": 7, "metadata": {"name": "x"}}, "object has no kind"),
        ({"kind": "Service", "metadata": {"name": "x"}}, "Service has no apiVersion"),
        (
            {"apiVersion": 1, "kind": "Service", "metadata": {"name": "x"}},
            "Service has no apiVersion",
        ),
        ({"apiVersion": "v1", "kind": "Service"}, NO_NAME),
        ({"apiVersion": "v1", "kind": "Service", "metadata": "x"}, NO_NAME),
        ({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a"}}, NO_NAME),
        ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": ""}}, NO_NAME),
        ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": 5}}, NO_NAME),
    ],
)
def test_malformed_when_the_body_is_not_an_object_or_lacks_kind_or_name(raw, message):
    assert decode_object(raw) == Malformed(
        Diagnostic(
            key=None, field="", severity=Severity.ERROR, reason="MalformedObject", message=message
        )
    )


# --- wrong field types --------------------------------------------------------------------------


def test_wrong_port_type_names_the_exact_field_and_keeps_the_other_paths():
    obj = decoded(
        ingress(
            {
                "rules": [
                    {
                        "host": "a.example.com",
                        "http": {
                            "paths": [
                                path("/ok"),
                                {
                                    "path": "/bad",
                                    "pathType": "Prefix",
                                    "backend": backend(port="80"),
                                },
                                path("/also-ok", "Exact"),
                            ]
                        },
                    }
                ]
            }
        )
    )
    assert [(d.field, d.reason, d.message) for d in obj.diagnostics] == [
        (
            "spec.rules[0].http.paths[1].backend.service.port",
            "InvalidField",
            "expected an object, found str '80'",
        ),
        (
            "spec.rules[0].http.paths[1].backend.service.port",
            "InvalidBackend",
            "exactly one of port.number and port.name must be set; the path is ignored",
        ),
    ]
    assert all(d.key == ObjectKey("Ingress", "apps", "web") for d in obj.diagnostics)
    assert [(p.path, p.path_type) for p in obj.rules[0].paths] == [
        ("/ok", "Prefix"),
        ("/also-ok", "Exact"),
    ]
    assert obj.rules[0].paths[1].field == "spec.rules[0].http.paths[2]"


def test_port_number_as_a_string_is_refused_with_the_number_field_named():
    bad = {**path("/b"), "backend": backend(port={"number": "80"})}
    obj = decoded(ingress({"rules": [{"http": {"paths": [path("/a"), bad]}}]}))
    assert [p.path for p in obj.rules[0].paths] == ["/a"]
    assert [(d.field, d.reason, d.message) for d in obj.diagnostics] == [
        (
            "spec.rules[0].http.paths[1].backend.service.port.number",
            "InvalidField",
            "expected an integer, found str '80'",
        )
    ]


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"rules": {"host": "a"}}, "spec.rules", "expected a list, found dict {'host': 'a'}"),
        ({"rules": ["not a rule"]}, "spec.rules[0]", "expected an object, found str 'not a rule'"),
        ({"rules": [{"host": 5}]}, "spec.rules[0].host", "expected a string, found int 5"),
        ({"rules": [{"http": []}]}, "spec.rules[0].http", "expected an object, found list []"),
        (
            {"rules": [{"http": {"paths": "x"}}]},
            "spec.rules[0].http.paths",
            "expected a list, found str 'x'",
        ),
        (
            {"rules": [{"http": {"paths": [{**path(), "pathType": 3}]}}]},
            "spec.rules[0].http.paths[0].pathType",
            "expected a string, found int 3",
        ),
        (
            {"rules": [{"http": {"paths": [{**path(), "path": ["/"]}]}}]},
            "spec.rules[0].http.paths[0].path",
            "expected a string, found list ['/']",
        ),
        ({"ingressClassName": True}, "spec.ingressClassName", "expected a string, found bool True"),
        (
            {"tls": [{"hosts": "a.example.com"}]},
            "spec.tls[0].hosts",
            "expected a list, found str 'a.example.com'",
        ),
        ({"tls": [{"hosts": [1]}]}, "spec.tls[0].hosts[0]", "expected a string, found int 1"),
        (
            {"tls": [{"secretName": {}}]},
            "spec.tls[0].secretName",
            "expected a string, found dict {}",
        ),
        ({"defaultBackend": "svc"}, "spec.defaultBackend", "expected an object, found str 'svc'"),
    ],
)
def test_wrong_ingress_field_type_is_reported_with_its_path(spec, field, message):
    obj = decoded(ingress(spec))
    first = obj.diagnostics[0]
    assert (first.field, first.reason, first.message) == (field, "InvalidField", message)
    assert first.key == ObjectKey("Ingress", "apps", "web")


def test_spec_that_is_not_an_object_is_reported_and_the_object_still_decodes():
    obj = decoded(body("Service", "s", spec=["ports"]))
    assert fields_of(obj) == ["spec"]
    assert obj.ports == []


def test_bad_label_and_annotation_entries_are_reported_and_good_ones_kept():
    raw = body("Namespace", "n")
    raw["metadata"]["labels"] = {"team": "a", "count": 3}
    raw["metadata"]["annotations"] = {"note": None, "ok": "yes"}
    obj = decoded(raw)
    assert dict(obj.meta.labels) == {"team": "a"}
    assert dict(obj.meta.annotations) == {"ok": "yes"}
    assert fields_of(obj) == ["metadata.labels['count']", "metadata.annotations['note']"]


@pytest.mark.parametrize("generation", [-1, True, "3", 1.5])
def test_bad_generation_is_reported_when_not_a_non_negative_integer(generation):
    raw = body("Namespace", "n")
    raw["metadata"]["generation"] = generation
    obj = decoded(raw)
    assert fields_of(obj) == ["metadata.generation"]
    assert obj.meta.generation == 1  # as if absent: the API server starts at 1


def test_metadata_fields_are_read_when_present():
    raw = body("Namespace", "n")
    raw["metadata"].update(uid="u-1", generation=4, labels={"a": "b"})
    meta = decoded(raw).meta
    assert (meta.uid, meta.generation, dict(meta.labels)) == ("u-1", 4, {"a": "b"})


# --- Ingress ------------------------------------------------------------------------------------


def test_ingress_fields_are_decoded_with_api_server_defaults():
    obj = decoded(
        ingress(
            {
                "ingressClassName": "coxswain",
                "defaultBackend": backend("fallback", {"name": "http"}),
                "rules": [
                    {
                        "host": "Shop.Example.COM",
                        "http": {
                            "paths": [
                                {"backend": backend()},
                                {"path": "/e", "pathType": "Exact", "backend": backend()},
                            ]
                        },
                    },
                    {"host": "*.wild.example.com"},
                ],
                "tls": [{"hosts": ["Shop.Example.com"], "secretName": "cert"}, {}],
            },
            annotations={"kubernetes.io/ingress.class": "legacy"},
        )
    )
    assert obj.class_name == "coxswain"
    assert obj.legacy_class == "legacy"
    assert obj.default_backend.service.name == "fallback"
    assert obj.default_backend.service.port_name == "http"
    assert obj.default_backend.field == "spec.defaultBackend"
    first, second = obj.rules
    assert first.host == "shop.example.com"
    assert [(p.path, p.path_type) for p in first.paths] == [
        ("/", "ImplementationSpecific"),
        ("/e", "Exact"),
    ]
    assert first.paths[0].backend.service.port_number == 80
    assert second.host == "*.wild.example.com"
    assert second.paths == []
    assert [list(t.hosts) for t in obj.tls] == [["shop.example.com"], []]
    assert [t.secret_name for t in obj.tls] == ["cert", None]
    assert obj.diagnostics == []


@pytest.mark.parametrize(
    ("item", "field", "reason"),
    [
        (
            {**path(), "pathType": "Regex"},
            "spec.rules[0].http.paths[0].pathType",
            "UnsupportedPathType",
        ),
        ({**path(), "path": "relative"}, "spec.rules[0].http.paths[0].path", "InvalidPath"),
        ({**path(), "path": "/a b"}, "spec.rules[0].http.paths[0].path", "InvalidPath"),
        ({**path(), "path": "/a?q=1"}, "spec.rules[0].http.paths[0].path", "InvalidPath"),
        (
            {"path": "/", "pathType": "Prefix"},
            "spec.rules[0].http.paths[0].backend",
            "MissingBackend",
        ),
        (
            {**path(), "backend": {**backend(), "resource": {"kind": "Bucket", "name": "b"}}},
            "spec.rules[0].http.paths[0].backend",
            "InvalidBackend",
        ),
        (
            {**path(), "backend": backend(port={"number": 80, "name": "http"})},
            "spec.rules[0].http.paths[0].backend.service.port",
            "InvalidBackend",
        ),
        (
            {**path(), "backend": backend(port={"number": 70000})},
            "spec.rules[0].http.paths[0].backend.service.port.number",
            "InvalidField",
        ),
        (
            {**path(), "backend": {"service": {"port": {"number": 80}}}},
            "spec.rules[0].http.paths[0].backend.service.name",
            "InvalidBackend",
        ),
    ],
)
def test_unusable_path_is_dropped_and_reported_when_invalid(item, field, reason):
    obj = decoded(ingress({"rules": [{"http": {"paths": [item, path("/kept")]}}]}))
    assert [p.path for p in obj.rules[0].paths] == ["/kept"]
    assert (field, reason) in [(d.field, d.reason) for d in obj.diagnostics]


def test_resource_backend_is_kept_for_the_compiler_to_report():
    resource = {"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "b"}}
    obj = decoded(ingress({"rules": [{"http": {"paths": [{**path(), "backend": resource}]}}]}))
    assert obj.rules[0].paths[0].backend.resource == "Bucket/b"
    assert obj.rules[0].paths[0].backend.service is None


@pytest.mark.parametrize(
    "host", ["1.2.3.4", "bad_host.example.com", "a..b", "*", "*.*.example.com"]
)
def test_rule_with_an_invalid_host_is_dropped_and_reported(host):
    obj = decoded(ingress({"rules": [{"host": host}, {"host": "ok.example.com"}]}))
    assert [r.host for r in obj.rules] == ["ok.example.com"]
    assert [(d.field, d.reason) for d in obj.diagnostics] == [
        ("spec.rules[0].host", "InvalidHostname")
    ]


# --- creationTimestamp --------------------------------------------------------------------------


def created(value: object) -> tuple[str, list[Diagnostic]]:
    raw = body("Namespace", "n")
    raw["metadata"]["creationTimestamp"] = value
    obj = decoded(raw)
    return obj.meta.created, list(obj.diagnostics)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000000Z"),
        ("2024-01-02T03:04:05.25Z", "2024-01-02T03:04:05.250000Z"),
        ("2024-01-02T03:04:05+02:00", "2024-01-02T01:04:05.000000Z"),
        ("2024-01-02T00:30:00-01:00", "2024-01-02T01:30:00.000000Z"),
        (dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "2024-01-02T03:04:05.000000Z"),
        (
            dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
            "2024-01-02T08:04:05.000000Z",
        ),
        (dt.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05.000000Z"),
    ],
)
def test_creation_timestamp_is_normalised_to_utc_when_valid(value, expected):
    assert created(value) == (expected, [])


def test_creation_timestamp_from_unquoted_yaml_is_normalised():
    text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n"
    text += "  creationTimestamp: 2024-01-02T05:04:05+02:00\n"
    parsed = parse_manifests(text, "ns.yaml")
    assert isinstance(parsed, list)
    assert parsed[0].body["metadata"]["creationTimestamp"] == dt.datetime(
        2024, 1, 2, 5, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))
    )
    assert decoded(parsed[0].body).meta.created == "2024-01-02T03:04:05.000000Z"


def test_creation_timestamps_sort_as_time_when_offsets_differ():
    later, _ = created("2024-01-02T00:30:00-01:00")  # 01:30 UTC
    earlier, _ = created("2024-01-02T02:00:00+01:00")  # 01:00 UTC
    assert earlier < later


def test_creation_timestamp_is_empty_when_absent():
    assert created(None) == ("", [])


@pytest.mark.parametrize("value", ["yesterday", "2024-13-45T00:00:00Z", "not a time at all"])
def test_creation_timestamp_garbage_gives_a_warning_when_unparseable(value):
    text, found = created(value)
    assert text == ""
    assert [(d.field, d.severity, d.reason) for d in found] == [
        ("metadata.creationTimestamp", Severity.WARNING, "InvalidField")
    ]


def test_creation_timestamp_of_the_wrong_type_is_reported():
    text, found = created(12345)
    assert text == ""
    assert [d.field for d in found] == ["metadata.creationTimestamp"]


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_decode_does_not_raise_when_a_timestamp_overflows_in_utc(value):
    text, found = created(value)
    assert text == ""
    assert [d.field for d in found] == ["metadata.creationTimestamp"]


# --- Services and EndpointSlices ----------------------------------------------------------------


def test_service_ports_and_status_are_decoded():
    obj = decoded(
        body(
            "Service",
            "web",
            ns="apps",
            spec={
                "type": "LoadBalancer",
                "clusterIP": "10.0.0.1",
                "ports": [
                    {"name": "http", "port": 80, "targetPort": 8080},
                    {"name": "https", "port": 443, "targetPort": "8443", "protocol": "TCP"},
                    {"port": 9000, "targetPort": "metrics"},
                    {"name": "no-number"},
                    {"port": 53, "protocol": "UDP"},
                ],
            },
            status={"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example"}]}},
        )
    )
    assert obj.type == "LoadBalancer"
    assert obj.cluster_ip == "10.0.0.1"
    assert [(p.name, p.port, p.target_port, p.protocol) for p in obj.ports] == [
        ("http", 80, 8080, "TCP"),
        ("https", 443, 8443, "TCP"),
        ("", 9000, "metrics", "TCP"),
        ("", 53, None, "UDP"),
    ]
    assert list(obj.load_balancer) == ["1.2.3.4", "lb.example"]
    assert fields_of(obj) == ["spec.ports[3].port"]


def test_service_type_defaults_to_cluster_ip_and_external_name_is_read():
    assert decoded(body("Service", "s")).type == "ClusterIP"
    external = decoded(body("Service", "s", spec={"type": "ExternalName", "externalName": "a.b"}))
    assert (external.type, external.external_name) == ("ExternalName", "a.b")


def test_decode_does_not_raise_when_target_port_is_a_unicode_digit_string():
    obj = decoded(body("Service", "s", spec={"ports": [{"port": 80, "targetPort": "²"}]}))
    # not an ASCII number, so a port name (that no container port will have)
    assert [(p.port, p.target_port) for p in obj.ports] == [(80, "²")]
    assert obj.diagnostics == []


def endpoint_slice(endpoints: list[Any], ports: list[Any] | None = None) -> dict[str, Any]:
    raw = body(
        "EndpointSlice",
        "web-abc",
        api="discovery.k8s.io/v1",
        ns="apps",
        addressType="IPv4",
        ports=[{"name": "http", "port": 8080}] if ports is None else ports,
        endpoints=endpoints,
    )
    raw["metadata"]["labels"] = {"kubernetes.io/service-name": "web"}
    return raw


def test_endpoint_is_ready_when_the_ready_condition_is_absent():
    obj = decoded(
        endpoint_slice(
            [
                {"addresses": ["10.0.0.1"]},
                {"addresses": ["10.0.0.2"], "conditions": {}},
                {"addresses": ["10.0.0.3"], "conditions": {"ready": None}},
                {"addresses": ["10.0.0.4"], "conditions": {"ready": True}},
                {"addresses": ["10.0.0.5"], "conditions": {"ready": False}},
            ]
        )
    )
    assert [(e.address, e.ready) for e in obj.endpoints] == [
        ("10.0.0.1", True),
        ("10.0.0.2", True),
        ("10.0.0.3", True),
        ("10.0.0.4", True),
        ("10.0.0.5", False),
    ]
    assert obj.service_name == "web"
    assert obj.address_type == "IPv4"
    assert obj.diagnostics == []


def test_endpoint_slice_problems_are_reported_and_good_entries_kept():
    obj = decoded(
        endpoint_slice(
            [
                {"addresses": []},
                {"addresses": ["10.0.0.1", "10.0.0.9"], "conditions": {"ready": "yes"}},
                {"addresses": ["10.0.0.2"]},
            ],
            ports=[{"name": "http", "port": 8080}, {"name": "all"}, {"port": "x"}],
        )
    )
    assert [(p.name, p.port) for p in obj.ports] == [("http", 8080)]
    assert [(e.address, e.ready) for e in obj.endpoints] == [
        ("10.0.0.1", True),
        ("10.0.0.2", True),
    ]
    assert fields_of(obj) == [
        "ports[2].port",
        "endpoints[0].addresses",
        "endpoints[1].conditions.ready",
    ]


# --- Secrets ------------------------------------------------------------------------------------


def secret(kind: str = "kubernetes.io/tls", **top: Any) -> dict[str, Any]:
    return body("Secret", "cert", ns="apps", type=kind, **top)


def test_tls_secret_from_data_gives_a_keypair(keypair_pem):
    chain, key = keypair_pem
    obj = decoded(secret(data={"tls.crt": b64(chain), "tls.key": b64(key)}))
    assert obj.type == "kubernetes.io/tls"
    assert obj.problem is None
    assert obj.keypair.chain_pem == chain.decode()
    assert obj.keypair.key_pem == key.decode()
    assert list(obj.keypair.dns_names) == ["*.wild.example.com", "secure.example.com"]


def test_string_data_overrides_data_when_both_hold_a_key(keypair_pem):
    chain, key = keypair_pem
    obj = decoded(
        secret(
            data={"tls.crt": b64(b"stale"), "tls.key": b64(key)},
            stringData={"tls.crt": chain.decode()},
        )
    )
    assert obj.problem is None
    assert obj.keypair.chain_pem == chain.decode()


def test_base64_garbage_in_data_gives_a_diagnostic_naming_the_key(keypair_pem):
    _, key = keypair_pem
    obj = decoded(secret(data={"tls.crt": "@@not base64@@", "tls.key": b64(key)}))
    assert [(d.field, d.reason, d.message) for d in obj.diagnostics] == [
        ("data['tls.crt']", "InvalidField", "is not valid base64")
    ]
    assert obj.keypair is None
    assert obj.problem == "the Secret has no tls.crt or no tls.key"


def test_tls_secret_without_a_key_has_a_problem_and_no_keypair(keypair_pem):
    chain, _ = keypair_pem
    obj = decoded(secret(stringData={"tls.crt": chain.decode()}))
    assert obj.keypair is None
    assert obj.problem == "the Secret has no tls.crt or no tls.key"
    assert obj.diagnostics == []


def test_tls_secret_with_unparseable_pem_has_a_problem():
    obj = decoded(secret(stringData={"tls.crt": "garbage", "tls.key": "garbage"}))
    assert obj.keypair is None
    assert obj.problem == "tls.crt holds no valid PEM certificate"


def test_a_generic_secret_with_a_pair_keeps_it_and_no_key_material_shows(keypair_pem):
    """ingress-nginx's ``proxy-ssl-secret`` is often an Opaque Secret: its pair is read, but
    neither the key nor any other value is in the decoded object's text."""
    chain, key = keypair_pem
    obj = decoded(
        secret(
            "Opaque",
            data={"tls.crt": b64(chain), "tls.key": b64(key), "password": b64(b"hunter2")},
            stringData={"token": "s3cr3t-token"},
        )
    )
    assert obj.type == "Opaque"
    assert obj.keypair is not None
    assert obj.keypair.chain_pem == chain.decode()
    assert obj.keypair.key_pem == key.decode()
    assert obj.problem is None
    assert obj.ca_bundle is None
    text = repr(obj)
    for material in ("PRIVATE KEY", "hunter2", b64(b"hunter2"), "s3cr3t-token", b64(key)[:40]):
        assert material not in text


def test_a_generic_secret_without_a_pair_has_no_keypair_and_no_problem():
    obj = decoded(secret("Opaque", data={"password": b64(b"hunter2")}))
    assert obj.keypair is None
    assert obj.problem is None
    assert "hunter2" not in repr(obj)


def test_secret_type_defaults_to_opaque():
    assert decoded(body("Secret", "s")).type == "Opaque"


def test_ca_bundle_is_kept_when_ca_crt_holds_a_certificate(keypair_pem):
    chain, _ = keypair_pem
    obj = decoded(secret("Opaque", data={"ca.crt": b64(chain)}))
    assert obj.ca_bundle == chain.decode()
    assert obj.problem is None
    broken = decoded(secret("Opaque", stringData={"ca.crt": "nope"}))
    assert broken.ca_bundle is None
    assert broken.problem == "ca.crt holds no valid PEM certificate"


# --- IngressClass and Namespace -----------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("True", False), ("false", False)])
def test_ingress_class_default_annotation_is_exactly_true_as_admission_compares_it(value, expected):
    raw = body("IngressClass", "c", api=NETWORKING, spec={"controller": "x.dev/ctl"})
    raw["metadata"]["annotations"] = {"ingressclass.kubernetes.io/is-default-class": value}
    obj = decoded(raw)
    assert (obj.controller, obj.is_default) == ("x.dev/ctl", expected)


def test_namespace_labels_are_read():
    raw = body("Namespace", "team-a")
    raw["metadata"]["labels"] = {"env": "prod"}
    assert dict(decoded(raw).meta.labels) == {"env": "prod"}


# --- a required field that cannot be used is reported once, precisely ---------------------------

GATEWAY_API = "gateway.networking.k8s.io/v1"
GOOD_LISTENER = {"name": "ok", "port": 80, "protocol": "HTTP"}


def reported(obj: Any) -> list[tuple[str, str]]:
    return [(d.field, d.message) for d in obj.diagnostics]


@pytest.mark.parametrize(
    ("listener", "expected"),
    [
        (
            {"name": "h", "port": "8080", "protocol": "HTTP"},
            [("spec.listeners[0].port", "expected an integer, found str '8080'")],
        ),
        (
            {"name": "h", "port": 0, "protocol": "HTTP"},
            [("spec.listeners[0].port", "0 is outside 1..65535")],
        ),
        (
            {"name": "h", "protocol": "HTTP"},
            [("spec.listeners[0].port", "a listener needs a port; it is ignored")],
        ),
        (
            {"name": "", "port": 8080},
            [
                ("spec.listeners[0].name", "a listener needs a name; it is ignored"),
                ("spec.listeners[0].protocol", "a listener needs a protocol; it is ignored"),
            ],
        ),
    ],
)
def test_a_listener_that_cannot_be_used_is_reported_once_per_field(listener, expected):
    spec = {"gatewayClassName": "c", "listeners": [listener, GOOD_LISTENER]}
    gateway = decoded(body("Gateway", "g", api=GATEWAY_API, ns="app", spec=spec))
    assert reported(gateway) == expected
    assert [item.name for item in gateway.listeners] == ["ok"]


@pytest.mark.parametrize(
    ("listeners", "expected"),
    [
        (None, [("spec.listeners", "a Gateway needs at least one listener")]),
        ([], [("spec.listeners", "a Gateway needs at least one listener")]),
        ("http", [("spec.listeners", "expected a list, found str 'http'")]),
    ],
)
def test_a_gateway_without_listeners_is_reported_once(listeners, expected):
    spec = {"gatewayClassName": "c", "listeners": listeners}
    assert reported(decoded(body("Gateway", "g", api=GATEWAY_API, spec=spec))) == expected


def test_a_service_port_given_as_a_string_is_reported_once():
    service = decoded(body("Service", "s", spec={"ports": [{"port": "80"}, {"port": 81}]}))
    assert reported(service) == [("spec.ports[0].port", "expected an integer, found str '80'")]
    assert [p.port for p in service.ports] == [81]


@pytest.mark.parametrize(
    ("parent", "expected"),
    [
        ({"name": 7}, [("spec.parentRefs[0].name", "expected a string, found int 7")]),
        ({"kind": "Gateway"}, [("spec.parentRefs[0].name", "a parentRef needs a name; ignored")]),
        (None, [("spec.parentRefs[0]", "a parentRef needs a name; ignored")]),
        ("edge", [("spec.parentRefs[0]", "expected an object, found str 'edge'")]),
    ],
)
def test_a_parent_ref_that_cannot_be_used_is_reported_once(parent, expected):
    route = decoded(body("HTTPRoute", "r", api=GATEWAY_API, spec={"parentRefs": [parent]}))
    assert reported(route) == expected
    assert not route.parent_refs


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            {"name": 1, "value": "v"},
            [("spec.rules[0].matches[0].headers[0].name", "expected a string, found int 1")],
        ),
        (
            {"name": "x"},
            [("spec.rules[0].matches[0].headers[0].value", "a match needs a value; ignored")],
        ),
        ({"name": "x", "value": ""}, []),
    ],
)
def test_a_header_match_that_cannot_be_used_is_reported_once(header, expected):
    spec = {"rules": [{"matches": [{"headers": [header]}]}]}
    route = decoded(body("HTTPRoute", "r", api=GATEWAY_API, spec=spec))
    assert reported(route) == expected


def test_a_certificate_ref_whose_name_is_not_a_string_is_reported_once():
    listener = {"name": "s", "port": 443, "protocol": "HTTPS"}
    listener["tls"] = {"certificateRefs": [{"name": ["tls"]}]}
    spec = {"gatewayClassName": "c", "listeners": [listener]}
    gateway = decoded(body("Gateway", "g", api=GATEWAY_API, spec=spec))
    assert reported(gateway) == [
        ("spec.listeners[0].tls.certificateRefs[0].name", "expected a string, found list ['tls']")
    ]


# --- build_state --------------------------------------------------------------------------------


def test_build_state_reports_skipped_malformed_and_duplicate_bodies_in_any_order():
    bodies = [
        body("Pod", "c"),
        body("Pod", "d"),
        "not an object",
        body("Service", "s", spec={"type": "ClusterIP"}),
        body("Service", "s", spec={"type": "NodePort"}),
    ]
    forward, backward = build_state(bodies), build_state(list(reversed(bodies)))
    assert forward == backward
    service = ObjectKey("Service", "default", "s")
    assert [(d.key, d.severity, d.reason, d.message) for d in forward.input_diagnostics] == [
        (None, Severity.ERROR, "MalformedObject", "expected an object, found str"),
        (
            None,
            Severity.WARNING,
            "UnrecognisedKind",
            "skipped 2 object(s) of v1 Pod, not read by Coxswain",
        ),
        (
            service,
            Severity.WARNING,
            "DuplicateObject",
            "the input holds 2 bodies with this key; one is kept",
        ),
    ]
    # the kept body is the larger in canonical JSON, whatever the order: "NodePort" here
    assert [(key, s.type) for key, s in forward.services.items()] == [(service, "NodePort")]


def test_build_state_once_is_build_state_and_gives_up_when_two_bodies_share_a_key():
    bodies = [
        body("Pod", "c"),
        "not an object",
        body("Service", "s", spec={"type": "ClusterIP"}),
        body("Service", "t", spec={"type": "NodePort"}),
    ]
    assert build_state_once(iter(bodies)) == build_state(bodies)
    assert build_state_once([*bodies, body("Service", "s", spec={"type": "NodePort"})]) is None


def test_build_state_does_not_raise_when_yaml_keys_are_not_all_strings():
    raw = body("Namespace", "n")
    raw["metadata"]["labels"] = {1: "one", "a": "b"}
    namespace = build_state([raw]).namespaces[ObjectKey("Namespace", "", "n")]
    assert dict(namespace.meta.labels) == {"a": "b"}
    # the key is what is wrong, not the value
    assert [(d.field, d.reason, d.message) for d in namespace.diagnostics] == [
        ("metadata.labels[1]", "InvalidField", "expected a string key, found int 1")
    ]
