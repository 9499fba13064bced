"""The command line, run as users run it: ``python -m coxswain`` in a subprocess, or
``coxswain.cli.main`` in this process where only the output matters.

Manifests and the compiled snapshot are generated once per module; each test then runs one or
two commands against them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml

REPO = Path(__file__).resolve().parents[2]

ROUTE_KEYS = {
    "protocol",
    "matched",
    "status",
    "grpc_status",
    "route",
    "backends",
    "mirrors",
    "redirect",
    "host",
    "path",
    "request_headers",
    "response_headers",
    "cors_headers",
    "timeouts",
    "reason",
}
SNAPSHOT_KEYS = {
    "version",
    "scope",
    "ingress",
    "gateways",
    "tls",
    "client_certs",
    "listener_health",
    "endpoints",
}
DIAGNOSTIC_LINE = re.compile(
    r"^(?P<file>.+):(?P<line>\d+): (?P<severity>error|warning): (?P<kind>\w+) (?P<ref>\S+) "
    r"(?P<field>\S+): (?P<message>.+) \((?P<reason>[A-Za-z]+)\)$"
)


def run(*args: str, stdin: str | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coxswain", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def documents(*docs: dict[str, Any]) -> str:
    return "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)


# --- manifests ----------------------------------------------------------------------------------

INGRESS_CLASS = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "IngressClass",
    "metadata": {"name": "coxswain"},
    "spec": {"controller": "coxswain-labs.dev/ingress-controller"},
}


def service_path(p: str, service: str, port: Any) -> dict[str, Any]:
    return {
        "path": p,
        "pathType": "Prefix",
        "backend": {"service": {"name": service, "port": port}},
    }


DEMO_INGRESS = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "Ingress",
    "metadata": {"name": "demo", "namespace": "apps"},
    "spec": {
        "ingressClassName": "coxswain",
        "tls": [{"hosts": ["secure.example.com"], "secretName": "secure-cert"}],
        "rules": [
            {
                "host": "secure.example.com",
                "http": {
                    "paths": [
                        service_path("/", "web", {"name": "http"}),
                        service_path("/api", "api", {"number": 8080}),
                        service_path("/broken", "api", "8080"),
                    ]
                },
            },
            {
                "host": "plain.example.com",
                "http": {
                    "paths": [
                        service_path("/", "web", {"number": 80}),
                        service_path("/gone", "missing", {"number": 80}),
                    ]
                },
            },
        ],
    },
}


def service(name: str, port: int, port_name: str, address: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"ports": [{"name": port_name, "port": port, "targetPort": 9000}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-x1",
                "namespace": "apps",
                "labels": {"kubernetes.io/service-name": name},
            },
            "addressType": "IPv4",
            "ports": [{"name": port_name, "port": 9000}],
            "endpoints": [{"addresses": [address]}],
        },
    ]


@dataclass(frozen=True)
class Workspace:
    root: Path
    manifests: Path
    ingress_file: Path
    ingress_line: int
    snapshot: Path
    compiled: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("cli")
    manifests = root / "manifests"
    (manifests / "nested" / "deeper").mkdir(parents=True)
    leaf = trustme.CA().issue_cert("secure.example.com")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "secure-cert", "namespace": "apps"},
        "type": "kubernetes.io/tls",
        "stringData": {
            "tls.crt": b"".join(p.bytes() for p in leaf.cert_chain_pems).decode(),
            "tls.key": leaf.private_key_pem.bytes().decode(),
        },
    }
    classes = documents(INGRESS_CLASS)
    ingress_file = manifests / "ingress.yaml"
    ingress_file.write_text(f"# routes\n{classes}---\n{documents(DEMO_INGRESS)}")
    ingress_line = classes.count("\n") + 3  # the comment, the class, the separator
    (manifests / "nested" / "services.yml").write_text(
        documents(*service("web", 80, "http", "10.0.0.1"), *service("api", 8080, "", "10.0.0.2"))
    )
    (manifests / "nested" / "deeper" / "secret.json").write_text(json.dumps(secret, indent=2))
    (manifests / "nested" / "configmap.yaml").write_text(
        documents({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cm"}})
    )
    (manifests / "README.md").write_text("not: [a manifest\n")
    compiled = run("compile", "-f", str(manifests))
    snapshot = root / "snapshot.json"
    snapshot.write_text(compiled.stdout)
    return Workspace(root, manifests, ingress_file, ingress_line, snapshot, compiled)


def all_files(workspace: Workspace) -> list[Path]:
    return sorted(
        p for p in workspace.manifests.rglob("*") if p.suffix in (".yaml", ".yml", ".json")
    )


# --- compile ------------------------------------------------------------------------------------


def test_compile_prints_a_sorted_json_snapshot_and_exits_0_despite_diagnostics(workspace):
    result = workspace.compiled
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert result.stdout == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert set(data) == SNAPSHOT_KEYS
    assert data["version"].startswith("sha256:")
    assert data["scope"] == "shared"
    assert sorted(data["ingress"]["hosts"]) == ["plain.example.com", "secure.example.com"]
    assert list(data["tls"]["443"]) == ["secure.example.com"]
    assert data["endpoints"]["apps/web/80"] == [{"address": "10.0.0.1", "port": 9000}]
    assert data["endpoints"]["apps/api/8080"] == [{"address": "10.0.0.2", "port": 9000}]
    assert result.stderr.strip()


def test_compile_diagnostics_name_file_line_object_field_and_reason(workspace):
    lines = workspace.compiled.stderr.splitlines()
    parsed = [m.groupdict() for line in lines if (m := DIAGNOSTIC_LINE.match(line))]
    broken = [d for d in parsed if d["field"] == "spec.rules[0].http.paths[2].backend.service.port"]
    assert broken, lines
    assert broken[0]["file"] == str(workspace.ingress_file)
    assert int(broken[0]["line"]) == workspace.ingress_line
    assert (broken[0]["kind"], broken[0]["ref"]) == ("Ingress", "apps/demo")
    assert broken[0]["severity"] == "error"
    missing = [d for d in parsed if d["reason"] == "BackendNotFound"]
    assert [d["field"] for d in missing] == ["spec.rules[1].http.paths[1].backend.service"]
    # A finding about a body Coxswain does not read names the body's file and line.
    pod = workspace.manifests / "nested" / "configmap.yaml"
    assert any(line.startswith(f"{pod}:1: warning: skipped ") and "Pod" in line for line in lines)
    assert not any(": input: " in line for line in lines)


def test_compile_reads_files_given_one_by_one_the_same_as_their_directory(workspace):
    files = [str(p) for p in all_files(workspace)]
    result = run("compile", "-f", files[0], "-f", *files[1:])
    assert result.returncode == 0, result.stderr
    assert result.stdout == workspace.compiled.stdout


def test_compile_output_is_byte_identical_when_the_input_order_is_permuted(tmp_path):
    older = {**DEMO_INGRESS, "metadata": {"name": "aaa", "namespace": "apps"}}
    newer = {**DEMO_INGRESS, "metadata": {"name": "zzz", "namespace": "apps"}}
    web_a, slice_a = service("web", 80, "http", "10.0.0.1")
    web_b = {**web_a, "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 9001}]}}
    files = {
        "one.yaml": documents(INGRESS_CLASS, newer, web_a),
        "two.yaml": documents(older, slice_a),
        "three.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": [web_b]}),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    forward = run("compile", "-f", "one.yaml", "two.yaml", "three.json", cwd=tmp_path)
    backward = run("compile", "-f", "three.json", "-f", "two.yaml", "one.yaml", cwd=tmp_path)
    assert forward.returncode == backward.returncode == 0
    assert forward.stdout == backward.stdout
    assert json.loads(forward.stdout)["ingress"]["hosts"]


def test_compile_reads_standard_input_when_the_path_is_a_dash(workspace):
    text = "---\n".join(p.read_text() for p in all_files(workspace) if p.suffix != ".json")
    secret = json.loads((workspace.manifests / "nested" / "deeper" / "secret.json").read_text())
    text += "---\n" + yaml.safe_dump(secret)
    result = run("compile", "-f", "-", stdin=text)
    assert result.returncode == 0, result.stderr
    assert result.stdout == workspace.compiled.stdout
    located = [line for line in result.stderr.splitlines() if DIAGNOSTIC_LINE.match(line)]
    assert located
    assert all(line.startswith("-:") for line in located)


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("bad.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  labels: a: b\n", 5),
        ("bad.json", '{\n  "apiVersion": "v1",\n  "kind": "Service",\n  "metadata": {,}\n}\n', 4),
    ],
)
def test_compile_exits_2_with_file_and_line_and_no_output_when_syntax_is_broken(
    workspace, tmp_path, name, text, line
):
    bad = tmp_path / "sub" / name
    bad.parent.mkdir()
    bad.write_text(text)
    result = run("compile", "-f", str(workspace.manifests), str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"{bad}:{line}: " in result.stderr


def test_compile_exits_2_with_no_output_when_a_path_is_missing(workspace, tmp_path):
    missing = tmp_path / "nope.yaml"
    result = run("compile", "-f", str(workspace.manifests), str(missing))
    assert result.returncode == 2
    assert result.stdout == ""
    assert str(missing) in result.stderr


def test_compile_prints_yaml_with_the_same_content_when_asked(workspace):
    result = run("compile", "-f", str(workspace.manifests), "-o", "yaml")
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == json.loads(workspace.compiled.stdout)
    assert "-----BEGIN CERTIFICATE-----" in result.stdout


def test_compile_emits_diagnostics_as_data_when_asked(workspace):
    result = run("compile", "-f", str(workspace.manifests), "--emit", "diagnostics")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert isinstance(found, list)
    assert found
    for item in found:
        assert set(item) == {
            *("kind", "namespace", "name", "field", "severity", "reason", "message"),
            *("file", "line"),
        }
        assert item["severity"] in ("error", "warning")
        assert isinstance(item["file"], str)  # every body came from a file
        assert isinstance(item["line"], int)
    assert {
        "kind": "Ingress",
        "namespace": "apps",
        "name": "demo",
        "field": "spec.rules[1].http.paths[1].backend.service",
        "severity": "error",
        "reason": "BackendNotFound",
        "file": str(workspace.ingress_file),
        "line": workspace.ingress_line,
    }.items() <= next(d for d in found if d["reason"] == "BackendNotFound").items()
    assert any(d["kind"] is None and d["reason"] == "UnrecognisedKind" for d in found)


GATEWAY_PROBLEMS = """\
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: coxswain}
spec: {controllerName: coxswain-labs.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: apps}
spec:
  gatewayClassName: coxswain
  listeners:
    - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: absent-tls}]}}
    - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: orphan, namespace: apps}
