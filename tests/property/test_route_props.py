"""Differential test of route selection against a naive matcher written from the Ingress spec.

The oracle below reads the **input bodies** (never the snapshot) and follows the Kubernetes
Ingress documentation (networking.k8s.io/v1, "Ingress" concept page and API reference) step by
step; it imports nothing from ``coxswain.compile.ingress`` or ``coxswain.route.paths``. For a
request it decides which Ingress rule serves it, and ``route.select(build_table(snapshot), …)``
must decide the same.

Oracle, step by step:

1. **Our Ingresses.** ``spec.ingressClassName``, else the legacy ``kubernetes.io/ingress.class``
   annotation, names an IngressClass; the Ingress is ours when that IngressClass exists and its
   ``spec.controller`` is ours. An Ingress naming no class takes the default class: the
   IngressClasses annotated ``ingressclass.kubernetes.io/is-default-class: "true"`` (the exact
   string, as the API server's admission plugin compares it). With several defaults the spec
   says the API server refuses new unclassed Ingresses, so it does not say what an unclassed
   one means; the oracle takes it only when every default class is ours (Coxswain's documented
   choice for that case).
2. **Host.** The Host header without its port, lower-cased (DNS names are case-insensitive,
   RFC 4343), without a trailing dot. Rule hosts are lower-cased too. A host is *served* when
   an Ingress has a path on it or a default backend for it. The request takes the served host
   equal to it, else the ``*.`` wildcard whose ``*`` stands for exactly its first label (which
   must not be empty), else the catch-all (rules without ``host``), else 404.
3. **Path.** Among all paths of all our Ingresses on that host (query string ignored; paths
   are case-sensitive): an ``Exact`` path equal to the request path wins; else the ``Prefix``
   path with the most elements that is an element-wise prefix of the request path (elements
   split on ``/``, a trailing slash ignored). ``ImplementationSpecific`` is served as
   ``Prefix`` (the spec leaves it to the class; Coxswain documents this choice), and a missing
   path is ``/``. Ties go to the oldest Ingress (``creationTimestamp``; objects without one
   count as newest), then ``namespace/name``, then the first rule and path in it.
4. **Default backend.** No path matches: the ``spec.defaultBackend`` of the oldest Ingress that
   names the host in one of its rules (for the catch-all: that has a rule without host, or no
   rules at all) serves it; else 404.

What is compared: the chosen Ingress and rule (``Decision.route`` namespace, name and rule
field) and whether the answer is 404. A second property checks forwarded vs 503 (a missing
Service or port, or no ready endpoint), per the EndpointSlice API (``ready`` absent counts as
ready) and docs/architecture.md ("Data-plane rules").

TLS: the worlds hold ``spec.tls`` and TLS Secrets. Which rule serves a request does not depend
on TLS, so the rule and 404 comparison holds on both ports; a plain-HTTP request on port 80 may
be answered with a redirect (308) instead of being forwarded, so forwarded-vs-503 is compared
on HTTPS (port 443) only, where no redirect may happen.

Worlds for the oracle keep one body per key (which of two duplicates wins is an
implementation choice) and give every rule at least one path (a rule that only names a host
has no spec meaning to compare against).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from coxswain.compile import SharedPool, build_state, compile
from coxswain.route import RequestHead, build_table, select

from .strategies import (
    EDGE_REQUEST_HOSTS,
    EDGE_TIMESTAMPS,
    OUR_CONTROLLER,
    REQUEST_HOSTS,
    TIMESTAMPS,
    requests,
    unique_keys,
    worlds,
)

if TYPE_CHECKING:
    from coxswain.route import Decision

pytestmark = pytest.mark.property

Body = dict[str, Any]
Request = tuple[str | None, str, int]

DEFAULT_CLASS = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS = "kubernetes.io/ingress.class"
SERVICE_NAME = "kubernetes.io/service-name"


# --- the oracle ----------------------------------------------------------------------------------


def _annotations(body: Body) -> Body:
    return body["metadata"].get("annotations") or {}


def our_ingresses(bodies: list[Body]) -> list[Body]:
    """Step 1, oldest first (creationTimestamp, no timestamp last, then namespace/name)."""
    classes = {b["metadata"]["name"]: b for b in bodies if b["kind"] == "IngressClass"}

    def ours(name: str) -> bool:
        found = classes.get(name)
        return found is not None and found["spec"].get("controller") == OUR_CONTROLLER

    defaults = [n for n, c in classes.items() if _annotations(c).get(DEFAULT_CLASS) == "true"]
    chosen = []
    for body in bodies:
        if body["kind"] != "Ingress":
            continue
        name = body["spec"].get("ingressClassName") or _annotations(body).get(LEGACY_CLASS)
        if (name is not None and ours(name)) or (
            name is None and defaults and all(ours(n) for n in defaults)
        ):
            chosen.append(body)
    return sorted(chosen, key=_age)


def _age(body: Body) -> tuple[bool, datetime, str, str]:
    meta = body["metadata"]
    created = meta.get("creationTimestamp")
    moment = datetime.fromisoformat(created) if created else datetime.max.replace(tzinfo=UTC)
    return (created is None, moment, meta["namespace"], meta["name"])


CATCH_ALL = None  # the "host" of rules without one


def _rule_host(rule: Body) -> str | None:
    host = rule.get("host")
    return host.lower() if host else CATCH_ALL


def _names_host(ingress: Body, host: str | None) -> bool:
    """Whether the Ingress's default backend applies to ``host`` (step 4)."""
    rules = ingress["spec"].get("rules") or []
    if host is CATCH_ALL and not rules:
        return True
    return any(_rule_host(rule) == host for rule in rules)


