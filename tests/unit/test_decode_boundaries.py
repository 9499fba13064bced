"""compile.model decoders: a field of the wrong type is reported at that field, for every
field of every kind the golden inputs hold.

Each decoder names fields by hand (``"spec.listeners[0].port"``); mutation testing showed that
a misspelt name, or a read of the wrong key, went unnoticed wherever no golden case happened
to break that field. Here every field found in tests/golden/cases is given a value of another
JSON type, once per shape, and the object must still decode (decoders are total), with at least
one new finding, every new finding about that field, one of its parents, or something inside
it. Fields the compiler does not read are listed in ``UNREAD`` with the reason.
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path
from typing import Any, Final

import pytest

from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.manifests import ManifestSyntaxError, parse_manifests

CASES: Final = Path(__file__).resolve().parents[1] / "golden" / "cases"

Path_ = tuple[str | int, ...]

# (kind, path prefix) → why: fields no decoder reads or reports (a wrong type there may be
# reported at the node holding it, or not at all). "*" stands for any index; a path ending in
# BELOW stands for what is inside that node (the node itself is read and checked).
BELOW: Final = "..."
UNREAD: Final[dict[tuple[str, tuple[str, ...]], str]] = {
    ("CoxswainGatewayParameters", ("spec", "podTemplate", BELOW)): "JSON, merged at provisioning",
    ("CoxswainGatewayParameters", ("spec", "resources", BELOW)): "JSON, copied at provisioning",
    ("CoxswainGatewayParameters", ("spec", "autoscaling", BELOW)): "JSON, read at provisioning",
    ("CoxswainGatewayParameters", ("spec", "trustedProxies")): "checked where the parameters "
    "are placed: a bad list refuses them whole (InvalidParameters, test_trusted_proxies.py)",
    ("Deployment", ("spec", BELOW)): "only status.readyReplicas of our own Deployments is read",
    ("*", ("metadata", "ownerReferences")): "ownership is ours to write",
    ("Gateway", ("status",)): "status is ours to write",
    ("GatewayClass", ("status",)): "status is ours to write",
    ("HTTPRoute", ("status",)): "status is ours to write",
    ("GRPCRoute", ("status",)): "status is ours to write",
    ("TLSRoute", ("status",)): "status is ours to write",
    ("TCPRoute", ("status",)): "status is ours to write",
    ("UDPRoute", ("status",)): "status is ours to write",
    ("ListenerSet", ("status",)): "status is ours to write",
    ("BackendTLSPolicy", ("status",)): "status is ours to write",
    ("Ingress", ("status",)): "status is ours to write",
    ("Service", ("status", "loadBalancer", "ingress", "*", "ip")): "typed by the API server; "
    "an address that is not a string is skipped",
    ("Service", ("status", "loadBalancer", "ingress", "*", "hostname")): "as ip",
    ("EndpointSlice", ("endpoints", "*", "conditions", "serving")): "ready alone decides",
    ("EndpointSlice", ("endpoints", "*", "conditions", "terminating")): "ready alone decides",
    ("HTTPRoute", ("spec", "rules", "*", "filters", "*", "extensionRef")): "never skipped: 500",
    ("GRPCRoute", ("spec", "rules", "*", "filters", "*", "extensionRef")): "never skipped: 500",
    ("Ingress", ("spec", "rules", "*", "http", "paths", "*", "backend", "resource", "apiGroup")): (
        "resource backends are refused whatever their group"
    ),
    ("Secret", ("data", "password")): "only tls.crt, tls.key and ca.crt are read",
    ("Service", ("spec", "ports", "*", "targetPort")): "EndpointSlices give the target ports",
    ("EndpointSlice", ("ports", "*", "appProtocol")): "the Service port's is read",
    ("Service", ("spec", "selector")): "EndpointSlices give the endpoints",
    ("ServiceAccount", ("automountServiceAccountToken",)): "only its existence matters",
}
# What gives an object its identity: changing it makes another object, not a bad field.
_IDENTITY: Final = {("kind",), ("apiVersion",), ("metadata",), ("metadata", "name")}
_IDENTITY_PREFIX: Final = ("metadata", "namespace")


def _bodies() -> list[dict[str, Any]]:
    found = []
    for path in sorted(CASES.glob("*/*.yaml")):
        parsed = parse_manifests(path.read_text(encoding="utf-8"), str(path))
        assert not isinstance(parsed, ManifestSyntaxError)
        for sourced in parsed:
            body = sourced.body
            if isinstance(body, dict) and isinstance(decode_object(body), Decoded):
                found.append(body)
    return found


def _nodes(node: Any, path: Path_ = ()) -> list[tuple[Path_, Any]]:
    if isinstance(node, dict):
        items: list[tuple[str | int, Any]] = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))
    else:
        return []
    found: list[tuple[Path_, Any]] = []
    for key, value in items:
        found.append(((*path, key), value))
        found.extend(_nodes(value, (*path, key)))
    return found


def _shape(path: Path_) -> tuple[str, ...]:
    return tuple("*" if isinstance(key, int) else key for key in path)


def _covers(prefix: tuple[str, ...], shape: tuple[str, ...]) -> bool:
    if prefix[-1:] == (BELOW,):
        return len(shape) >= len(prefix) and shape[: len(prefix) - 1] == prefix[:-1]
    return shape[: len(prefix)] == prefix


def _unread(kind: str, path: Path_) -> bool:
    shape = _shape(path)
    return any(k in (kind, "*") and _covers(p, shape) for k, p in UNREAD)


def _cases() -> list[tuple[dict[str, Any], Path_]]:
    seen: set[tuple[str, ...]] = set()
    found = []
    for body in _bodies():
        for path, _ in _nodes(body):
            shape = (body["kind"], *_shape(path))
            if path in _IDENTITY or path[:2] == _IDENTITY_PREFIX or shape in seen:
                continue
            seen.add(shape)
            found.append((body, path))
    return found


def _wrong(value: Any) -> Any:
    """A value of another JSON type (never None: absent fields are allowed)."""
    if isinstance(value, bool):
        return "true"
    if isinstance(value, int | float):
        return "7"
    if isinstance(value, str):
        return 7
    if isinstance(value, list):
        return {"x": 1}
    return ["x"]


_TOKEN: Final = re.compile(
    r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]"
)


def _field_path(field: str) -> Path_ | None:
    """``spec.rules[0].http`` → ``("spec", "rules", 0, "http")``; None when unreadable."""
    path: list[str | int] = []
    position = 0
    while position < len(field):
        token = _TOKEN.match(field, position)
        if token is None:
            return None
        name, index, quoted = token.groups()
        path.append(name if name is not None else int(index) if index else ast.literal_eval(quoted))
        position = token.end()
    return tuple(path)


CASES_FOUND: Final = _cases()


@pytest.mark.parametrize(
    ("body", "path"),
    CASES_FOUND,
    ids=[f"{b['kind']}-{'.'.join(map(str, p))}" for b, p in CASES_FOUND],
)
def test_a_field_of_the_wrong_type_is_reported_at_that_field(body, path):
    before = decode_object(body)
    assert isinstance(before, Decoded)
    changed = copy.deepcopy(body)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = _wrong(node[path[-1]])
    after = decode_object(changed)
    assert isinstance(after, Decoded)
    new = [d for d in after.obj.diagnostics if d not in before.obj.diagnostics]
    assert new or _unread(body["kind"], path), f"nothing reported for {path}"
    for diagnostic in new:
        named = _field_path(diagnostic.field)
        assert named is not None, diagnostic.field
        assert named == path[: len(named)] or path == named[: len(path)], diagnostic.field
        assert diagnostic.key == after.obj.meta.key


def test_every_unread_field_is_found_in_the_golden_inputs():
    found = {(b["kind"], _shape(p)) for b, p in CASES_FOUND}
    for kind, prefix in UNREAD:
        assert any(kind in (k, "*") and _covers(prefix, shape) for k, shape in found), prefix