spec:
  gatewayClassName: absent-class
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: apps}
spec:
  parentRefs: [{name: edge}, {name: ghost}]
  rules: [{backendRefs: [{name: absent-service, port: 80}]}]
"""
GATEWAY_PROBLEMS_FOUND = [
    (6, "Gateway", "edge", "spec.listeners[0].tls.certificateRefs[0]", "InvalidCertificateRef"),
    (15, "Gateway", "orphan", "spec.gatewayClassName", "GatewayClassNotFound"),
    (22, "HTTPRoute", "shop", "spec.parentRefs[1]", "GatewayNotFound"),
    (22, "HTTPRoute", "shop", "spec.rules[0].backendRefs[0]", "BackendNotFound"),
]


def test_compile_reports_gateway_api_problems_with_file_line_object_and_field(tmp_path):
    (tmp_path / "gw.yaml").write_text(GATEWAY_PROBLEMS)
    data = run("compile", "-f", "gw.yaml", "--emit", "diagnostics", cwd=tmp_path)
    assert data.returncode == 0, data.stderr
    found = json.loads(data.stdout)
    assert [
        (d["line"], d["kind"], d["name"], d["field"], d["reason"]) for d in found
    ] == GATEWAY_PROBLEMS_FOUND
    assert {d["file"] for d in found} == {"gw.yaml"}
    snapshot = run("compile", "-f", "gw.yaml", cwd=tmp_path)
    assert snapshot.returncode == 0
    lines = snapshot.stderr.splitlines()
    parsed = [m.groupdict() for line in lines if (m := DIAGNOSTIC_LINE.match(line))]
    assert len(parsed) == len(lines) == len(GATEWAY_PROBLEMS_FOUND), lines
    assert [(int(d["line"]), d["kind"], d["ref"], d["field"], d["reason"]) for d in parsed] == [
        (n, kind, f"apps/{name}", f, r) for n, kind, name, f, r in GATEWAY_PROBLEMS_FOUND
    ]


def test_compile_exits_2_naming_where_an_unclosed_flow_list_opens(tmp_path):
    (tmp_path / "list.yaml").write_text("apiVersion: v1\nkind: List\nitems: [\n  {a: 1},\n")
    result = run("compile", "-f", "list.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("list.yaml:3: the '[' opened here is never closed (")


# --- route --------------------------------------------------------------------------------------


def route(workspace: Workspace, *args: str) -> dict[str, Any]:
    result = run("route", "--snapshot", str(workspace.snapshot), "-o", "json", *args)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert result.stdout == json.dumps(data, sort_keys=True, indent=2) + "\n"
    return data


def assert_contract_types(data: dict[str, Any]) -> None:
    assert set(data) == ROUTE_KEYS
    assert data["protocol"] in ("HTTP/1.1", "HTTP/2")
    assert isinstance(data["matched"], bool)
    assert data["status"] is None or type(data["status"]) is int
    assert data["grpc_status"] is None or type(data["grpc_status"]) is int
    assert data["route"] is None or set(data["route"]) == {"kind", "namespace", "name", "rule"}
    assert isinstance(data["backends"], list)
    for backend in data["backends"]:
        assert set(backend) == {
            "namespace",
            "service",
            "port",
            "weight",
            "valid",
            "endpoints",
            "tls",
            "protocol",
        }
        assert backend["protocol"] in ("http1", "h2c")
        assert type(backend["port"]) is int
        assert type(backend["weight"]) is int
        assert isinstance(backend["valid"], bool)
        assert all(isinstance(e, str) and ":" in e for e in backend["endpoints"])
    assert isinstance(data["mirrors"], list)
    assert data["redirect"] is None or set(data["redirect"]) == {"location"}
    assert isinstance(data["host"], str)
    assert isinstance(data["path"], str)
    assert isinstance(data["request_headers"], dict)
    for name, values in data["request_headers"].items():
        assert name == name.lower()
        assert isinstance(values, list)
        assert all(isinstance(v, str) for v in values)
    assert set(data["response_headers"]) == {"set", "add", "remove"}
    assert isinstance(data["response_headers"]["set"], dict)
    assert isinstance(data["response_headers"]["add"], dict)
    assert isinstance(data["response_headers"]["remove"], list)
    assert all(isinstance(v, str) and n == n.lower() for n, v in data["cors_headers"].items())
    assert set(data["timeouts"]) == {"request", "backend_request"}
    assert all(v is None or isinstance(v, int | float) for v in data["timeouts"].values())
    assert isinstance(data["reason"], str)
    assert data["reason"]


def test_route_json_has_the_contract_fields_when_forwarded(workspace):
    data = route(workspace, "--port", "443", "GET", "https://secure.example.com/api/users?id=7")
    assert_contract_types(data)
    assert data["matched"] is True
    assert data["status"] is None
    assert data["route"] == {
        "kind": "Ingress",
        "namespace": "apps",
        "name": "demo",
        "rule": "spec.rules[0].http.paths[1]",
    }
    assert data["backends"] == [
        {
            "namespace": "apps",
            "service": "api",
            "port": 8080,
            "weight": 1,
            "valid": True,
            "endpoints": ["10.0.0.2:9000"],
            "tls": None,
            "protocol": "http1",
        }
    ]
    assert data["redirect"] is None
    assert (data["host"], data["path"]) == ("secure.example.com", "/api/users?id=7")
    assert data["request_headers"]["host"] == ["secure.example.com"]
    assert data["request_headers"]["x-forwarded-proto"] == ["https"]


def test_route_json_has_the_contract_fields_when_redirected(workspace):
    data = route(workspace, "--port", "80", "GET", "http://secure.example.com/a?b=1")
    assert_contract_types(data)
    assert (data["matched"], data["status"]) == (True, 308)
    assert data["redirect"] == {"location": "https://secure.example.com/a?b=1"}


def test_route_json_has_the_contract_fields_when_nothing_matches(workspace):
    data = route(workspace, "--port", "80", "GET", "http://nowhere.example.org/")
    assert_contract_types(data)
    assert (data["matched"], data["status"], data["route"]) == (False, 404, None)
    assert data["backends"] == []
    assert data["redirect"] is None


def test_route_json_reports_503_and_the_invalid_backend_when_the_service_is_missing(workspace):
    data = route(workspace, "--port", "80", "GET", "http://plain.example.com/gone")
    assert_contract_types(data)
    assert (data["matched"], data["status"]) == (True, 503)
    assert data["backends"][0]["valid"] is False
    assert data["backends"][0]["endpoints"] == []


def test_route_host_header_overrides_the_url_host(workspace):
    data = route(
        workspace,
        "--port",
        "443",
        "-H",
        "Host: secure.example.com",
        "-H",
        "X-Custom: 1",
        "GET",
        "https://127.0.0.1/",
    )
    assert data["matched"] is True
    assert data["status"] is None
    assert data["host"] == "secure.example.com"
    assert data["request_headers"]["host"] == ["secure.example.com"]
    assert data["request_headers"]["x-custom"] == ["1"]


def test_route_maps_the_configured_ingress_http_port_to_the_ingress_table(workspace):
    data = route(
        workspace,
        "--ingress-http-port",
        "8080",
        "--port",
        "8080",
        "GET",
        "http://plain.example.com/",
    )
    assert (data["matched"], data["status"]) == (True, None)
    assert data["backends"][0]["service"] == "web"


def test_route_default_port_is_not_an_ingress_port_when_ingress_http_port_is_moved(workspace):
    data = route(
        workspace, "--ingress-http-port", "8080", "--port", "80", "GET", "http://plain.example.com/"
    )
    assert (data["matched"], data["status"]) == (False, 404)


def test_route_prints_text_by_default(workspace):
    result = run(
        "route", "--snapshot", str(workspace.snapshot), "--port", "80", "GET", "http://x.example/"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("protocol: HTTP/1.1\nstatus:   404\n")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("missing.json", None),
        ("garbage.json", "this is not json"),
        ("list.json", "[]"),
        ("wrong-type.json", '{"version": 1, "scope": "shared", "ingress": {}}'),
        ("bad-scope.json", '{"version": "v", "scope": "nope", "ingress": {"hosts": {}}}'),
    ],
)
def test_route_exits_2_without_output_when_the_snapshot_is_unreadable(tmp_path, name, content):
    snapshot = tmp_path / name
    if content is not None:
        snapshot.write_text(content)
    result = run("route", "--snapshot", str(snapshot), "--port", "80", "GET", "http://a/")
    assert result.returncode == 2
    assert result.stdout == ""
    assert name in result.stderr


def test_route_exits_2_when_the_url_is_not_http(workspace):
    result = run("route", "--snapshot", str(workspace.snapshot), "--port", "80", "GET", "ftp://a/")
    assert result.returncode == 2
    assert result.stdout == ""


GRPC_CASE = (
    REPO / "tests" / "golden" / "cases" / "gateway" / "grpcroute-exact-method-matching.in.yaml"
)
GRPC_METHOD = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/EchoTwo"


@pytest.fixture(scope="module")
def grpc_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The snapshot of the golden case of conformance GRPCExactMethodMatching."""
    root = tmp_path_factory.mktemp("grpc")
    bases = REPO / "tests" / "golden" / "cases" / "_base"
    case = GRPC_CASE.read_text().split("\n---\n", 1)[1]
    (root / "route.yaml").write_text(case)
    files = [
        *(bases / f for f in ("gateway-class.yaml", "gateway-http.yaml", "services-grpc.yaml"))
    ]
    compiled = run(
        "compile", *(a for f in files for a in ("-f", str(f))), "-f", "route.yaml", cwd=root
    )
    assert compiled.returncode == 0, compiled.stderr
    snapshot = root / "snapshot.json"
    snapshot.write_text(compiled.stdout)
    return snapshot


