"""Hypothesis strategies for small Gateway API worlds (docs/architecture.md, "Tests").

Namespaces {a, b}; names {x, y, z}; hostnames {foo.test, *.test, bar.foo.test}; paths
{/, /a, /a/b, /ab}. References are drawn from the same names, so some resolve and some dangle;
ListenerSets name the same Gateways and reuse the listener names, ports and hostnames of
Gateways, so that their listeners collide; GRPCRoutes attach as HTTPRoutes do, so that the two
kinds meet on listeners; BackendTLSPolicies target the same Services.
``malformed`` replaces random fields with arbitrary JSON values.
"""

from __future__ import annotations

from typing import Any

import trustme
from hypothesis import strategies as st

GW = "gateway.networking.k8s.io/v1"
OURS = "coxswain-labs.dev/gateway-controller"
NAMESPACES = ("a", "b")
NAMES = ("x", "y", "z")
HOSTS = ("foo.test", "*.test", "bar.foo.test", "FOO.test", "1.2.3.4")
PATHS = ("/", "/a", "/a/b", "/ab", "a")
TIMES = ("2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z", None)
GRPC_SERVICES = ("a.S", "b.S", "a.S/x", "a\\..*", "[ab]\\.S", "(a")
GRPC_METHODS = ("M", "N", "2M", "M.*", "[MN]+")

_CA = trustme.CA()
_CERT = _CA.issue_cert("foo.test", "*.test")
TLS_DATA = {
    "tls.crt": _CERT.cert_chain_pems[0].bytes().decode(),
    "tls.key": _CERT.private_key_pem.bytes().decode(),
}
CA_PEM = _CA.cert_pem.bytes().decode()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _meta(name: str, namespace: str | None, created: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if created is not None:
        meta["creationTimestamp"] = created
    return meta


@st.composite
def gateway_classes(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": GW,
        "kind": "GatewayClass",
        "metadata": _meta(draw(st.sampled_from(("coxswain", "other"))), None, None),
        "spec": {"controllerName": draw(st.sampled_from((OURS, "example.com/other")))},
    }


@st.composite
def listeners(draw: st.DrawFn, index: int) -> dict[str, Any]:
    protocol = draw(st.sampled_from(("HTTP", "HTTPS", "TLS", "TCP", "UDP")))
    listener: dict[str, Any] = {
        "name": f"l{index}",
        "port": draw(st.sampled_from((80, 443, 8080))),
        "protocol": protocol,
    }
    if draw(st.booleans()):
        listener["hostname"] = draw(st.sampled_from(HOSTS[:3]))
    if protocol == "HTTPS":
        ref: dict[str, Any] = {"name": draw(st.sampled_from(NAMES))}
        if draw(st.booleans()):
            ref["namespace"] = draw(st.sampled_from(NAMESPACES))
        listener["tls"] = {"certificateRefs": [ref]}
    if protocol == "TLS":
        listener["tls"] = {"mode": draw(st.sampled_from(("Passthrough", "Terminate")))}
        if listener["tls"]["mode"] == "Terminate":
            listener["tls"]["certificateRefs"] = [{"name": draw(st.sampled_from(NAMES))}]
    origin = draw(st.sampled_from(("Same", "All", "Selector", None)))
    if origin is not None:
        namespaces: dict[str, Any] = {"from": origin}
        if origin == "Selector":
            namespaces["selector"] = {"matchLabels": {"team": draw(st.sampled_from(("t1", "t2")))}}
        listener["allowedRoutes"] = {"namespaces": namespaces}
    return listener


ADDRESS_RANGES = ("192.0.2.0/24",)
"""The ``--gateway-address-ranges`` the properties compile with."""
ADDRESSES = (
    {"type": "IPAddress", "value": "192.0.2.1"},
    {"type": "IPAddress", "value": "192.0.2.2"},
    {"type": "IPAddress", "value": "198.51.100.1"},
    {"type": "IPAddress"},
    {"type": "Hostname", "value": "gw.example"},
)


@st.composite
def gateways(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 3))
    spec: dict[str, Any] = {
        "gatewayClassName": draw(st.sampled_from(("coxswain", "coxswain", "coxswain", "other"))),
        "listeners": [draw(listeners(i)) for i in range(count)],
    }
    origin = draw(st.sampled_from((None, "None", "Same", "All", "All", "Selector")))
    if origin is not None:
        namespaces: dict[str, Any] = {"from": origin}
        if origin == "Selector":
            namespaces["selector"] = {"matchLabels": {"team": draw(st.sampled_from(("t1", "t2")))}}
        spec["allowedListeners"] = {"namespaces": namespaces}
    if draw(st.integers(0, 3)) == 0:  # static ones claimed by several Gateways, some unusable
        spec["addresses"] = draw(st.lists(st.sampled_from(ADDRESSES), min_size=1, max_size=3))
    if draw(st.integers(0, 4)) == 0:
        spec["tls"] = {
            "frontend": {
                "default": {
                    "validation": {
                        "caCertificateRefs": [
                            {"group": "", "kind": "ConfigMap", "name": draw(st.sampled_from(NAMES))}
                        ]
                    }
                }
            }
        }
    return _named(draw, "Gateway", spec)


