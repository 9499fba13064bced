"""compile.backends: ``service-upstream`` to an ExternalName Service reaches its DNS name."""

from __future__ import annotations

from pyrsistent import pvector

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot import Endpoint
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule


def test_the_cluster_ip_of_an_external_name_service_is_its_external_name() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ext", "namespace": "apps"},
        "spec": {"type": "ExternalName", "externalName": "db.example.com", "ports": [{"port": 80}]},
    }
    shop = ingress(
        "shop",
        rule("a.example", path("/", "ext")),
        annotations={"nginx.ingress.kubernetes.io/service-upstream": "true"},
    )
    snapshot = compile(build_state([INGRESS_CLASS, shop, service]), SharedPool()).snapshot
    assert dict(snapshot.endpoints) == {
        "apps/ext/80/cluster-ip": pvector([Endpoint(address="db.example.com", port=80)])
    }