def grpc_route(snapshot: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run("route", "--snapshot", str(snapshot), "--port", "30000", *args)


def test_route_grpc_explains_the_call_the_rule_and_its_h2c_backend(grpc_snapshot):
    result = grpc_route(grpc_snapshot, "-o", "json", "--grpc", GRPC_METHOD, "http://a.example")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert_contract_types(data)
    assert (data["matched"], data["status"], data["grpc_status"]) == (True, None, None)
    assert data["route"] == {
        "kind": "GRPCRoute",
        "namespace": "app",
        "name": "exact-matching",
        "rule": "spec.rules[1]",
    }
    assert [(b["service"], b["protocol"]) for b in data["backends"]] == [
        ("grpc-infra-backend-v2", "h2c")
    ]
    assert data["path"] == f"/{GRPC_METHOD}"
    assert data["request_headers"]["content-type"] == ["application/grpc"]


def test_route_grpc_shows_the_grpc_status_of_a_method_no_rule_matches(grpc_snapshot):
    method = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/EchoThree"
    text = grpc_route(grpc_snapshot, "--grpc", method, "http://a.example")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(
        "protocol: HTTP/2\nstatus:   grpc-status 12 UNIMPLEMENTED (for the proxy's 404)\n"
    )
    data = json.loads(grpc_route(grpc_snapshot, "-o", "json", "--grpc", method, "http://a").stdout)
    assert (data["matched"], data["status"], data["grpc_status"]) == (False, 404, 12)


def test_route_text_names_the_backend_protocol(grpc_snapshot):
    result = grpc_route(grpc_snapshot, "--grpc", GRPC_METHOD, "http://a.example")
    assert "backend:  app/grpc-infra-backend-v2:8080 h2c -> 10.0.2.2:3000\n" in result.stdout


def test_route_http2_checks_the_fields_as_the_proxy_checks_a_stream(grpc_snapshot):
    """Over HTTP/2 (a gRPC call's, or --http2) the request's fields are a stream's: cookies
    joined for the backend, a connection-specific field resets the stream, CONNECT is 501."""
    args = ("-o", "json", "--grpc", GRPC_METHOD, "-H", "Cookie: a=1", "-H", "Cookie: b=2")
    data = json.loads(grpc_route(grpc_snapshot, *args, "http://a.example").stdout)
    assert_contract_types(data)
    assert data["protocol"] == "HTTP/2"
    assert data["request_headers"]["cookie"] == ["a=1; b=2"]
    reset = grpc_route(grpc_snapshot, "--http2", "-H", "Connection: close", "GET", "http://a/")
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout == (
        "protocol: HTTP/2\nstatus:   stream reset (PROTOCOL_ERROR)\n"
        "reason:   connection-specific field 'connection'\n"
    )
    connect = grpc_route(grpc_snapshot, "-o", "json", "--http2", "CONNECT", "http://a/")
    assert json.loads(connect.stdout) == {
        "protocol": "HTTP/2",
        "status": 501,
        "reset": False,
        "reason": "CONNECT (and WebSocket over HTTP/2, RFC 8441) is not served",
    }


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--grpc", "NoSlash", "http://a"), "is not SERVICE/METHOD"),
        (("--grpc", "a.B/C/D", "http://a"), "is not SERVICE/METHOD"),
        (("--grpc", "a.B/C", "http://a/path"), "names no path or query"),
        (("--grpc", "a.B/C", "POST", "http://a"), "give METHOD URL"),
        (("GET",), "give METHOD URL"),
    ],
)
def test_route_exits_2_when_the_call_is_not_what_grpc_takes(grpc_snapshot, args, why):
    result = grpc_route(grpc_snapshot, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert why in result.stderr


# --- help and version ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "example"),
    [("compile", "coxswain compile -f"), ("route", "coxswain route --snapshot")],
)
def test_help_shows_an_example(command, example):
    result = run(command, "--help")
    assert result.returncode == 0
    assert "example" in result.stdout.lower()
    assert example in result.stdout