def _served_hosts(ours: list[Body]) -> set[str | None]:
    served: set[str | None] = set()
    for ingress in ours:
        rules = ingress["spec"].get("rules") or []
        for rule in rules:
            if (rule.get("http") or {}).get("paths"):
                served.add(_rule_host(rule))
        if ingress["spec"].get("defaultBackend"):
            served |= {_rule_host(rule) for rule in rules} if rules else {CATCH_ALL}
    return served


def request_host(header: str | None) -> str:
    """The host of a Host header (RFC 9110 §7.2): no port, lower case, no trailing dot."""
    if header is None:
        return ""
    host = header.strip().lower()
    if host.startswith("["):
        return host[: host.index("]") + 1]
    return host.split(":")[0].removesuffix(".")


_NO_HOST = "\x00no host"  # never a host: the request is answered 404


def match_host(host: str, served: set[str | None]) -> str | None:
    """Step 2: exact, then the one-label wildcard, then the catch-all, else ``_NO_HOST``."""
    if host in served:
        return host
    first, dot, parent = host.partition(".")
    if first and dot and parent and f"*.{parent}" in served:
        return f"*.{parent}"
    if CATCH_ALL in served:
        return CATCH_ALL
    return _NO_HOST


def _elements(path: str) -> list[str]:
    return [element for element in path.split("/") if element]


@dataclass(frozen=True, slots=True)
class Choice:
    """The rule the oracle picks: ``(namespace, name, rule field)`` and its backend."""

    namespace: str
    name: str
    rule: str
    backend: Body


def oracle(bodies: list[Body], header: str | None, target: str) -> Choice | None:
    """Steps 1-4: the rule serving the request, or None for 404."""
    ours = our_ingresses(bodies)
    host = match_host(request_host(header), _served_hosts(ours))
    if host is _NO_HOST:
        return None
    path = target.split("?", 1)[0]
    exact: list[tuple[int, int, int, Choice]] = []
    prefix: list[tuple[int, int, int, int, Choice]] = []
    for age, ingress in enumerate(ours):
        meta = ingress["metadata"]
        for r, rule in enumerate(ingress["spec"].get("rules") or []):
            if _rule_host(rule) != host:
                continue
            for p, item in enumerate((rule.get("http") or {}).get("paths") or []):
                choice = Choice(
                    meta["namespace"], meta["name"], f"spec.rules[{r}].http.paths[{p}]", item
                )
                written = item.get("path") or "/"
                if item["pathType"] == "Exact":
                    if written == path:
                        exact.append((age, r, p, choice))
                else:
                    wanted = _elements(written)
                    if _elements(path)[: len(wanted)] == wanted:
                        prefix.append((-len(wanted), age, r, p, choice))
    if exact:
        return min(exact, key=lambda found: found[:3])[-1]
    if prefix:
        return min(prefix, key=lambda found: found[:4])[-1]
    for ingress in ours:
        default = ingress["spec"].get("defaultBackend")
        if default and _names_host(ingress, host):
            meta = ingress["metadata"]
            return Choice(
                meta["namespace"], meta["name"], "spec.defaultBackend", {"backend": default}
            )
    return None


