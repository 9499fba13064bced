"""Objects a hostile tenant writes: each is refused with a diagnostic that names it and its
field, and nothing else of the same input changes.

Two classes (docs/security.md, "Limits"; coxswain/compile/http_fields.py):

- bodies too deep, too large or self-expanding (``podTemplate`` and every other free-form
  field, YAML aliases): the object, or for YAML aliases the input, is refused; the compiler and
  the controller's state never raise;
- header names, header values and hostnames a route writes into requests and responses: what
  is not RFC 9110 / RFC 1123 syntax (a CR or LF above all) makes its rule invalid.

"Nothing else" is checked by compiling the same input without the hostile object: the
snapshot, the status of every other object and the provisioned infrastructure are equal.
"""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.listing import infra_list, status_list
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.limits import MAX_OBJECT_DEPTH, MAX_OBJECT_SIZE
from coxswain.compile.model.manifests import ManifestSyntaxError, parse_manifests
from coxswain.compile.provision import provision
from coxswain.compile.snapshot_json import snapshot_to_data
from coxswain.shell.control.cluster_view import ClusterView
from coxswain.shell.control.kube import Resource

REPO = Path(__file__).resolve().parents[2]
CONFIG = CompileConfig()
PARAMETERS_API = "gateway.coxswain-labs.dev/v1alpha1"
GATEWAY_API = "gateway.networking.k8s.io/v1"


# --- the input the hostile objects join ---------------------------------------------------------


def world() -> list[dict[str, Any]]:
    """A Gateway provisioned from parameters with a podTemplate, and a route to a Service."""
    return [
        {
            "apiVersion": GATEWAY_API,
            "kind": "GatewayClass",
            "metadata": {"name": "coxswain"},
            "spec": {"controllerName": "coxswain-labs.dev/gateway-controller"},
        },
        {
            "apiVersion": PARAMETERS_API,
            "kind": "CoxswainGatewayParameters",
            "metadata": {"name": "good", "namespace": "app"},
            "spec": {
                "replicas": 2,
                "podTemplate": {
                    "metadata": {"labels": {"team": "shop"}},
                    "spec": {"nodeSelector": {"pool": "edge"}},
                },
            },
        },
        {
            "apiVersion": GATEWAY_API,
            "kind": "Gateway",
            "metadata": {"name": "edge", "namespace": "app"},
            "spec": {
                "gatewayClassName": "coxswain",
                "infrastructure": {
                    "parametersRef": {
                        "group": "gateway.coxswain-labs.dev",
                        "kind": "CoxswainGatewayParameters",
                        "name": "good",
                    }
                },
                "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}],
            },
        },
        {
            "apiVersion": GATEWAY_API,
            "kind": "Gateway",
            "metadata": {"name": "shared", "namespace": "app"},
            "spec": {
                "gatewayClassName": "coxswain",
                "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "app"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "web-1",
                "namespace": "app",
                "labels": {"kubernetes.io/service-name": "web"},
            },
            "addressType": "IPv4",
            "ports": [{"port": 8080}],
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
        },
        route("shop", "shop.example.com", []),
    ]


def route(name: str, host: str, filters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "parentRefs": [{"name": "shared"}],
            "hostnames": [host],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": f"/{name}"}}],
                    "filters": filters,
                    "backendRefs": [{"name": "web", "port": 80}],
                }
            ],
        },
    }


def parameters(name: str, pod_template: object) -> dict[str, Any]:
    return {
        "apiVersion": PARAMETERS_API,
        "kind": "CoxswainGatewayParameters",
        "metadata": {"name": name, "namespace": "app"},
        "spec": {"podTemplate": pod_template},
    }


def nested(depth: int, leaf: object = 1) -> object:
    """``depth`` mappings, one in the other, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def body_depth(value: object) -> int:
    """Mappings and lists nested in ``value`` (the reference the limit is checked against)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = (
            list(item.values())
            if isinstance(item, dict)
            else list(item)
            if isinstance(item, list)
            else None
        )
        if children is None:
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children)
    return deepest


def outcome(bodies: list[Any], hostile: tuple[str, str, str] | None = None) -> dict[str, Any]:
    """What the input compiles to, leaving out the status of the ``hostile`` object."""
    state = build_state(bodies)
    result = compile(state, SharedPool(), CONFIG)
    statuses = status_list(status(state, CONFIG))["items"]
    kept = [
        s
        for s in statuses
        if hostile is None
        or (s["kind"], s["metadata"].get("namespace", ""), s["metadata"]["name"]) != hostile
    ]
    return {
        "snapshot": snapshot_to_data(result.snapshot),
        "status": kept,
        "infra": infra_list(provision(state, CONFIG)),
    }