def test_version_is_printed():
    result = run("--version")
    assert result.returncode == 0
    pattern = r"coxswain \d+\.\d+\.\d+\S* \(HTTP/1\.1 codec (compiled|interpreted)\)\n"
    assert re.fullmatch(pattern, result.stdout)


def test_proxy_workers_default_to_the_cpus_this_process_may_use():
    """``--workers`` defaults to the CPU count (the affinity mask's)."""
    from coxswain.cli import _parser

    args = _parser().parse_args(["proxy", "--shared", "--snapshot", "s.json"])
    assert args.workers == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_a_proxy_timeout_that_is_not_a_positive_number_of_seconds_is_refused(value, capsys):
    from coxswain.cli import _parser

    with pytest.raises(SystemExit):
        _parser().parse_args(
            ["proxy", "--shared", "--snapshot", "s.json", "--client-header-timeout", value]
        )
    assert "--client-header-timeout" in capsys.readouterr().err


def test_a_proxy_timeout_may_be_fractional_or_infinite():
    from coxswain.cli import _parser

    flags = ["--upstream-read-timeout", "0.25", "--client-body-timeout", "inf"]
    args = _parser().parse_args(["proxy", "--shared", "--snapshot", "s.json", *flags])
    assert (args.upstream_read_timeout, args.client_body_timeout) == (0.25, float("inf"))


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--shared-vip-service-type", "NodePort"],
            {},
            "argument --shared-vip-service-type: NodePort is refused: every shared Gateway needs",
        ),
        (
            [],
            {"COXSWAIN_SHARED_VIP_SERVICE_TYPE": "NodePort"},
            "COXSWAIN_SHARED_VIP_SERVICE_TYPE: NodePort is refused",
        ),
        (["--shared-proxy-selector", "app"], {}, "comma-separated key=value labels"),
        ([], {"COXSWAIN_HEALTH_PORT": "x"}, "COXSWAIN_HEALTH_PORT: 'x' is not a port number"),
        (["--kubeconfig", "/nonexistent/kubeconfig"], {}, "no cluster configuration"),
    ],
)
def test_controller_flags_and_their_environment_variables_are_checked_at_start(
    args: list[str], env: dict[str, str], message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coxswain", "controller", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
        cwd=REPO,
    )
    assert done.returncode == 2
    assert message in done.stderr


