"""Hypothesis strategies: small Kubernetes worlds from small alphabets, so that collisions happen.

Two families of raw API bodies (plain dicts, as ``kubectl get -o yaml`` or a JSON dump gives
them):

- **well-formed** (``ingress_classes``, ``ingresses``, ``services``, ``endpoint_slices``,
  ``secrets``, ``worlds``): valid objects whose names, hosts, paths, ports and references are
  drawn from tiny alphabets, so that references sometimes resolve and sometimes dangle, two
  Ingresses often claim the same host and path, and timestamps tie;
- **malformed** (``malformed``, ``malformed_worlds``): the same shapes with arbitrary JSON values
  put into random fields, fields deleted, wrong types, non-object bodies, huge numbers, unicode
  and a few values known to be awkward for parsers (unicode digits, lone surrogates, timestamps
  at the edge of the datetime range).

Certificates are generated once, at import, with trustme; strategies draw from them.
"""

from __future__ import annotations

import base64
import copy
import functools
from typing import Any, Final

import trustme
from hypothesis import strategies as st

from coxswain.compile.config import DEFAULT_INGRESS_CONTROLLER
from coxswain.compile.model.keys import ObjectKey

__all__ = [
    "ADDRESSES",
    "BACKENDS",
    "CLASS_NAMES",
    "EDGE_REQUEST_HOSTS",
    "EDGE_TIMESTAMPS",
    "FOREIGN_CONTROLLER",
    "HOSTS",
    "KEYPAIRS",
    "NAMES",
    "NAMESPACES",
    "OUR_CONTROLLER",
    "PATHS",
    "PATH_TYPES",
    "REQUEST_HOSTS",
    "REQUEST_PATHS",
    "TIMESTAMPS",
    "Body",
    "any_body",
    "endpoint_slices",
    "event_keys",
    "ingress_classes",
    "ingresses",
    "json_values",
    "malformed",
    "malformed_worlds",
    "requests",
    "secrets",
    "services",
    "unique_keys",
    "with_duplicates",
    "worlds",
]

Body = dict[str, Any]

# --- alphabets -----------------------------------------------------------------------------------

OUR_CONTROLLER: Final = DEFAULT_INGRESS_CONTROLLER
FOREIGN_CONTROLLER: Final = "example.com/other-controller"
NAMESPACES: Final = ("a", "b")
NAMES: Final = ("x", "y", "z")
CLASS_NAMES: Final = ("ours", "foreign", "missing")  # "missing" never has an IngressClass
HOSTS: Final = ("foo.test", "*.test", "bar.foo.test", "FOO.test")
PATHS: Final = ("/", "/a", "/a/b", "/ab", "/a/")
PATH_TYPES: Final = ("Exact", "Prefix", "ImplementationSpecific")
PORT_NUMBERS: Final = (80, 8080, 9090)  # 9090 is never a Service port: it dangles
PORT_NAMES: Final = ("http", "alt", "nope")  # "nope" dangles too
SERVICE_PORTS: Final = (("http", 80, 8080), ("alt", 8080, 8081))
ADDRESSES: Final = ("10.0.0.1", "10.0.0.2", "10.0.0.3")
TIMESTAMPS: Final = (
    "2024-01-01T00:00:00Z",
    "2024-01-01T01:00:00+01:00",  # the same instant as the first, written differently
    "2024-01-02T00:00:00Z",
    "2023-12-31T23:59:59.5Z",
)
EDGE_TIMESTAMPS: Final = ("0999-06-01T00:00:00Z",)  # valid RFC 3339, before year 1000
SLICE_NAMES: Final = ("x-1", "x-2", "y-1", "z-1")
SECRET_NAMES: Final = NAMES

# Requests: hosts from the alphabet with case variants and ports; paths a little beyond the
# paths of the rules, so that element-wise prefix matching is exercised.
REQUEST_HOSTS: Final = (
    "foo.test",
    "FOO.TEST",
    "Foo.Test",
    "bar.foo.test",
    "BAR.foo.test",
    "baz.test",
    "x.bar.foo.test",
    "test",
    "other.example",
)
EDGE_REQUEST_HOSTS: Final = (".test", "foo.test.", "[::1]")
REQUEST_PATHS: Final = (
    "/",
    "/a",
    "/a/",
    "/a/b",
    "/a/b/",
    "/a/b/c",
    "/ab",
    "/ab/",
    "/abc",
    "/A",
    "/b",
)
REQUEST_QUERIES: Final = ("", "?q=1", "?a/b", "?")


