"""Hypothesis strategies for worlds of shared and dedicated Gateways (the scope properties):
overlapping hostnames, cross-namespace routes of every kind (HTTPRoute, GRPCRoute, TLSRoute,
TCPRoute, UDPRoute), shared TLS Secrets and Ingresses."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .gateway_strategies import OUR_CLASS, TLS_DATA

GW = "gateway.networking.k8s.io/v1"
NAMES = ("g0", "g1", "g2", "g3")
NAMESPACES = ("a", "b")
HOSTNAMES = (None, "*.test", "foo.test")
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute")


def gateway(
    name: str, namespace: str, *, dedicated: bool, ports: list[int], https: bool, streams: bool
) -> dict[str, Any]:
    listeners: list[dict[str, Any]] = [
        {
            "name": f"l{p}",
            "port": p,
            "protocol": "HTTP",
            "allowedRoutes": {"namespaces": {"from": "All"}},
        }
        for p in ports
    ]
    if https:
        listeners.append(
            {
                "name": "tls",
                "port": 443,
                "protocol": "HTTPS",
                "hostname": "*.test",
                "tls": {"certificateRefs": [{"name": "cert", "namespace": "a"}]},
                "allowedRoutes": {"namespaces": {"from": "All"}},
            }
        )
    if streams:  # a listener of each layer-4 protocol
        listeners.extend(
            {
                "name": protocol.lower(),
                "port": port,
                "protocol": protocol,
                "allowedRoutes": {"namespaces": {"from": "All"}},
                **({"tls": {"mode": "Passthrough"}} if protocol == "TLS" else {}),
            }
            for protocol, port in (("TLS", 8443), ("TCP", 5432), ("UDP", 5353))
        )
    spec: dict[str, Any] = {"gatewayClassName": "coxswain", "listeners": listeners}
    if dedicated:
        spec["infrastructure"] = {
            "parametersRef": {
                "group": "gateway.coxswain-labs.dev",
                "kind": "CoxswainGatewayParameters",
                "name": "p",
            }
        }
    return {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


@st.composite
def gateways(draw: st.DrawFn, name: str, namespace: str) -> list[dict[str, Any]]:
    dedicated = draw(st.booleans())
    ports = sorted(draw(st.sets(st.sampled_from((80, 8080, 9000)), min_size=1, max_size=2)))
    bodies = [
        gateway(
            name,
            namespace,
            dedicated=dedicated,
            ports=ports,
            https=draw(st.booleans()),
            streams=draw(st.booleans()),
        )
    ]
    if dedicated and draw(st.booleans()):
        bodies.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"{name}-coxswain", "namespace": namespace},
                "status": {"readyReplicas": 1},
            }
        )
    return bodies


@st.composite
def routes(draw: st.DrawFn, index: int) -> dict[str, Any]:
    parents = [
        {"name": draw(st.sampled_from(NAMES)), "namespace": draw(st.sampled_from(NAMESPACES))}
        for _ in range(draw(st.integers(1, 2)))
    ]
    spec: dict[str, Any] = {
        "parentRefs": parents,
        "rules": [{"backendRefs": [{"name": "svc", "namespace": "a", "port": 80}]}],
    }
    kind = draw(st.sampled_from(ROUTE_KINDS))
    host = draw(st.sampled_from(HOSTNAMES))
    if host and kind not in ("TCPRoute", "UDPRoute"):
        spec["hostnames"] = [host]
    return {
        "apiVersion": GW,
        "kind": kind,
        "metadata": {"name": f"r{index}", "namespace": draw(st.sampled_from(NAMESPACES))},
        "spec": spec,
    }


SUPPORT = [
    OUR_CLASS,
    *(
        {
            "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
            "kind": "CoxswainGatewayParameters",
            "metadata": {"name": "p", "namespace": ns},
            "spec": {"replicas": 1},
        }
        for ns in NAMESPACES
    ),
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "cert", "namespace": "a"},
        "type": "kubernetes.io/tls",
        "stringData": TLS_DATA,
    },
    {
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": {"name": "all", "namespace": "a"},
        "spec": {
            "from": [
                {"group": "gateway.networking.k8s.io", "kind": k, "namespace": "b"}
                for k in ("Gateway", *ROUTE_KINDS)
            ],
            "to": [{"group": "", "kind": "Secret"}, {"group": "", "kind": "Service"}],
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": "a"},
        "spec": {"ports": [{"port": 80}]},
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": "coxswain"},
        "spec": {"controller": "coxswain-labs.dev/ingress-controller"},
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "ing", "namespace": "a"},
        "spec": {
            "ingressClassName": "coxswain",
            "rules": [
                {
                    "host": "foo.test",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "svc", "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ],
        },
    },
]


@st.composite
def worlds(draw: st.DrawFn) -> list[dict[str, Any]]:
    chosen = draw(
        st.sets(
            st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMESPACES)), min_size=1, max_size=5
        )
    )
    bodies = list(SUPPORT)
    for name, namespace in sorted(chosen):
        bodies.extend(draw(gateways(name, namespace)))
    bodies.extend(draw(routes(i)) for i in range(draw(st.integers(0, 5))))
    return bodies