def _named(
    draw: st.DrawFn, kind: str, spec: dict[str, Any], created: str | None = None
) -> dict[str, Any]:
    """A namespaced Gateway API object of ``kind``, its name, namespace and (unless given)
    creation time drawn from the small alphabets."""
    return {
        "apiVersion": GW,
        "kind": kind,
        "metadata": _meta(
            draw(st.sampled_from(NAMES)),
            draw(st.sampled_from(NAMESPACES)),
            created or draw(st.sampled_from(TIMES)),
        ),
        "spec": spec,
    }


@st.composite
def listener_sets(draw: st.DrawFn, created: str | None = None) -> dict[str, Any]:
    """A ListenerSet naming one of the Gateways the worlds draw (or none of them), with one to
    three listeners drawn as a Gateway's are (names l0..l2, so they collide with the
    Gateways' and each other's)."""
    parent: dict[str, Any] = {"name": draw(st.sampled_from(NAMES[:2]))}
    if draw(st.booleans()):
        parent["namespace"] = draw(st.sampled_from(NAMESPACES))
    count = draw(st.integers(1, 3))
    spec = {"parentRef": parent, "listeners": [draw(listeners(i)) for i in range(count)]}
    return _named(draw, "ListenerSet", spec, created)


@st.composite
def rules(draw: st.DrawFn) -> dict[str, Any]:
    rule: dict[str, Any] = {}
    if draw(st.booleans()):
        path_type = draw(st.sampled_from(("Exact", "PathPrefix", "RegularExpression")))
        value = draw(st.sampled_from((*PATHS, "/a[", "/a.*")))
        match: dict[str, Any] = {"path": {"type": path_type, "value": value}}
        if draw(st.booleans()):
            match["headers"] = [{"name": "X-A", "value": draw(st.sampled_from(("1", "2")))}]
        if draw(st.booleans()):
            match["method"] = draw(st.sampled_from(("GET", "POST")))
        rule["matches"] = [match]
    kind = draw(
        st.sampled_from(("none", "header", "redirect", "rewrite", "mirror", "cors", "bogus"))
    )
    if kind == "header":
        rule["filters"] = [
            {
                "type": "RequestHeaderModifier",
                "requestHeaderModifier": {"set": [{"name": "X-B", "value": "v"}]},
            }
        ]
    elif kind == "redirect":
        rule["filters"] = [
            {"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}
        ]
    elif kind == "rewrite":
        rule["filters"] = [
            {
                "type": "URLRewrite",
                "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/n"}},
            }
        ]
    elif kind == "mirror":
        rule["filters"] = [
            {
                "type": "RequestMirror",
                "requestMirror": {"backendRef": {"name": "x", "port": 80}, "percent": 50},
            }
        ]
    elif kind == "cors":
        origin = draw(st.sampled_from(("*", "https://a.example", "https://*.example", "ftp://x")))
        rule["filters"] = [
            {"type": "CORS", "cors": {"allowOrigins": [origin], "allowMethods": ["GET"]}}
        ]
    elif kind == "bogus":
        rule["filters"] = [{"type": draw(st.sampled_from(("ExtensionRef", "CORS")))}]
    refs = []
    for _ in range(draw(st.integers(0, 2))):
        ref: dict[str, Any] = {
            "name": draw(st.sampled_from(NAMES)),
            "port": draw(st.sampled_from((80, 8080))),
            "weight": draw(st.sampled_from((0, 1, 3))),
        }
        if draw(st.booleans()):
            ref["namespace"] = draw(st.sampled_from(NAMESPACES))
        if draw(st.integers(0, 5)) == 0:
            ref["kind"] = "Pod"
        refs.append(ref)
    if refs:
        rule["backendRefs"] = refs
    return rule


