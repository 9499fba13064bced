"""compile.listing and compile.ingress.status: what ``coxswain compile`` prints, exactly.

``coxswain compile`` is tested in a subprocess (tests/unit/test_cli.py); these pin its pure
conversions in process: the routing table's rows and alignment, ``List`` objects, diagnostics
as data, and the addresses an Ingress reports.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyrsistent import pvector

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.listing import diagnostic_data, infra_list, status_list
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.provision import DesiredObject, DesiredObjects
from coxswain.compile.status import ObjectStatus
from coxswain.compile.tables import routing_table
from tests.integration.manifests import backend, gateway, gateway_class, ingress_class
from tests.unit.boundary_objects import tls_secret


def _path(path: str, kind: str, service: str) -> dict[str, Any]:
    return {
        "path": path,
        "pathType": kind,
        "backend": {"service": {"name": service, "port": {"number": 80}}},
    }


WORLD: list[dict[str, Any]] = [
    ingress_class(),
    gateway_class(),
    gateway("gw", 80),
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "ing", "namespace": "app"},
        "spec": {
            "ingressClassName": "coxswain",
            "defaultBackend": {"service": {"name": "two", "port": {"number": 80}}},
            "tls": [{"hosts": ["s.example.com"], "secretName": "cert"}],
            "rules": [
                {
                    "host": "s.example.com",
                    "http": {
                        "paths": [
                            _path("/", "Prefix", "one"),
                            _path("/x", "Exact", "missing"),
                        ]
                    },
                }
            ],
        },
    },
    {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "app"},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "hostnames": ["a.example.com"],
            "rules": [
                {
                    "matches": [
                        {
                            "path": {"type": "PathPrefix", "value": "/api"},
                            "method": "GET",
                            "headers": [{"name": "X-H", "value": "1"}],
                            "queryParams": [{"name": "q", "value": "1"}],
                        }
                    ],
                    "backendRefs": [
                        {"name": "one", "port": 80, "weight": 3},
                        {"name": "nope", "port": 80, "weight": 1},
                    ],
                },
                {
                    "matches": [{"path": {"type": "Exact", "value": "/old"}}],
                    "filters": [
                        {
                            "type": "RequestRedirect",
                            "requestRedirect": {"statusCode": 301, "hostname": "b.example.com"},
                        }
                    ],
                },
                {"matches": [{"path": {"type": "Exact", "value": "/none"}}]},
            ],
        },
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "plain", "namespace": "app"},
        "spec": {
            "ingressClassName": "coxswain",
            "rules": [{"host": "p.example.com", "http": {"paths": [_path("/", "Prefix", "one")]}}],
        },
    },
    tls_secret("cert", "app", "s.example.com"),
    *backend("one", 8080),
    *backend("two", 8081),
]


def test_the_routing_table_has_one_aligned_row_per_rule():
    snapshot = compile(build_state(WORLD), SharedPool()).snapshot
    assert routing_table(snapshot).splitlines() == [
        "PORT        HOST           MATCH                         ROUTE"
        "                                          BACKENDS",
        "80,443      p.example.com  Prefix /                      Ingress app/plain"
        " spec.rules[0].http.paths[0]"
        "  app/one:80",
        "80,443      s.example.com  Exact /x                      Ingress app/ing"
        " spec.rules[0].http.paths[1]"
        "    app/missing:80 (invalid) (https redirect)",
        "80,443      s.example.com  Prefix /                      Ingress app/ing"
        " spec.rules[0].http.paths[0]"
        "    app/one:80 (https redirect)",
        "80,443      s.example.com  default                       Ingress app/ing"
        " spec.defaultBackend"
        "            app/two:80 (https redirect)",
        "30000 (80)  a.example.com  Exact /none                   HTTPRoute app/r spec.rules[2]"
        "                  (none: 500)",
        "30000 (80)  a.example.com  Exact /old                    HTTPRoute app/r spec.rules[1]"
        "                  redirect 301",
        "30000 (80)  a.example.com  PathPrefix /api GET [x-h] ?q  HTTPRoute app/r spec.rules[0]"
        "                  app/one:80*3, app/nope:80*1 (invalid)",
    ]


def test_an_empty_snapshot_has_the_header_only():
    snapshot = compile(build_state([]), SharedPool()).snapshot
    assert routing_table(snapshot) == "PORT  HOST  MATCH  ROUTE  BACKENDS\n"


def test_a_status_list_names_namespaced_and_cluster_objects():
    statuses = [
        ObjectStatus(api_version="v9", kind="K", namespace="ns", name="a", generation=3, body="{}"),
        ObjectStatus(
            api_version="v8", kind="C", namespace="", name="b", generation=1, body='{"x":[1]}'
        ),
    ]
    assert status_list(statuses) == {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v9",
                "kind": "K",
                "metadata": {"namespace": "ns", "name": "a", "generation": 3},
                "status": {},
            },
            {
                "apiVersion": "v8",
                "kind": "C",
                "metadata": {"name": "b", "generation": 1},
                "status": {"x": [1]},
            },
        ],
    }


def test_an_infra_list_lists_deletions_in_an_annotation_one_per_line():
    desired = DesiredObjects(
        objects=pvector(
            [DesiredObject(api_version="v1", kind="K", namespace="n", name="a", body='{"a":1}')]
        ),
        deletions=pvector([ObjectKey("Service", "n", "old"), ObjectKey("Deployment", "n", "d")]),
        diagnostics=pvector(),
    )
    assert infra_list(desired) == {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {
            "annotations": {"coxswain-labs.dev/delete": "Service n/old\nDeployment n/d\n"}
        },
        "items": [{"a": 1}],
    }
    empty = DesiredObjects(objects=pvector(), deletions=pvector(), diagnostics=pvector())
    assert infra_list(empty) == {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}


def test_diagnostics_as_data_name_their_object_or_none():
    about = Diagnostic(
        key=ObjectKey("Ingress", "app", "ing"),
        field="spec.rules[0]",
        severity=Severity.WARNING,
        reason="Why",
        message="what",
    )
    whole = Diagnostic(key=None, field="", severity=Severity.ERROR, reason="R", message="m")
    assert diagnostic_data(about) == {
        "kind": "Ingress",
        "namespace": "app",
        "name": "ing",
        "field": "spec.rules[0]",
        "severity": "warning",
        "reason": "Why",
        "message": "what",
        "file": None,
        "line": None,
    }
    assert diagnostic_data(whole) == {
        "kind": None,
        "namespace": None,
        "name": None,
        "field": "",
        "severity": "error",
        "reason": "R",
        "message": "m",
        "file": None,
        "line": None,
    }


@pytest.mark.parametrize(
    ("address", "entry"),
    [
        ("10.0.0.1", {"ip": "10.0.0.1"}),
        ("fd00::1", {"ip": "fd00::1"}),
        ("1.2.3", {"ip": "1.2.3"}),
        ("lb.example.com", {"hostname": "lb.example.com"}),
        ("a.1", {"hostname": "a.1"}),
        ("1.a", {"hostname": "1.a"}),
    ],
)
def test_an_ingress_reports_ip_literals_as_ip_and_names_as_hostname(address, entry):
    config = CompileConfig(status_addresses=(address, "lb.example.com"))
    [found] = [
        s for s in status(build_state(WORLD), config) if (s.kind, s.name) == ("Ingress", "ing")
    ]
    assert (found.api_version, found.namespace, found.name, found.generation) == (
        "networking.k8s.io/v1",
        "app",
        "ing",
        1,
    )
    assert json.loads(found.body) == {
        "loadBalancer": {"ingress": [entry, {"hostname": "lb.example.com"}]}
    }
    assert found.body == json.dumps(json.loads(found.body), sort_keys=True, separators=(",", ":"))


def test_an_ingress_reports_an_empty_list_without_addresses():
    [found] = [s for s in status(build_state(WORLD)) if (s.kind, s.name) == ("Ingress", "ing")]
    assert found.body == '{"loadBalancer":{"ingress":[]}}'