def findings(bodies: list[Any]) -> list[tuple[str, str, str]]:
    """(``Kind ns/name``, field, reason) of every diagnostic of the input."""
    result = compile(build_state(bodies), SharedPool(), CONFIG)
    return [
        (f"{d.key.kind} {d.key.ref}" if d.key else "", d.field, d.reason)
        for d in result.diagnostics
    ]


BASELINE = outcome(world())


def test_the_world_provisions_its_parameters_and_serves_its_route():
    infra = json.dumps(BASELINE["infra"])
    assert '"pool": "edge"' in infra  # the good podTemplate is merged
    assert "shop.example.com" in json.dumps(BASELINE["snapshot"])


# --- bounded bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_OBJECT_DEPTH, 100, 990])
def test_a_deep_pod_template_is_refused_and_nothing_else_changes(depth):
    hostile = parameters("deep", nested(depth))
    bodies = [*world(), hostile]
    assert ("CoxswainGatewayParameters app/deep", "spec.podTemplate", "ObjectTooDeep") in (
        findings(bodies)
    )
    assert outcome(bodies, ("CoxswainGatewayParameters", "app", "deep")) == BASELINE


@given(st.integers(min_value=MAX_OBJECT_DEPTH - 6, max_value=MAX_OBJECT_DEPTH + 6))
def test_depth_around_the_limit_is_refused_exactly_past_it(depth):
    hostile = parameters("deep", nested(depth, leaf=[1]))
    refused = ("CoxswainGatewayParameters app/deep", "spec.podTemplate", "ObjectTooDeep")
    assert (refused in findings([hostile])) == (body_depth(hostile) > MAX_OBJECT_DEPTH)


@pytest.mark.parametrize(
    ("kind", "place", "field"),
    [
        ("Ingress", ("metadata", "annotations"), "metadata.annotations"),
        ("Ingress", ("metadata", "labels"), "metadata.labels"),
        ("HTTPRoute", ("spec", "unknownField"), "spec.unknownField"),
        ("Service", ("status", "loadBalancer"), "status.loadBalancer"),
        ("CoxswainGatewayParameters", ("spec", "resources"), "spec.resources"),
        ("CoxswainGatewayParameters", ("spec", "autoscaling"), "spec.autoscaling"),
    ],
)
def test_every_free_form_field_is_bounded(kind, place, field):
    api = {
        "Ingress": "networking.k8s.io/v1",
        "HTTPRoute": GATEWAY_API,
        "Service": "v1",
        "CoxswainGatewayParameters": PARAMETERS_API,
    }[kind]
    hostile: dict[str, Any] = {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "deep", "namespace": "app"},
    }
    hostile.setdefault(place[0], {})[place[1]] = nested(500)
    bodies = [*world(), hostile]
    assert (f"{kind} app/deep", field, "ObjectTooDeep") in findings(bodies)
    assert outcome(bodies, (kind, "app", "deep")) == BASELINE


def test_a_large_annotation_is_refused_and_nothing_else_changes():
    hostile = copy.deepcopy(route("big", "big.example.com", []))
    hostile["metadata"]["annotations"] = {"note": "x" * MAX_OBJECT_SIZE}
    bodies = [*world(), hostile]
    assert ("HTTPRoute app/big", "metadata.annotations", "ObjectTooLarge") in findings(bodies)
    assert outcome(bodies, ("HTTPRoute", "app", "big")) == BASELINE


def test_a_shared_value_expanding_past_the_size_is_refused_quickly():
    # What YAML aliases build: each level holds the one below ten times (10**9 leaves).
    laughs: object = ["lol"]
    for _ in range(9):
        laughs = [laughs] * 10
    bodies = [*world(), parameters("laughs", {"spec": {"x": laughs}})]
    assert ("CoxswainGatewayParameters app/laughs", "spec.podTemplate", "ObjectTooLarge") in (
        findings(bodies)
    )
    assert outcome(bodies, ("CoxswainGatewayParameters", "app", "laughs")) == BASELINE