@st.composite
def httproutes(draw: st.DrawFn) -> dict[str, Any]:
    parents = []
    for _ in range(draw(st.integers(1, 2))):
        parent: dict[str, Any] = {"name": draw(st.sampled_from(NAMES[:2]))}
        if draw(st.integers(0, 2)) == 0:
            parent.update(group="gateway.networking.k8s.io", kind="ListenerSet")
        if draw(st.booleans()):
            parent["namespace"] = draw(st.sampled_from(NAMESPACES))
        if draw(st.integers(0, 3)) == 0:
            parent["sectionName"] = draw(st.sampled_from(("l0", "l1", "nope")))
        if draw(st.integers(0, 3)) == 0:
            parent["port"] = draw(st.sampled_from((80, 443)))
        parents.append(parent)
    spec: dict[str, Any] = {
        "parentRefs": parents,
        "rules": draw(st.lists(rules(), min_size=1, max_size=3)),
    }
    if draw(st.booleans()):
        spec["hostnames"] = draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=2))
    return _named(draw, "HTTPRoute", spec)


@st.composite
def grpc_rules(draw: st.DrawFn) -> dict[str, Any]:
    """A GRPCRoute rule: method matches of every GEP-1016 shape (and some the CRD refuses),
    header matches, a filter of either kind's, backendRefs drawn as HTTPRoute's."""
    rule = draw(rules())
    rule.pop("matches", None)
    if rule.get("filters") and draw(st.booleans()):
        del rule["filters"]  # HTTPRoute-only filters make the rule invalid: not always
    matches = []
    for _ in range(draw(st.integers(0, 2))):
        match: dict[str, Any] = {}
        kind = draw(st.sampled_from(("none", "Exact", "RegularExpression")))
        if kind != "none":
            method: dict[str, Any] = {"type": kind}
            if draw(st.booleans()):
                method["service"] = draw(st.sampled_from(GRPC_SERVICES))
            if draw(st.booleans()):
                method["method"] = draw(st.sampled_from(GRPC_METHODS))
            match["method"] = method
        if draw(st.booleans()):
            match["headers"] = [{"name": "X-A", "value": draw(st.sampled_from(("1", "2")))}]
        matches.append(match)
    rule["matches"] = matches  # an empty list matches every call, as no list does
    return rule


@st.composite
def grpcroutes(draw: st.DrawFn) -> dict[str, Any]:
    """A GRPCRoute with the parents and hostnames an HTTPRoute would draw, so that the two kinds
    meet on listeners (GEP-1016, "Cross Serving")."""
    route = draw(httproutes())
    route["kind"] = "GRPCRoute"
    route["spec"]["rules"] = draw(st.lists(grpc_rules(), min_size=0, max_size=3))
    return route


@st.composite
def stream_routes(draw: st.DrawFn) -> dict[str, Any]:
    """A TLSRoute, TCPRoute or UDPRoute with the parents an HTTPRoute would draw (so that each
    kind meets listeners of every protocol) and one rule of HTTPRoute-drawn backendRefs."""
    route = draw(httproutes())
    kind = draw(st.sampled_from(("TLSRoute", "TCPRoute", "UDPRoute")))
    route["kind"] = kind
    backends = draw(rules()).get("backendRefs", [])
    route["spec"]["rules"] = [{"backendRefs": backends}]
    if kind != "TLSRoute":
        route["spec"].pop("hostnames", None)
    return route


@st.composite
def backend_tls_policies(draw: st.DrawFn) -> dict[str, Any]:
    """A BackendTLSPolicy on one of the Services the worlds draw (or a port of one), trusting
    a ConfigMap, a Secret or the system's CAs, with a hostname and maybe SANs; creation times
    collide so that precedence falls to namespace/name."""
    target: dict[str, Any] = {"group": "", "kind": "Service", "name": draw(st.sampled_from(NAMES))}
    if draw(st.booleans()):
        target["sectionName"] = draw(st.sampled_from(("http", "")))
    validation: dict[str, Any] = {"hostname": draw(st.sampled_from(HOSTS[:3]))}
    trust = draw(st.sampled_from(("ConfigMap", "Secret", "System", "Other")))
    if trust == "System":
        validation["wellKnownCACertificates"] = "System"
    else:
        validation["caCertificateRefs"] = [
            {"group": "", "kind": trust, "name": draw(st.sampled_from(NAMES))}
        ]
    if draw(st.booleans()):
        validation["subjectAltNames"] = [{"type": "Hostname", "hostname": "foo.test"}]
    spec = {"targetRefs": [target], "validation": validation}
    return {**_named(draw, "BackendTLSPolicy", spec), "apiVersion": GW}