# --- compile -o table, --scope ------------------------------------------------------------------

GATEWAY_API = "gateway.networking.k8s.io/v1"


def gateway_doc(name: str, class_name: str = "coxswain", dedicated: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "gatewayClassName": class_name,
        "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
    }
    if dedicated:
        spec["infrastructure"] = {
            "parametersRef": {
                "group": "gateway.coxswain-labs.dev",
                "kind": "CoxswainGatewayParameters",
                "name": "own",
            }
        }
    return {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": "apps"},
        "spec": spec,
    }


def route_doc(name: str, parent: str) -> dict[str, Any]:
    return {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "apps"},
        "spec": {
            "parentRefs": [{"name": parent}],
            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}],
        },
    }


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared Gateway and a dedicated one with a route each, a dedicated Gateway without
    routes, a Gateway of another controller's class, and a broken HTTPRoute."""
    folder = tmp_path_factory.mktemp("gateways")
    classes = [
        {
            "apiVersion": GATEWAY_API,
            "kind": "GatewayClass",
            "metadata": {"name": name},
            "spec": {"controllerName": controller},
        }
        for name, controller in (
            ("coxswain", "coxswain-labs.dev/gateway-controller"),
            ("other", "example.com/gateway"),
        )
    ]
    parameters = {
        "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
        "kind": "CoxswainGatewayParameters",
        "metadata": {"name": "own", "namespace": "apps"},
        "spec": {"replicas": 2},
    }
    broken = route_doc("broken", "shared")
    broken["spec"]["rules"][0]["backendRefs"][0]["name"] = "missing"
    (folder / "gateways.yaml").write_text(
        documents(
            *classes,
            parameters,
            gateway_doc("shared"),
            gateway_doc("edge", dedicated=True),
            gateway_doc("lonely", dedicated=True),
            gateway_doc("foreign", class_name="other"),
            route_doc("to-shared", "shared"),
            route_doc("to-edge", "edge"),
            broken,
            *service("web", 80, "http", "10.0.0.1"),
        )
    )
    return folder