def test_a_self_containing_value_is_refused():
    loop: dict[str, Any] = {}
    loop["again"] = loop
    bodies = [*world(), parameters("loop", loop)]
    assert ("CoxswainGatewayParameters app/loop", "spec.podTemplate", "ObjectTooDeep") in (
        findings(bodies)
    )


@pytest.mark.parametrize(
    ("place", "field"),
    [
        (("metadata", "creationTimestamp"), "metadata.creationTimestamp"),
        (("metadata", "generation"), "metadata.generation"),
        (("spec", "replicas"), "spec.replicas"),
    ],
)
def test_an_integer_too_wide_to_print_is_reported_by_its_width(place, field):
    hostile = parameters("wide", {})
    hostile.setdefault(place[0], {})[place[1]] = 10**5000  # past Python's 4,300 digits
    decoded = decode_object(hostile)
    assert isinstance(decoded, Decoded)
    assert [(d.field, d.reason) for d in decoded.obj.diagnostics] == [(field, "InvalidField")]
    assert "bits" in decoded.obj.diagnostics[0].message
    bodies = [*world(), hostile]
    kept = outcome(bodies, ("CoxswainGatewayParameters", "app", "wide"))
    assert kept["snapshot"] == BASELINE["snapshot"]


JSON_LIKE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**20000), max_value=2**20000)
    | st.floats()
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.integers() | st.booleans(), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(JSON_LIKE)
def test_any_pod_template_compiles_without_raising(template):
    # YAML gives integer and boolean keys, integers past 4,300 digits, NaN: none may raise.
    bodies = [*world(), parameters("odd", {"spec": template})]
    outcome(bodies, ("CoxswainGatewayParameters", "app", "odd"))


# --- the manifest loader ------------------------------------------------------------------------


def billion_laughs(levels: int) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text",
    [
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: lol}\ndata:\n"
        + "".join(f"  {line}\n" for line in billion_laughs(9).splitlines()),
        # a top-level list flattens into objects: aliases there would multiply the objects
        "- &a0 [{kind: A}, {kind: A}, {kind: A}, {kind: A}, {kind: A}, {kind: A}]\n"
        + "".join(f"- &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)),
        "kind: ConfigMap\nmetadata: &loop {name: loop, again: *loop}\n",
        "--- &root\nkind: ConfigMap\nmetadata: {name: loop}\nagain: *root\n",
    ],
    ids=["billion-laughs", "billion-objects", "recursive-alias", "recursive-root"],
)
def test_yaml_aliases_cannot_expand_a_document_past_the_file(text):
    parsed = parse_manifests(
        "kind: Namespace\napiVersion: v1\nmetadata: {name: ok}\n---\n" + text, "x.yaml"
    )
    assert isinstance(parsed, ManifestSyntaxError)
    assert parsed.line == 5
    assert "aliases" in parsed.message


@pytest.mark.parametrize(
    ("before", "separator", "line"),
    [
        ("", "\n", 2),  # the root's own anchor, on the document's first line
        ("kind: ConfigMap\n", "\r\n", 3),  # lines broken as ``\n`` alone does not count
        ("kind: ConfigMap\n---\n" * 3, "\n", 8),  # documents without anchors first
    ],
    ids=["anchored-root", "crlf", "plain-documents-first"],
)
def test_yaml_aliases_are_measured_in_any_document_that_has_anchors(before, separator, line):
    laughs = "".join(f"  {row}\n" for row in billion_laughs(9).splitlines())
    text = f"{before}kind: Namespace\n--- &root\nkind: ConfigMap\ndata:\n{laughs}"
    parsed = parse_manifests(text.replace("\n", separator), "x.yaml")
    assert isinstance(parsed, ManifestSyntaxError)
    assert parsed.line == line
    assert "aliases" in parsed.message


def _flow_laughs(levels: int) -> str:
    """``billion_laughs`` as one flow mapping, on one line."""
    pairs = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    pairs += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "{" + ", ".join(pairs) + "}"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # the file's first line holds the anchor
        ("--- &root\nkind: ConfigMap\ndata:\n  x: " + _flow_laughs(9) + "\n", 1),
        # a document on one line: its anchors are on the line where it ends
        ("{kind: ConfigMap, data: " + _flow_laughs(9) + "}\n", 1),
        ("kind: Namespace\n---\n{kind: ConfigMap, data: " + _flow_laughs(9) + "}\n", 3),
    ],
    ids=["first-line", "one-line", "one-line-after-another"],
)
def test_yaml_aliases_are_measured_wherever_the_anchors_sit(text, line):
    parsed = parse_manifests(text, "x.yaml")
    assert isinstance(parsed, ManifestSyntaxError)
    assert parsed.line == line
    assert "aliases" in parsed.message


