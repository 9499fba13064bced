"""compile.model decoders of TCPRoute, TLSRoute and GRPCRoute, and the HTTPRoute CORS filter:
rule names, whether hostnames were written, and ``maxAge`` at its lower bound, exactly."""

from __future__ import annotations

from typing import Any

from pyrsistent import pvector

from coxswain.compile.model.decode import Decoded, decode_object

GW = "gateway.networking.k8s.io/v1"


def _decoded(kind: str, spec: dict[str, Any]) -> Any:
    found = decode_object(
        {
            "apiVersion": GW,
            "kind": kind,
            "metadata": {"name": "r", "namespace": "app"},
            "spec": spec,
        }
    )
    assert isinstance(found, Decoded)
    return found.obj


def test_a_tcp_route_keeps_its_rule_names_and_reads_no_hostnames() -> None:
    route = _decoded(
        "TCPRoute",
        {
            "hostnames": ["a.example"],
            "rules": [{"name": "first", "backendRefs": [{"name": "db", "port": 5432}]}],
        },
    )
    assert [rule.name for rule in route.rules] == ["first"]
    assert (route.hostnames, route.has_hostnames) == (pvector(), False)


def test_tls_and_grpc_routes_say_their_hostnames_were_written() -> None:
    spec = {"hostnames": ["a.example"], "rules": [{"backendRefs": [{"name": "s", "port": 443}]}]}
    tls = _decoded("TLSRoute", spec)
    assert (tls.hostnames, tls.has_hostnames) == (pvector(["a.example"]), True)
    grpc = _decoded("GRPCRoute", spec)
    assert (grpc.hostnames, grpc.has_hostnames) == (pvector(["a.example"]), True)


def test_a_cors_max_age_of_one_second_is_kept() -> None:
    route = _decoded(
        "HTTPRoute",
        {"rules": [{"filters": [{"type": "CORS", "cors": {"allowOrigins": ["*"], "maxAge": 1}}]}]},
    )
    [cors_filter] = route.rules[0].filters
    assert cors_filter.cors.max_age == 1
    assert route.diagnostics == pvector()