def compiled(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from coxswain.cli import main

    code = main(["compile", *args])
    out, err = capsys.readouterr()
    return code, out, err


def rows(table: str) -> list[list[str]]:
    """A table's lines split on its column gaps (two spaces or more)."""
    return [re.split(r"  +", line.strip()) for line in table.splitlines()]


def test_compile_table_lists_diagnostics_with_where_they_are(workspace, capsys):
    code, out, _ = compiled(
        capsys, "-f", str(workspace.manifests), "-o", "table", "--emit", "diagnostics"
    )
    assert code == 0
    found = rows(out)
    assert found[0] == ["WHERE", "SEVERITY", "KIND", "NAME", "FIELD", "MESSAGE"]
    where = f"{workspace.ingress_file}:{workspace.ingress_line}"
    missing = next(r for r in found if r[-1].endswith("(BackendNotFound)"))
    assert missing[:5] == [
        where,
        "error",
        "Ingress",
        "apps/demo",
        "spec.rules[1].http.paths[1].backend.service",
    ]
    assert any(r[2:4] == ["-", "-"] and r[-1].endswith("(UnrecognisedKind)") for r in found)


def test_compile_table_lists_every_condition_of_the_status(gateways, capsys):
    code, out, _ = compiled(capsys, "-f", str(gateways), "-o", "table", "--emit", "status")
    assert code == 0
    found = rows(out)
    assert found[0] == ["KIND", "NAME", "PART", "CONDITION", "REASON", "MESSAGE"]
    assert ["Gateway", "apps/shared", "listener http (2 routes)", "Programmed=True"] in [
        r[:4] for r in found
    ]
    assert ["GatewayClass", "coxswain", "-", "Accepted=True", "Accepted"] in found
    refused = next(r for r in found if r[:2] == ["HTTPRoute", "apps/broken"] and "False" in r[3])
    assert refused[2:5] == ["parent Gateway apps/shared", "ResolvedRefs=False", "BackendNotFound"]
    assert not any(r[1] == "apps/foreign" for r in found)  # another controller's


def test_compile_table_lists_the_objects_the_controller_would_apply(gateways, capsys):
    code, out, _ = compiled(capsys, "-f", str(gateways), "-o", "table", "--emit", "infra")
    assert code == 0
    found = rows(out)
    assert found[0] == ["ACTION", "KIND", "NAME", "ROLE", "GATEWAY", "DETAIL"]
    vip = next(r for r in found if r[1] == "Service" and r[4] == "apps/shared")
    assert vip[:4] == ["apply", "Service", vip[2], "shared-vip"]
    assert re.fullmatch(r"LoadBalancer 80->\d+", vip[5])
    proxy = next(r for r in found if r[1] == "Deployment" and r[4] == "apps/edge")
    assert proxy[:4] == ["apply", "Deployment", "apps/edge-coxswain", "dedicated-proxy"]
    assert proxy[5] == "image coxswain:0.1.0, 2 replicas"


def test_compile_gives_dedicated_proxies_the_trusted_proxies_the_controller_would(
    gateways, capsys, monkeypatch
):
    def trusted(*flags: str) -> list[str | None]:
        code, out, err = compiled(capsys, "-f", str(gateways), "--emit", "infra", *flags)
        assert code == 0, err
        found: list[str | None] = []
        for item in json.loads(out)["items"]:
            if item["kind"] == "Deployment":
                args = item["spec"]["template"]["spec"]["containers"][0]["args"]
                at = args.index("--trusted-proxies") + 1 if "--trusted-proxies" in args else 0
                found.append(args[at] if at else None)
        return found

    assert set(trusted()) == {None}
    assert set(trusted("--proxy-trusted-proxies", "10.0.0.1, fd00::/8")) == {"10.0.0.1/32,fd00::/8"}
    monkeypatch.setenv("COXSWAIN_PROXY_TRUSTED_PROXIES", "10.0.0.0/8")  # the controller's only
    assert set(trusted()) == {None}
    from coxswain.cli import _parser
    from coxswain.cli.controller import _controller_settings

    settings = _controller_settings(_parser().parse_args(["controller"]))
    assert settings.compile.proxy_trusted_proxies == ("10.0.0.0/8",)


def test_static_addresses_are_given_only_inside_the_ranges(tmp_path, capsys, monkeypatch):
    """``--gateway-address-ranges`` (``compile`` and ``controller``) sets the networks a
    Gateway's static address may come from: inside one, the VIP Service gets the external IP;
    without one, the Gateway says the address is not usable."""
    gateway = {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": {"name": "edge", "namespace": "apps"},
        "spec": {
            "gatewayClassName": "coxswain",
            "addresses": [{"type": "IPAddress", "value": "192.0.2.9"}],
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
        },
    }
    gateway_class = {
        "apiVersion": GATEWAY_API,
        "kind": "GatewayClass",
        "metadata": {"name": "coxswain"},
        "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
    }
    file = tmp_path / "edge.yaml"
    file.write_text(yaml.safe_dump_all([gateway_class, gateway]))

    def compiled_with(*flags: str) -> tuple[str, list[list[str]]]:
        code, out, err = compiled(
            capsys, "-f", str(file), "--emit", "status", "-o", "table", *flags
        )
        assert code == 0, err
        programmed = next(r for r in rows(out) if r[1] == "apps/edge" and r[3].startswith("Prog"))
        code, out, err = compiled(capsys, "-f", str(file), "--emit", "infra", "-o", "table", *flags)
        assert code == 0, err
        return programmed[4], [r for r in rows(out) if r[1] == "Service"]

    reason, services = compiled_with()
    assert reason == "AddressNotUsable"
    assert "external" not in services[0][5]
    reason, services = compiled_with("--gateway-address-ranges", "192.0.2.0/24")
    assert reason == "AddressNotAssigned"  # until the Service carries it
    assert services[0][5].endswith("external 192.0.2.9")

    monkeypatch.setenv("COXSWAIN_GATEWAY_ADDRESS_RANGES", "192.0.2.0/24, 2001:db8::/32")
    from coxswain.cli import _parser
    from coxswain.cli.controller import _controller_settings

    settings = _controller_settings(_parser().parse_args(["controller"]))
    assert settings.compile.gateway_address_ranges == ("192.0.2.0/24", "2001:db8::/32")


def test_compile_table_of_the_snapshot_is_its_routing(gateways, capsys):
    code, out, err = compiled(capsys, "-f", str(gateways), "-o", "table", "--scope", "apps/edge")
    assert code == 0, err
    found = rows(out)
    assert found[0] == ["PORT", "HOST", "MATCH", "ROUTE", "BACKENDS"]
    route = "HTTPRoute apps/to-edge spec.rules[0]"
    assert found[1:] == [["80 (80)", "*", "PathPrefix /", route, "apps/web:80"]]
    assert "compiles to no route" not in err


@pytest.mark.parametrize("emit", ["snapshot", "diagnostics"])
@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ("apps/shared", "Gateway apps/shared is not dedicated: the shared pool serves it"),
        ("apps/nowhere", "there is no Gateway apps/nowhere in the input"),
        ("apps/foreign", "its GatewayClass other names controller example.com/gateway"),
    ],
)
def test_compile_refuses_a_scope_no_proxy_serves(gateways, capsys, emit, scope, message):
    code, out, err = compiled(capsys, "-f", str(gateways), "--scope", scope, "--emit", emit)
    assert (code, out) == (2, "")
    assert err.startswith(f"coxswain compile: --scope {scope}: ")
    assert message in err


def test_compile_refuses_a_gateway_scope_without_the_gateway_api(gateways, capsys):
    args = ("-f", str(gateways), "--scope", "apps/edge", "--disable-gateway-api")
    code, out, err = compiled(capsys, *args)
    assert (code, out) == (2, "")
    assert "the Gateway API is disabled" in err


@pytest.mark.parametrize("output", ["json", "table"])
def test_compile_says_when_a_scope_compiles_to_no_route(gateways, capsys, output):
    code, out, err = compiled(capsys, "-f", str(gateways), "--scope", "apps/lonely", "-o", output)
    assert code == 0
    assert out
    assert err.endswith(
        "coxswain compile: scope apps/lonely compiles to no route: its proxy would answer 404 "
        "to every request\n"
    )


def test_compile_says_when_the_shared_pool_compiles_to_no_route(tmp_path, capsys):
    (tmp_path / "services.yaml").write_text(documents(*service("web", 80, "http", "10.0.0.1")))
    code, out, err = compiled(capsys, "-f", str(tmp_path), "-o", "table")
    assert (code, out) == (0, "PORT  HOST  MATCH  ROUTE  BACKENDS\n")
    assert "scope shared compiles to no route" in err