def test_yaml_aliases_within_the_budget_are_read():
    text = "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a, labels: &l {x: y}}\ndata: *l\n"
    parsed = parse_manifests(text, "x.yaml")
    assert not isinstance(parsed, ManifestSyntaxError)
    assert parsed[0].body["data"] == {"x": "y"}


def test_json_nested_past_the_parser_is_a_syntax_error_at_its_line():
    text = '{"kind": "ConfigMap",\n "data":\n' + "[" * 5000 + "]" * 5000 + "}\n"
    parsed = parse_manifests(text, "x.json")
    assert isinstance(parsed, ManifestSyntaxError)
    assert parsed.line == 3


def test_nested_top_level_lists_flatten_without_recursion():
    depth = 999  # libyaml reads up to 1,000 levels
    text = "[" * depth + "{kind: A}, {kind: B}" + "]" * depth + "\n"
    parsed = parse_manifests(text, "x.yaml")
    assert not isinstance(parsed, ManifestSyntaxError)
    assert [b.body["kind"] for b in parsed] == ["A", "B"]


def run_compile(*paths: Path) -> subprocess.CompletedProcess[str]:
    args = [arg for path in paths for arg in ("-f", str(path))]
    return subprocess.run(
        [sys.executable, "-m", "coxswain", "compile", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_compile_exits_0_naming_a_pod_template_nested_1000_deep(tmp_path):
    clean = tmp_path / "world.yaml"
    clean.write_text("---\n".join(yaml.safe_dump(d) for d in world()))
    # As deep as the YAML parser reads: 994 levels in all (libyaml stops at 1,000).
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1\nkind: CoxswainGatewayParameters\n"
        "metadata: {name: deep, namespace: app}\nspec:\n  podTemplate: "
        + "{a: " * 990
        + "[1]"
        + "}" * 990
        + "\n"
    )
    without = run_compile(clean)
    result = run_compile(clean, hostile)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert (
        f"{hostile}:1: error: CoxswainGatewayParameters app/deep spec.podTemplate: nests deeper "
        f"than {MAX_OBJECT_DEPTH} levels; the object is refused (ObjectTooDeep)"
    ) in result.stderr.splitlines()
    assert result.stdout == without.stdout


def test_compile_refuses_a_document_deeper_than_the_parser_at_its_line(tmp_path):
    hostile = tmp_path / "hostile.json"
    hostile.write_text(
        '{"kind": "CoxswainGatewayParameters",\n "spec": {"podTemplate":\n'
        + "[" * 2000
        + "]" * 2000
        + "}}\n"
    )
    result = run_compile(hostile)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{hostile}:3: the document nests deeper than the parser")


# --- the controller's state ---------------------------------------------------------------------


def test_the_controller_state_logs_a_hostile_object_and_keeps_the_others(caplog):
    view = ClusterView()
    bodies = [*world(), parameters("deep", nested(990))]
    with caplog.at_level(logging.WARNING, logger="coxswain.controller"):
        for body in bodies:
            meta = body["metadata"]
            group, _, version = body["apiVersion"].rpartition("/")
            namespace = meta.get("namespace", "")
            kind = Resource(group, version, "", body["kind"], bool(namespace))
            view.event(kind, (namespace, meta["name"]), body)
    assert any(
        "CoxswainGatewayParameters app/deep" in r.getMessage()
        and "spec.podTemplate" in r.getMessage()
        for r in caplog.records
    )
    result = compile(view.state, SharedPool(), CONFIG)
    assert snapshot_to_data(result.snapshot) == BASELINE["snapshot"]
    assert infra_list(provision(view.state, CONFIG)) == BASELINE["infra"]


# --- what routes write into requests and responses ----------------------------------------------

ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["a\r\nx-injected: 1", "a\nb", "a\rb", "a\x00b", " a", "a ", "a\tb", "é", "\u212a", ""]
)


def header_filter(where: str, verb: str, name: str, value: str) -> dict[str, Any]:
    edits: dict[str, Any] = (
        {"remove": [name]} if verb == "remove" else {verb: [{"name": name, "value": value}]}
    )
    return {"type": where[0].upper() + where[1:], where: edits}


def valid_name(name: str) -> bool:
    tchar = set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return 0 < len(name) <= 256 and set(name) <= tchar