# --- certificates, generated once ----------------------------------------------------------------


def _keypairs() -> dict[str, tuple[bytes, bytes]]:
    ca = trustme.CA()
    pairs: dict[str, tuple[bytes, bytes]] = {}
    for label, names in (
        ("foo", ("foo.test", "*.test")),
        ("bar", ("bar.foo.test",)),
        ("other", ("other.example",)),
    ):
        leaf = ca.issue_cert(*names)
        chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
        pairs[label] = (chain, leaf.private_key_pem.bytes())
    pairs["ca"] = (ca.cert_pem.bytes(), b"")
    return pairs


KEYPAIRS: Final = _keypairs()
_GARBAGE_PEM: Final = b"-----BEGIN CERTIFICATE-----\nTUlJQg==\n-----END CERTIFICATE-----\n"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- well-formed bodies --------------------------------------------------------------------------
#
# Parts of bodies are enumerated once into pools and drawn with one ``sampled_from`` each: the
# worlds stay as varied, and generating them costs a fraction of drawing every field.


def _backend(name: str, port: Body) -> Body:
    return {"service": {"name": name, "port": port}}


BACKENDS: Final = tuple(
    _backend(name, port)
    for name in NAMES
    for port in (
        *({"number": number} for number in PORT_NUMBERS),
        *({"name": port_name} for port_name in PORT_NAMES),
    )
)
# A path may be left out only for ImplementationSpecific (the API server requires it for Exact
# and Prefix).
PATH_ITEMS: Final = tuple(
    {"pathType": path_type, "backend": backend, **({} if path is None else {"path": path})}
    for path_type in PATH_TYPES
    for path in (*PATHS, *((None,) if path_type == "ImplementationSpecific" else ()))
    for backend in BACKENDS
)
_CLASS_CHOICES: Final = (
    *(("field", name) for name in CLASS_NAMES),
    *(("field", name) for name in CLASS_NAMES),
    *(("annotation", name) for name in CLASS_NAMES),
    ("none", None),
    ("none", None),
)
# For the route oracle: mostly our class, so that most Ingresses of a world are served.
_OURS_CHOICES: Final = (
    *(("field", "ours") for _ in range(12)),
    ("annotation", "ours"),
    ("annotation", "ours"),
    *_CLASS_CHOICES,
)
_CLASS_CHOICE_STRATEGIES: Final = {
    False: st.sampled_from(_CLASS_CHOICES),
    True: st.sampled_from(_OURS_CHOICES),
}
_SSL_REDIRECT: Final = (
    None,
    None,
    None,
    None,
    *(
        {prefix + "ssl-redirect": value}
        for prefix in ("coxswain-labs.dev/", "nginx.ingress.kubernetes.io/")
        for value in ("false", "true", "maybe")
    ),
)
_TLS_HOSTS: Final = (
    (),
    *((host,) for host in HOSTS),
    *((a, b) for i, a in enumerate(HOSTS) for b in HOSTS[i + 1 :]),
)
TLS_ENTRIES: Final = tuple(
    {**({"hosts": list(hosts)} if hosts else {}), **({"secretName": name} if name else {})}
    for hosts in _TLS_HOSTS
    for name in (*SECRET_NAMES, *SECRET_NAMES, None)
)


