"""compile.tables: the exact text of each table where a field is absent and a default shows."""

from __future__ import annotations

import json
from typing import Any

from pyrsistent import pvector

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.provision import DesiredObject, DesiredObjects
from coxswain.compile.status import ObjectStatus
from coxswain.compile.tables import diagnostics_table, infra_table, status_table


def _status(kind: str, body: dict[str, Any]) -> ObjectStatus:
    return ObjectStatus(
        api_version="v1", kind=kind, namespace="app", name="x", generation=1, body=json.dumps(body)
    )


def _object(kind: str, namespace: str, body: dict[str, Any]) -> DesiredObject:
    return DesiredObject(
        api_version="v1", kind=kind, namespace=namespace, name="o", body=json.dumps(body)
    )


def test_a_finding_without_a_place_or_field_shows_dashes() -> None:
    finding = Diagnostic(key=None, field="", severity=Severity.ERROR, reason="R", message="m")
    assert diagnostics_table([finding]) == (
        "WHERE  SEVERITY  KIND  NAME  FIELD  MESSAGE\n-      error     -     -     -      m (R)\n"
    )


def test_a_listener_without_routes_or_conditions_and_a_parent_without_kind_or_namespace() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "Ok"}
    gateway = {
        "listeners": [{"name": "a", "conditions": [ready]}, {"name": "b"}],
        "parents": [{"parentRef": {"name": "g"}, "conditions": [ready]}],
        "addresses": [],
    }
    assert status_table([_status("Gateway", gateway)]).splitlines() == [
        "KIND     NAME   PART                   CONDITION   REASON  MESSAGE",
        "Gateway  app/x  listener a (0 routes)  Ready=True  Ok",
        "Gateway  app/x  parent Gateway /g      Ready=True  Ok",
        "Gateway  app/x  addresses              -           -       none yet",
    ]


def test_load_balancer_addresses_show_the_ip_else_the_hostname_else_nothing() -> None:
    found = [{"ip": "192.0.2.1", "hostname": "ignored.example"}, {"hostname": "lb.example"}, {}]
    ingress = _status("Ingress", {"loadBalancer": {"ingress": found}})
    empty = _status("Ingress", {"loadBalancer": {}})
    assert status_table([ingress, empty]).splitlines() == [
        "KIND     NAME   PART          CONDITION  REASON  MESSAGE",
        "Ingress  app/x  loadBalancer  -          -       192.0.2.1, lb.example,",
        "Ingress  app/x  loadBalancer  -          -       none yet",
    ]


def test_an_object_without_labels_or_annotations_shows_defaults_in_its_detail() -> None:
    service = {
        "spec": {
            "ports": [{"port": 80}, {"port": 443, "targetPort": 8443}],
            "externalIPs": ["192.0.2.1", "192.0.2.2"],
        }
    }
    autoscaler = {"metadata": {}, "spec": {"maxReplicas": 3}}
    desired = DesiredObjects(
        objects=pvector(
            [_object("Service", "app", service), _object("HorizontalPodAutoscaler", "", autoscaler)]
        ),
        deletions=pvector(),
        diagnostics=pvector(),
    )
    assert infra_table(desired).splitlines() == [
        "ACTION  KIND                     NAME   ROLE  GATEWAY  DETAIL",
        "apply   Service                  app/o  -     -        ClusterIP 80->80, 443->8443,"
        " external 192.0.2.1, external 192.0.2.2",
        "apply   HorizontalPodAutoscaler  o      -     -        1-3 replicas",
    ]