@pytest.mark.parametrize("emit", ["status", "infra"])
def test_compile_refuses_a_scope_for_what_covers_every_object(gateways, capsys, emit):
    code, out, err = compiled(capsys, "-f", str(gateways), "--emit", emit, "--scope", "shared")
    assert (code, out) == (2, "")
    assert f"--emit {emit} covers every object and takes no --scope" in err


# --- flags checked when parsed ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compile", "-f", "x", "--scope", "apps"], "argument --scope: 'apps' is neither shared"),
        (["compile", "-f", "x", "--scope", "a/b/c"], "argument --scope: 'a/b/c' is neither"),
        (["compile", "-f", "x", "-o", "xml"], "argument -o/--output: invalid choice: 'xml'"),
        (["compile", "-f", "x", "--emit", "all"], "argument --emit: invalid choice: 'all'"),
        (
            ["compile", "-f", "x", "--shared-vip-service-type", "NodePort"],
            "argument --shared-vip-service-type: NodePort is refused",
        ),
        (
            ["compile", "-f", "x", "--shared-proxy-selector", "a"],
            "argument --shared-proxy-selector: 'a' is not comma-separated key=value labels",
        ),
        (["route", "--snapshot", "s", "--port", "0", "GET", "http://a/"], "not a port from 1"),
        (["route", "--snapshot", "s", "--port", "80", "-o", "yaml", "GET", "http://a/"], "'yaml'"),
        (["proxy", "--gateway", "shared", "--snapshot", "s"], "argument --gateway: 'shared'"),
        (["proxy", "--shared", "--snapshot", "s", "--log-format", "xml"], "'xml' is not one of"),
        (["proxy", "--shared", "--snapshot", "s", "--admin-port", "70000"], "to 65535"),
        (["serve", "--manifests", "m", "--drain-timeout", "-1"], "argument --drain-timeout"),
        (["controller", "--shared-vip-service-type", "Foo"], "'Foo' is not one of LoadBalancer"),
        (["controller", "--discovery-port", "0"], "argument --discovery-port: 0 is not a port"),
        (["controller", "--crd-probe-interval", "nan"], "argument --crd-probe-interval"),
        (
            ["controller", "--discovery-streams-per-identity", "0"],
            "argument --discovery-streams-per-identity: 0 is less than 1",
        ),
        (["controller", "--discovery-max-streams", "many"], "'many' is not a whole number"),
        (["controller", "--log-format", "yaml"], "argument --log-format: 'yaml' is not one of"),
        (
            ["controller", "--proxy-trusted-proxies", "10.0.0.0/8,10.0.0.1/8"],
            "argument --proxy-trusted-proxies: '10.0.0.1/8' is not a network",
        ),
        (
            ["compile", "-f", "x", "--gateway-address-ranges", "192.0.2.1/24"],
            "argument --gateway-address-ranges: '192.0.2.1/24' is not a network",
        ),
        (
            ["compile", "-f", "x", "--proxy-trusted-proxies", "lb.example.com"],
            "argument --proxy-trusted-proxies: 'lb.example.com' is not a network",
        ),
    ],
)
def test_a_bad_flag_value_exits_2_when_parsed(argv, message, capsys):
    from coxswain.cli import _parser

    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("COXSWAIN_SHARED_VIP_SERVICE_TYPE", "NodePort", "NodePort is refused"),
        ("COXSWAIN_SHARED_VIP_SERVICE_TYPE", "nodeport", "'nodeport' is not one of"),
        ("COXSWAIN_LOG_FORMAT", "yaml", "'yaml' is not one of auto, json, text"),
        ("COXSWAIN_DISABLE_GATEWAY_API", "maybe", "'maybe' is not one of true"),
        ("COXSWAIN_DISCOVERY_PORT", "99999", "99999 is not a port from 1 to 65535"),
        ("COXSWAIN_CRD_PROBE_INTERVAL", "0", "it must be more than 0 seconds"),
        ("COXSWAIN_SHARED_PROXY_SELECTOR", "a=b,", "is not comma-separated key=value labels"),
        ("COXSWAIN_PROXY_TRUSTED_PROXIES", "10.0.0.1/8", "10.0.0.1/8 has host bits set"),
    ],
)
def test_a_bad_environment_value_exits_2_when_parsed_naming_the_variable(
    variable, value, message, capsys, monkeypatch
):
    from coxswain.cli import _parser

    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args(["controller"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"{variable}: " in err
    assert message in err


def test_the_log_format_of_serve_and_proxy_comes_from_the_environment_too(capsys, monkeypatch):
    from coxswain.cli import _parser

    monkeypatch.setenv("COXSWAIN_LOG_FORMAT", "xml")
    for argv in (["serve", "--manifests", "m"], ["proxy", "--shared", "--snapshot", "s"]):
        with pytest.raises(SystemExit):
            _parser().parse_args(argv)
        assert "COXSWAIN_LOG_FORMAT: 'xml' is not one of" in capsys.readouterr().err
    monkeypatch.setenv("COXSWAIN_LOG_FORMAT", "JSON")
    assert _parser().parse_args(argv).log_format == "json"


def test_controller_flags_take_their_environment_and_the_command_line_wins(monkeypatch):
    from coxswain.cli import _parser

    monkeypatch.setenv("COXSWAIN_SHARED_VIP_SERVICE_TYPE", "ClusterIP")
    monkeypatch.setenv("COXSWAIN_DISABLE_GATEWAY_API", "TRUE")
    monkeypatch.setenv("COXSWAIN_HEALTH_PORT", "0")
    monkeypatch.setenv("COXSWAIN_SHARED_PROXY_SELECTOR", "app=edge")
    args = _parser().parse_args(["controller"])
    assert args.shared_vip_service_type == "ClusterIP"
    assert args.disable_gateway_api is True
    assert args.health_port == 0
    assert args.shared_proxy_selector == {"app": "edge"}
    args = _parser().parse_args(["controller", "--shared-vip-service-type", "LoadBalancer"])
    assert args.shared_vip_service_type == "LoadBalancer"
    monkeypatch.setenv("COXSWAIN_DISABLE_GATEWAY_API", "no")
    assert _parser().parse_args(["controller"]).disable_gateway_api is False
    assert _parser().parse_args(["controller", "--disable-gateway-api"]).disable_gateway_api


def test_workers_keep_the_log_format_of_their_supervisor():
    from coxswain.cli import _parser
    from coxswain.cli.proxy import _worker_command

    args = _parser().parse_args(
        ["proxy", "--shared", "--snapshot", "s", "--workers", "2", "--log-format", "text"]
    )
    command = _worker_command(args)
    assert command[command.index("--log-format") + 1] == "text"


def test_workers_trust_the_proxies_their_supervisor_trusts():
    from coxswain.cli import _parser
    from coxswain.cli.proxy import _worker_command

    base = ["proxy", "--shared", "--snapshot", "s", "--workers", "2"]
    assert "--trusted-proxies" not in _worker_command(_parser().parse_args(base))
    args = _parser().parse_args([*base, "--trusted-proxies", "10.0.0.0/8, fd00::/8"])
    command = _worker_command(args)
    assert command[command.index("--trusted-proxies") + 1] == "10.0.0.0/8,fd00::/8"
    assert _parser().parse_args(command[3:]).trusted_proxies == args.trusted_proxies


def help_blocks(command: str) -> dict[str, str]:
    """Each option's entry in ``coxswain COMMAND --help``, by its long flag."""
    from coxswain.cli import _parser

    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = commands.choices[command].format_help()
    options = text[text.index("options:") :].split("\n\n")[0]
    blocks = re.split(r"\n(?=  -)", options)[1:]
    return {re.findall(r"--[a-z0-9-]+", block)[0]: block for block in blocks}


@pytest.mark.parametrize("command", ["compile", "route", "proxy", "serve", "controller"])
def test_help_shows_the_default_of_every_option_that_has_one(command, monkeypatch):
    from coxswain.cli import _parser

    for name in list(os.environ):
        if name.startswith("COXSWAIN_") or name == "POD_NAMESPACE":
            monkeypatch.delenv(name)
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    blocks = help_blocks(command)
    for action in commands.choices[command]._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        block = " ".join(blocks[action.option_strings[-1]].split())
        if action.default not in (None, False, [], argparse.SUPPRESS):
            assert "default" in block, block
        if command == "controller" and action.dest != "help":
            assert re.search(r"environment: COXSWAIN_[A-Z_]+", block), block
    if command == "compile":
        assert "(default: json)" in " ".join(blocks["--output"].split())


def test_the_controllers_caps_on_discovery_streams_reach_its_settings(monkeypatch):
    """The flag table states the defaults as text; they are the server's own."""
    from coxswain.cli import _parser
    from coxswain.cli.controller import _controller_settings
    from coxswain.shell.discovery.server import MAX_STREAMS, STREAMS_PER_IDENTITY

    settings = _controller_settings(_parser().parse_args(["controller"]))
    assert settings.discovery_streams_per_identity == STREAMS_PER_IDENTITY
    assert settings.discovery_max_streams == MAX_STREAMS
    monkeypatch.setenv("COXSWAIN_DISCOVERY_MAX_STREAMS", "20000")
    argv = ["controller", "--discovery-streams-per-identity", "2048"]
    settings = _controller_settings(_parser().parse_args(argv))
    assert (settings.discovery_streams_per_identity, settings.discovery_max_streams) == (
        2048,
        20000,
    )


def test_the_ingress_nginx_configmap_defaults_reach_the_compile_config(monkeypatch):
    from coxswain.cli import _parser
    from coxswain.cli.controller import _controller_settings
    from coxswain.compile.config import IngressDefaults

    settings = _controller_settings(_parser().parse_args(["controller"]))
    assert settings.compile.ingress_defaults == IngressDefaults()
    monkeypatch.setenv("COXSWAIN_INGRESS_DEFAULT_SSL_REDIRECT", "false")
    argv = [
        "controller",
        "--ingress-default-body-size=1m",
        "--ingress-default-connect-timeout=5",
        "--ingress-default-read-timeout=0",
        "--ingress-default-send-timeout=30",
        "--ingress-default-hsts=true",
        "--ingress-default-hsts-max-age=600",
        "--ingress-default-hsts-include-subdomains=false",
    ]
    settings = _controller_settings(_parser().parse_args(argv))
    assert settings.compile.ingress_defaults == IngressDefaults(
        body_size=1 << 20,
        connect_timeout=5,
        send_timeout=30,
        ssl_redirect=False,
        hsts=True,
        hsts_max_age=600,
        hsts_include_subdomains=False,
    )
    with pytest.raises(SystemExit):
        _parser().parse_args(["controller", "--ingress-default-body-size=1 MB"])
    with pytest.raises(SystemExit):
        _parser().parse_args(["controller", "--ingress-default-hsts-max-age=-1"])


def test_compile_takes_the_controllers_ingress_default_flags():
    from coxswain.cli import _parser
    from coxswain.cli.ingress_defaults import ingress_defaults
    from coxswain.compile.config import IngressDefaults

    flags = [
        "--ingress-default-body-size=1m",
        "--ingress-default-ssl-redirect=false",
        "--ingress-default-hsts=true",
        "--ingress-default-hsts-preload=true",
    ]
    compiled = ingress_defaults(_parser().parse_args(["compile", "-f", "-", *flags]))
    controller = ingress_defaults(_parser().parse_args(["controller", *flags]))
    assert (
        compiled
        == controller
        == IngressDefaults(body_size=1 << 20, ssl_redirect=False, hsts=True, hsts_preload=True)
    )
    assert ingress_defaults(_parser().parse_args(["compile", "-f", "-"])) == IngressDefaults()


def test_help_of_the_controller_shows_the_built_in_default_and_the_variable(monkeypatch):
    monkeypatch.setenv("COXSWAIN_HEALTH_PORT", "9999")
    block = " ".join(help_blocks("controller")["--health-port"].split())
    assert "(default: 9902; environment: COXSWAIN_HEALTH_PORT, set here to '9999')" in block


@pytest.mark.parametrize("enabled", [True, False])
def test_compile_leaves_the_collector_as_it_found_it(workspace, capsys, enabled):
    import gc

    before = gc.get_threshold()
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        code, out, _ = compiled(capsys, "-f", str(workspace.manifests), "-o", "json")
        assert (gc.isenabled(), gc.get_threshold()) == (enabled, before)
    finally:
        (gc.enable if was else gc.disable)()
    assert code == 0
    assert json.loads(out)