def _service_specs() -> tuple[Body, ...]:
    specs: list[Body] = [{"type": "ExternalName", "externalName": "ext.example"}]
    for _, port, target in SERVICE_PORTS:
        specs.append(
            {
                "type": "ExternalName",
                "externalName": "ext.example",
                "ports": [{"port": port, "targetPort": target, "protocol": "TCP"}],
            }
        )
    cluster = {"type": "ClusterIP", "clusterIP": "10.96.0.10"}
    orders = ((0,), (1,), (0, 1), (1, 0))
    for order in orders:
        for by_name in (False, True):
            ports = [
                {
                    "name": SERVICE_PORTS[i][0],
                    "port": SERVICE_PORTS[i][1],
                    "targetPort": SERVICE_PORTS[i][0] if by_name else SERVICE_PORTS[i][2],
                    "protocol": "TCP",
                }
                for i in order
            ]
            specs += [{**cluster, "ports": ports}, {**cluster, "ports": ports}]
    for _, port, target in SERVICE_PORTS:
        specs.append(
            {**cluster, "ports": [{"port": port, "targetPort": target, "protocol": "TCP"}]}
        )
    specs.append({**cluster, "ports": []})
    return tuple(specs)


SERVICE_SPECS: Final = _service_specs()


def _slice_ports() -> tuple[list[Body], ...]:
    single = [
        {**({"name": name} if name is not None else {}), "port": port, "protocol": "TCP"}
        for name in ("http", "alt", "", None)
        for port in (8080, 8081)
    ]
    pairs = [[a, b] for a in single for b in single if a.get("name") != b.get("name")]
    return ([], *([item] for item in single), *([item] for item in single), *pairs[::3])


SLICE_PORTS: Final = _slice_ports()
SLICE_ENDPOINTS: Final = tuple(
    {"addresses": [address], **({} if ready is None else {"conditions": {"ready": ready}})}
    for address in ADDRESSES
    for ready in (True, True, False, None)
)


def _metadata(
    draw: st.DrawFn,
    name: str,
    namespace: str | None,
    *,
    timestamps: tuple[str, ...] = TIMESTAMPS,
) -> Body:
    meta: Body = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    created = draw(st.sampled_from((None, *timestamps)))
    if created is not None:
        meta["creationTimestamp"] = created
    generation = draw(st.integers(0, 3))
    if generation:  # read back from a cluster rather than a raw manifest
        meta["uid"] = f"uid-{namespace or ''}-{name}"
        meta["resourceVersion"] = "1"
        meta["generation"] = generation
    return meta


@st.composite
def ingress_classes(draw: st.DrawFn, *, default_values: tuple[str, ...] = ("true",)) -> Body:
    """An IngressClass named ``ours`` or ``foreign``, of our controller or another, maybe default.

    Args:
        default_values: the values ``is-default-class`` may take when it is set (besides
            ``"false"``).
    """
    name, controller = draw(
        st.sampled_from(
            (
                ("ours", OUR_CONTROLLER),
                ("ours", OUR_CONTROLLER),
                ("ours", FOREIGN_CONTROLLER),
                ("foreign", FOREIGN_CONTROLLER),
                ("foreign", FOREIGN_CONTROLLER),
                ("foreign", OUR_CONTROLLER),
            )
        )
    )
    meta = _metadata(draw, name, None)
    default = draw(st.sampled_from((None, None, "false", *default_values, *default_values)))
    if default is not None:
        meta["annotations"] = {"ingressclass.kubernetes.io/is-default-class": default}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": meta,
        "spec": {"controller": controller},
    }


@st.composite
def _rules(draw: st.DrawFn, *, allow_pathless: bool) -> Body:
    rule: Body = {}
    host = draw(st.sampled_from((None, *HOSTS)))
    if host is not None:
        rule["host"] = host
    if allow_pathless and not draw(st.integers(0, 5)):
        return rule  # a rule without http: it only names its host
    rule["http"] = {"paths": draw(_PATH_LISTS)}
    return rule


_PATH_LISTS: Final = st.lists(st.sampled_from(PATH_ITEMS), min_size=1, max_size=3)
_RULE_LISTS: Final = {
    flag: st.lists(_rules(allow_pathless=flag), max_size=3) for flag in (False, True)
}
_SSL_REDIRECTS: Final = st.sampled_from(_SSL_REDIRECT)
_BACKENDS: Final = st.sampled_from(BACKENDS)
_MAYBE_BACKENDS: Final = st.sampled_from((*(None for _ in BACKENDS), *BACKENDS))
_TLS_LISTS: Final = st.lists(st.sampled_from(TLS_ENTRIES), min_size=1, max_size=2)