def forwards(bodies: list[Body], namespace: str, backend: Body) -> bool:
    """Whether the backend has a ready endpoint (else the proxy answers 503)."""
    service_ref = backend["backend"]["service"]
    service = next(
        (
            b
            for b in bodies
            if b["kind"] == "Service"
            and (b["metadata"]["namespace"], b["metadata"]["name"])
            == (namespace, service_ref["name"])
        ),
        None,
    )
    if service is None:
        return False
    spec = service["spec"]
    ports = spec.get("ports") or []
    wanted = service_ref["port"]
    if "number" in wanted:
        port = next((p for p in ports if p["port"] == wanted["number"]), None)
    else:
        port = next((p for p in ports if p.get("name", "") == wanted["name"]), None)
    if spec.get("type") == "ExternalName":
        # An ExternalName Service listing no ports forwards a numbered port as the remote port.
        return bool(spec.get("externalName")) and (
            port is not None or (not ports and "number" in wanted)
        )
    if port is None:
        return False
    port_name = port.get("name", "")
    for endpoint_slice in bodies:
        meta = endpoint_slice["metadata"]
        if (
            endpoint_slice["kind"] != "EndpointSlice"
            or meta["namespace"] != namespace
            or (meta.get("labels") or {}).get(SERVICE_NAME) != service_ref["name"]
        ):
            continue
        if not any(p.get("name", "") == port_name for p in endpoint_slice.get("ports") or []):
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is not False:
                return True
    return False


# --- the properties ------------------------------------------------------------------------------


def _decide(bodies: list[Body], reqs: list[Request]) -> list[tuple[Request, Decision]]:
    table = build_table(compile(build_state(bodies), SharedPool()).snapshot)
    return [
        (
            (header, target, port),
            select(
                table,
                RequestHead(port=port, method="GET", target=target, host=header, tls=port == 443),
            ),
        )
        for header, target, port in reqs
    ]


def _check_rule(bodies: list[Body], reqs: list[Request]) -> None:
    for (header, target, port), decision in _decide(bodies, reqs):
        expected = oracle(bodies, header, target)
        actual = (
            None
            if decision.route is None
            else (decision.route.namespace, decision.route.name, decision.route.rule)
        )
        wanted = None if expected is None else (expected.namespace, expected.name, expected.rule)
        assert actual == wanted, (header, target, port, decision.reason)
        assert (decision.status == 404) == (expected is None), (header, target, decision.reason)
        assert decision.matched == (expected is not None)
        if port == 443:
            assert decision.redirect is None


def _worlds(**edges: Any) -> st.SearchStrategy[list[Body]]:
    return worlds(allow_pathless=False, max_ingresses=5, routable=True, **edges).map(unique_keys)


_REQUESTS = st.lists(requests(), min_size=1, max_size=8)


@given(_worlds(), _REQUESTS)
def test_select_picks_the_rule_the_spec_picks(bodies: list[Body], reqs: list[Request]) -> None:
    """Host, path precedence, conflicts and default backends agree with the spec oracle."""
    _check_rule(bodies, reqs)


_CLASS_DEFAULT_WRITTEN_TRUE = [
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {
            "name": "ours",
            "annotations": {"ingressclass.kubernetes.io/is-default-class": "True"},
        },
        "spec": {"controller": OUR_CONTROLLER},
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "x", "namespace": "a"},
        "spec": {"defaultBackend": {"service": {"name": "x", "port": {"number": 80}}}},
    },
]


@example(bodies=_CLASS_DEFAULT_WRITTEN_TRUE, reqs=[("foo.test", "/", 443)])
@given(
    _worlds(timestamps=(*TIMESTAMPS, *EDGE_TIMESTAMPS), default_values=("true", "True")),
    st.lists(requests(hosts=(*REQUEST_HOSTS, *EDGE_REQUEST_HOSTS)), min_size=1, max_size=8),
)
def test_select_picks_the_rule_the_spec_picks_on_edge_inputs(
    bodies: list[Body], reqs: list[Request]
) -> None:
    """The same property with edge values in the alphabets: a timestamp before year 1000, a
    default-class annotation written ``True``, Host headers ``.test``, ``foo.test.``, ``[::1]``."""
    _check_rule(bodies, reqs)


@given(_worlds(), st.lists(requests(), min_size=1, max_size=8))
def test_select_forwards_exactly_when_the_backend_has_ready_endpoints(
    bodies: list[Body], reqs: list[Request]
) -> None:
    """On HTTPS, a matched request is forwarded when its backend has a ready endpoint, else 503."""
    https = [(header, target, 443) for header, target, _ in reqs]
    for (header, target, _), decision in _decide(bodies, https):
        expected = oracle(bodies, header, target)
        if expected is None:
            assert decision.status == 404
            continue
        ready = forwards(bodies, expected.namespace, expected.backend)
        assert decision.status == (None if ready else 503), (header, target, decision.reason)