def valid_value(value: str) -> bool:
    allowed = {chr(c) for c in (9, *range(0x20, 0x7F), *range(0x80, 0x100))}
    return set(value) <= allowed and value == value.strip(" \t")


def valid_hostname(host: str) -> bool:
    labels = host.split(".")
    return (
        0 < len(host) <= 253
        and not set(host) <= set("0123456789.")
        and all(
            0 < len(label) <= 63
            and set(label) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
            and not label.startswith("-")
            and not label.endswith("-")
            for label in labels
        )
    )


def check_rule(filters: list[dict[str, Any]], valid: bool, field: str) -> None:
    hostile = route("hostile", "hostile.example.com", filters)
    bodies = [*world(), hostile]
    found = findings(bodies)
    conditions = {
        c["type"]: (c["status"], c["reason"])
        for s in outcome(bodies)["status"]
        if s["kind"] == "HTTPRoute" and s["metadata"]["name"] == "hostile"
        for parent in s["status"]["parents"]
        for c in parent["conditions"]
    }
    if valid:
        assert conditions["Accepted"] == ("True", "Accepted")
        assert "hostile.example.com" in json.dumps(outcome(bodies)["snapshot"])
    else:
        assert ("HTTPRoute app/hostile", field, "UnsupportedValue") in found
        assert conditions["Accepted"] == ("False", "UnsupportedValue")
        assert outcome(bodies, ("HTTPRoute", "app", "hostile")) == BASELINE


@given(
    where=st.sampled_from(["requestHeaderModifier", "responseHeaderModifier"]),
    verb=st.sampled_from(["set", "add", "remove"]),
    name=ANY_TEXT,
    value=ANY_TEXT,
)
def test_header_modifiers_write_only_http_field_syntax(where, verb, name, value):
    if not name:
        return  # an empty name is dropped as missing when decoded
    valid = valid_name(name) and (verb == "remove" or valid_value(value))
    check_rule(
        [header_filter(where, verb, name, value)], valid, f"spec.rules[0].filters[0].{where}"
    )


@given(kind=st.sampled_from(["urlRewrite", "requestRedirect"]), host=ANY_TEXT)
def test_rewrite_and_redirect_hostnames_are_dns_names(kind, host):
    if not host:
        return  # an empty hostname is no hostname: the request's own is kept
    folded = host.lower() if host.isascii() else host
    filter_type = {"urlRewrite": "URLRewrite", "requestRedirect": "RequestRedirect"}[kind]
    filters = [{"type": filter_type, kind: {"hostname": host}}]
    if kind == "requestRedirect":
        hostile = route("hostile", "hostile.example.com", filters)
        del hostile["spec"]["rules"][0]["backendRefs"]
        bodies = [*world(), hostile]
        found = findings(bodies)
        refused = (
            "HTTPRoute app/hostile",
            f"spec.rules[0].filters[0].{kind}.hostname",
            "UnsupportedValue",
        )
        assert (refused in found) == (not valid_hostname(folded))
        return
    check_rule(filters, valid_hostname(folded), f"spec.rules[0].filters[0].{kind}.hostname")


def test_a_crlf_rewrite_hostname_never_reaches_the_snapshot():
    host = "backend.example.com\r\nx-injected: 1"
    filters = [{"type": "URLRewrite", "urlRewrite": {"hostname": host}}]
    check_rule(filters, False, "spec.rules[0].filters[0].urlRewrite.hostname")


def test_header_edits_on_backend_refs_are_checked_too():
    hostile = route("hostile", "hostile.example.com", [])
    hostile["spec"]["rules"][0]["backendRefs"][0]["filters"] = [
        header_filter("requestHeaderModifier", "set", "x-a", "1\r\nx-injected: 1")
    ]
    bodies = [*world(), hostile]
    field = "spec.rules[0].backendRefs[0].filters[0].requestHeaderModifier"
    assert ("HTTPRoute app/hostile", field, "UnsupportedValue") in findings(bodies)
    assert outcome(bodies, ("HTTPRoute", "app", "hostile")) == BASELINE


def test_a_replacement_path_with_a_line_break_makes_the_rule_invalid():
    path = {"type": "ReplaceFullPath", "replaceFullPath": "/a\r\nx-injected: 1"}
    filters = [{"type": "URLRewrite", "urlRewrite": {"path": path}}]
    check_rule(filters, False, "spec.rules[0].filters[0]")