@st.composite
def ingresses(
    draw: st.DrawFn,
    *,
    tls: bool = True,
    allow_pathless: bool = True,
    timestamps: tuple[str, ...] = TIMESTAMPS,
    mostly_ours: bool = False,
) -> Body:
    """An Ingress: class by field, by legacy annotation or none; rules, TLS, default backend.

    Args:
        tls: whether ``spec.tls`` may be drawn.
        mostly_ours: whether to name the class ``ours`` more often than the others.
        allow_pathless: whether a rule may come without ``http`` (a host and nothing else).
        timestamps: the creation timestamps to draw from (or none).
    """
    name = draw(st.sampled_from(NAMES))
    namespace = draw(st.sampled_from(NAMESPACES))
    meta = _metadata(draw, name, namespace, timestamps=timestamps)
    spec: Body = {}
    annotations: Body = {}
    how, class_name = draw(_CLASS_CHOICE_STRATEGIES[mostly_ours])
    if how == "field":
        spec["ingressClassName"] = class_name
    elif how == "annotation":
        annotations["kubernetes.io/ingress.class"] = class_name
    annotations.update(draw(_SSL_REDIRECTS) or {})
    if annotations:
        meta["annotations"] = annotations
    rules = draw(_RULE_LISTS[allow_pathless])
    default = draw(_MAYBE_BACKENDS)
    if not rules and default is None:
        default = draw(_BACKENDS)  # the API server requires one of them
    if rules:
        spec["rules"] = rules
    if default is not None:
        spec["defaultBackend"] = default
    if tls and draw(st.integers(0, 2)) == 0:
        spec["tls"] = draw(_TLS_LISTS)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta,
        "spec": spec,
    }


_SERVICE_SPECS: Final = st.sampled_from(SERVICE_SPECS)


@st.composite
def services(draw: st.DrawFn) -> Body:
    """A ClusterIP Service with named ports, one unnamed port, or none; or an ExternalName."""
    name = draw(st.sampled_from(NAMES))
    namespace = draw(st.sampled_from(NAMESPACES))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(draw, name, namespace),
        "spec": draw(_SERVICE_SPECS),
    }


_SLICE_PORTS: Final = st.sampled_from(SLICE_PORTS)
_SLICE_ENDPOINT_LISTS: Final = st.lists(st.sampled_from(SLICE_ENDPOINTS), max_size=3)


@st.composite
def endpoint_slices(draw: st.DrawFn) -> Body:
    """An EndpointSlice labelled for a Service of the alphabet (usually the one it is named for)."""
    name = draw(st.sampled_from(SLICE_NAMES))
    namespace = draw(st.sampled_from(NAMESPACES))
    meta = _metadata(draw, name, namespace)
    owner = name.split("-")[0]
    service = draw(st.sampled_from((owner, owner, owner, *NAMES, None)))
    if service is not None:
        meta["labels"] = {"kubernetes.io/service-name": service}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": meta,
        "addressType": "IPv4",
        "ports": draw(_SLICE_PORTS),
        "endpoints": draw(_SLICE_ENDPOINT_LISTS),
    }


_SECRET_CONTENT: Final = (
    "foo",
    "bar-as-string",
    "bar",
    "other",
    "foo+ca",
    "foo-as-string",
    "mismatch",
    "garbage",
    "no-key",
    "opaque",
    "ca-only",
)


def _secret_payload(content: str) -> Body:
    foo_chain, foo_key = KEYPAIRS["foo"]
    if content in ("foo", "bar", "other"):
        chain, key = KEYPAIRS[content]
        return {"data": {"tls.crt": _b64(chain), "tls.key": _b64(key)}}
    if content == "foo+ca":
        return {"data": {"tls.crt": _b64(foo_chain + KEYPAIRS["ca"][0]), "tls.key": _b64(foo_key)}}
    if content in ("foo-as-string", "bar-as-string"):
        chain, key = KEYPAIRS[content.split("-")[0]]
        return {"stringData": {"tls.crt": chain.decode(), "tls.key": key.decode()}}
    if content == "mismatch":
        return {"data": {"tls.crt": _b64(foo_chain), "tls.key": _b64(KEYPAIRS["bar"][1])}}
    if content == "garbage":
        return {"data": {"tls.crt": _b64(_GARBAGE_PEM), "tls.key": _b64(b"not a key")}}
    if content == "no-key":
        return {"data": {"tls.crt": _b64(foo_chain)}}
    if content == "opaque":
        return {"type": "Opaque", "data": {"tls.crt": _b64(foo_chain), "tls.key": _b64(foo_key)}}
    return {"data": {"ca.crt": _b64(KEYPAIRS["ca"][0])}}