@st.composite
def supporting(draw: st.DrawFn) -> dict[str, Any]:
    """Services, EndpointSlices, Secrets, ConfigMaps, ReferenceGrants and Namespaces."""
    kind = draw(
        st.sampled_from(
            ("Service", "EndpointSlice", "Secret", "ConfigMap", "ReferenceGrant", "Namespace")
        )
    )
    namespace = draw(st.sampled_from(NAMESPACES))
    name = draw(st.sampled_from(NAMES))
    if kind == "Service":
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(name, namespace, None),
            "spec": {"ports": [{"port": draw(st.sampled_from((80, 8080)))}]},
        }
    if kind == "EndpointSlice":
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                **_meta(f"{name}-1", namespace, None),
                "labels": {"kubernetes.io/service-name": name},
            },
            "ports": [{"name": "", "port": 9000}],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": draw(st.booleans())}}
            ],
        }
    if kind == "Secret":
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _meta(name, namespace, None),
            "type": draw(st.sampled_from(("kubernetes.io/tls", "Opaque"))),
            "stringData": TLS_DATA
            if draw(st.booleans())
            else {"tls.crt": "junk", "tls.key": "junk"},
        }
    if kind == "ConfigMap":
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(name, namespace, None),
            "data": {"ca.crt": CA_PEM if draw(st.booleans()) else "junk"},
        }
    if kind == "ReferenceGrant":
        return {
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "kind": "ReferenceGrant",
            "metadata": _meta(name, namespace, None),
            "spec": {
                "from": [
                    {
                        "group": "gateway.networking.k8s.io",
                        "kind": draw(
                            st.sampled_from(("Gateway", "ListenerSet", "HTTPRoute", "GRPCRoute"))
                        ),
                        "namespace": draw(st.sampled_from(NAMESPACES)),
                    }
                ],
                "to": [{"group": "", "kind": draw(st.sampled_from(("Secret", "Service")))}],
            },
        }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"team": draw(st.sampled_from(("t1", "t2")))}},
    }


def _corrupt(body: dict[str, Any], value: Any, depth: int) -> dict[str, Any]:
    """Replace one field at some depth of ``spec`` (or the body) with ``value``."""
    target: Any = body.get("spec", body)
    for _ in range(depth):
        if isinstance(target, dict) and target:
            key = sorted(target)[0]
            if isinstance(target[key], dict | list) and target[key]:
                target = target[key] if isinstance(target[key], dict) else target[key][0]
                continue
        break
    if isinstance(target, dict) and target:
        target[sorted(target)[-1]] = value
    return body


@st.composite
def malformed(draw: st.DrawFn) -> dict[str, Any]:
    body = draw(
        st.one_of(
            gateways(),
            listener_sets(),
            httproutes(),
            grpcroutes(),
            stream_routes(),
            gateway_classes(),
            supporting(),
            backend_tls_policies(),
        )
    )
    return _corrupt(body, draw(json_values), draw(st.integers(0, 3)))


OUR_CLASS = {
    "apiVersion": GW,
    "kind": "GatewayClass",
    "metadata": {"name": "coxswain"},
    "spec": {"controllerName": OURS},
}

worlds = st.lists(
    st.one_of(
        gateway_classes(),
        gateways(),
        listener_sets(),
        httproutes(),
        httproutes(),
        grpcroutes(),
        grpcroutes(),
        stream_routes(),
        backend_tls_policies(),
        supporting(),
        supporting(),
    ),
    min_size=1,
    max_size=16,
).map(lambda bodies: [OUR_CLASS, *bodies])
messy_worlds = st.lists(
    st.one_of(
        gateway_classes(),
        gateways(),
        listener_sets(),
        httproutes(),
        grpcroutes(),
        stream_routes(),
        supporting(),
        malformed(),
    ),
    min_size=1,
    max_size=12,
)