SECRET_PAYLOADS: Final = tuple(_secret_payload(content) for content in _SECRET_CONTENT)


_SECRET_PAYLOADS: Final = st.sampled_from(SECRET_PAYLOADS)


@st.composite
def secrets(draw: st.DrawFn) -> Body:
    """A TLS Secret: a valid pair (three certificates to choose from) or one of several faults."""
    name = draw(st.sampled_from(SECRET_NAMES))
    namespace = draw(st.sampled_from(NAMESPACES))
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(draw, name, namespace),
        "type": "kubernetes.io/tls",
        **draw(_SECRET_PAYLOADS),
    }


@st.composite
def worlds(
    draw: st.DrawFn,
    *,
    tls: bool = True,
    allow_pathless: bool = True,
    timestamps: tuple[str, ...] = TIMESTAMPS,
    default_values: tuple[str, ...] = ("true",),
    max_ingresses: int = 4,
    routable: bool = False,
) -> list[Body]:
    """A list of well-formed bodies of every kind (keys may repeat: dumps can hold duplicates).

    Args:
        routable: bias the world toward traffic: usually our IngressClass first, at least one
            Ingress, mostly of our class, and at least one Service and EndpointSlice.
    """
    bodies: list[Body] = []
    if routable and draw(st.integers(0, 5)):
        default = draw(st.sampled_from((None, None, *default_values)))
        bodies.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "IngressClass",
                "metadata": {
                    "name": "ours",
                    **(
                        {"annotations": {"ingressclass.kubernetes.io/is-default-class": default}}
                        if default
                        else {}
                    ),
                },
                "spec": {"controller": OUR_CONTROLLER},
            }
        )
    minimum = 1 if routable else 0
    if routable:  # Services with ready endpoints on both ports, so that requests get through
        for namespace, name in draw(
            st.lists(
                st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(NAMES)),
                min_size=1,
                max_size=4,
            )
        ):
            bodies += _serving(namespace, name)
    bodies += draw(st.lists(ingress_classes(default_values=default_values), max_size=3))
    bodies += draw(
        st.lists(
            ingresses(
                tls=tls, allow_pathless=allow_pathless, timestamps=timestamps, mostly_ours=routable
            ),
            min_size=minimum,
            max_size=max_ingresses,
        )
    )
    bodies += draw(st.lists(services(), min_size=minimum, max_size=4))
    bodies += draw(st.lists(endpoint_slices(), min_size=minimum, max_size=4))
    if tls:
        bodies += draw(st.lists(secrets(), max_size=3))
    return bodies


def _serving(namespace: str, name: str) -> list[Body]:
    """A Service with the two named ports and an EndpointSlice with a ready endpoint on each."""
    meta = {"name": name, "namespace": namespace}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "type": "ClusterIP",
            "ports": [{"name": n, "port": p, "targetPort": t} for n, p, t in SERVICE_PORTS],
        },
    }
    endpoint_slice = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{name}-1",
            "namespace": namespace,
            "labels": {"kubernetes.io/service-name": name},
        },
        "addressType": "IPv4",
        "ports": [{"name": n, "port": t} for n, _, t in SERVICE_PORTS],
        "endpoints": [{"addresses": [ADDRESSES[0]], "conditions": {"ready": True}}],
    }
    return [service, endpoint_slice]


def unique_keys(bodies: list[Body]) -> list[Body]:
    """The bodies with the first of each (kind, namespace, name) kept (for the oracle)."""
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for body in bodies:
        meta = body["metadata"]
        key = (body["kind"], meta.get("namespace", ""), meta["name"])
        if key not in seen:
            seen.add(key)
            kept.append(body)
    return kept


# --- requests ------------------------------------------------------------------------------------


@st.composite
def requests(
    draw: st.DrawFn, *, hosts: tuple[str, ...] = REQUEST_HOSTS
) -> tuple[str | None, str, int]:
    """A request as (Host header or None, target, port): ports 80 (plain) and 443 (TLS)."""
    host: str | None = draw(st.sampled_from(hosts))
    if draw(st.integers(0, 3)) == 0:
        host = f"{host}:{draw(st.sampled_from((80, 443, 8080)))}"
    if draw(st.integers(0, 15)) == 0:
        host = None
    target = draw(st.sampled_from(REQUEST_PATHS)) + draw(st.sampled_from(REQUEST_QUERIES))
    return host, target, draw(st.sampled_from((80, 443)))


# --- malformed bodies ----------------------------------------------------------------------------

# Values that have broken parsers before: unicode digits (str.isdigit is True, int() may refuse
# them), a digit string longer than int()'s limit, a lone surrogate (json.loads accepts
# "\ud800"; it cannot be encoded to UTF-8), timestamps whose UTC form is out of datetime's
# range, PEM-looking text, and the alphabet's own words in the wrong places.
TRICKY_STRINGS: Final = (
    "",
    " ",
    "0",
    "80",
    "-1",
    "65536",
    "²",
    "٣",
    "9" * 4400,
    "\ud800",
    "\x00",
    "İ",
    "é.test",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "2024-13-45T99:99:99Z",
    "2024-01-01",
    "not a time",
    "true",
    "TRUE",
    "kubernetes.io/tls",
    "ExternalName",
    "Exact",
    "Prefix",
    "*",
    "*.test",
    "FOO.test",
    "a/b",
    "/a?b",
    "/a b",
    "ours",
    OUR_CONTROLLER,
    _b64(b"\xff\xfe"),
    _GARBAGE_PEM.decode(),
    KEYPAIRS["foo"][0].decode(),
    KEYPAIRS["foo"][1].decode(),
    _b64(KEYPAIRS["foo"][0]),
    "networking.k8s.io/v1",
    "v1",
    "Ingress",
)
_FIELD_NAMES: Final = (
    "name",
    "namespace",
    "port",
    "number",
    "host",
    "hosts",
    "path",
    "pathType",
    "paths",
    "http",
    "backend",
    "service",
    "resource",
    "kind",
    "ready",
    "addresses",
    "conditions",
    "labels",
    "annotations",
    "tls.crt",
    "tls.key",
)


@functools.cache
def json_values() -> st.SearchStrategy[Any]:
    """Arbitrary JSON values (what ``json.loads`` can return), biased toward awkward ones."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from((0, -1, 1, 443, 65535, 65536, 2**31, 2**63, 2**64, 10**100)),
        st.floats(),
        st.text(max_size=8),
        st.sampled_from(TRICKY_STRINGS),
    )
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(_FIELD_NAMES) | st.text(max_size=4), inner, max_size=3
            )
        ),
        max_leaves=6,
    )


@functools.cache
def _replacements() -> st.SearchStrategy[Any]:
    """Values put into a field: half the time one of the awkward ones, else any JSON value."""
    return st.one_of(
        st.sampled_from((*TRICKY_STRINGS, 0, -1, 65536, 2**64, 1.5, float("nan"), [], {})),
        json_values(),
    )


_IDENTITY: Final = (("apiVersion",), ("kind",))
_NEW_FIELD_NAMES: Final = st.sampled_from(_FIELD_NAMES) | st.text(max_size=4)
_OPERATIONS: Final = st.sampled_from(("replace", "replace", "retype", "retype", "delete", "add"))


def _locations(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a nested JSON value, the root ``()`` first."""
    found = [here]
    if isinstance(value, dict):
        for name, item in value.items():
            found += _locations(item, (*here, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _locations(item, (*here, index))
    return found


def _get(value: Any, location: tuple[Any, ...]) -> Any:
    for step in location:
        value = value[step]
    return value


_SUPERSCRIPT_DIGITS: Final = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_ARABIC_DIGITS: Final = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def _retyped(value: Any) -> tuple[Any, ...]:
    """Plausible wrong-typed variants of a scalar: quoted numbers, unicode digits, case, …"""
    if isinstance(value, bool):
        return (str(value).lower(), str(value), int(value), None)
    if isinstance(value, int):
        text = str(value)
        return (
            text,
            float(value),
            -value,
            value + 2**64,
            text.translate(_SUPERSCRIPT_DIGITS),
            text.translate(_ARABIC_DIGITS),
            f" {text}",
            [value],
        )
    if isinstance(value, str):
        return (value.upper(), value + "\ud800", value + "\x00", f" {value} ", value * 2, [value])
    return ("", {}, [], 0)


@st.composite
def malformed(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A body from ``base`` with one to three fields replaced, retyped, deleted or added.

    Scalars (leaves) are chosen more often than containers; replacing the root gives a
    non-object body.
    """
    body = copy.deepcopy(draw(base))
    values = _replacements()
    names = _NEW_FIELD_NAMES
    for _ in range(draw(st.integers(1, 3))):
        locations = _locations(body)
        if draw(st.integers(0, 7)):  # mostly keep the identity, so that the body decodes
            locations = [where for where in locations if where[:1] not in _IDENTITY]
            locations = [where for where in locations if where[:2] != ("metadata", "name")]
            locations = locations or [()]
        leaves = [where for where in locations if not isinstance(_get(body, where), dict | list)]
        if leaves and draw(st.integers(0, 2)):
            location = draw(st.sampled_from(leaves))
        else:
            location = draw(st.sampled_from(locations))
        operation = draw(_OPERATIONS)
        if not location:
            if isinstance(body, dict) and operation == "add":
                body[draw(names)] = draw(values)
            elif operation in ("replace", "retype") or not isinstance(body, dict):
                body = draw(json_values())
            continue
        parent, step = _get(body, location[:-1]), location[-1]
        if operation == "replace":
            parent[step] = draw(values)
        elif operation == "retype":
            parent[step] = draw(st.sampled_from(_retyped(parent[step])))
        elif operation == "delete":
            del parent[step]
        else:
            target = parent[step]
            if isinstance(target, dict):
                target[draw(names)] = draw(values)
            elif isinstance(target, list):
                target.insert(draw(st.integers(0, len(target))), draw(values))
            else:
                parent[step] = [target, draw(values)]
    return body


def any_body() -> st.SearchStrategy[Body]:
    """A well-formed body of any kind."""
    return st.one_of(ingress_classes(), ingresses(), services(), endpoint_slices(), secrets())


_ANY_BODY: Final = any_body()


@st.composite
def malformed_worlds(draw: st.DrawFn, *, kinds: st.SearchStrategy[Body] | None = None) -> list[Any]:
    """A few well-formed bodies of any kind, and more malformed ones.

    Args:
        kinds: the well-formed bodies to corrupt (default: every kind).
    """
    base = kinds if kinds is not None else _ANY_BODY
    good = draw(st.lists(_ANY_BODY, max_size=5))
    bad = draw(st.lists(malformed(base), min_size=1, max_size=6))
    return good + bad


# --- events --------------------------------------------------------------------------------------


def event_keys() -> st.SearchStrategy[ObjectKey]:
    """Keys of the alphabet, for ``Deleted`` events (some name an object, some nothing)."""
    namespaced = st.builds(
        ObjectKey,
        st.sampled_from(("Ingress", "Service", "Secret")),
        st.sampled_from((*NAMESPACES, "default")),
        st.sampled_from(NAMES),
    )
    slices = st.builds(
        ObjectKey,
        st.just("EndpointSlice"),
        st.sampled_from(NAMESPACES),
        st.sampled_from(SLICE_NAMES),
    )
    classes = st.builds(
        ObjectKey, st.just("IngressClass"), st.just(""), st.sampled_from(CLASS_NAMES)
    )
    return namespaced | slices | classes


@st.composite
def with_duplicates(draw: st.DrawFn, bodies: st.SearchStrategy[list[Any]]) -> list[Any]:
    """``bodies`` plus exact copies of some of them (a dump may repeat an object)."""
    drawn = draw(bodies)
    if not drawn:
        return drawn
    copies = draw(st.lists(st.sampled_from(drawn), max_size=3))
    return drawn + [copy.deepcopy(body) for body in copies]
