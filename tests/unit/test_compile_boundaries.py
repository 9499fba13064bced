"""compile at its small edges: label selectors, wildcard coverage, diagnostics as text and
manifest parsing, each pinned where mutation testing found nothing noticed a change.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from pyrsistent import pmap, pvector

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.diagnostics import Diagnostic, Severity, diagnostic_order
from coxswain.compile.gateway.attach import intersect_hostnames, matches_selector
from coxswain.compile.gateway.placement import fit_name
from coxswain.compile.gateway.vip import service_addresses
from coxswain.compile.ingress.annotations import parse_options
from coxswain.compile.ingress.certificates import has_certificate
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.gateway_objects import LabelSelector, SelectorRequirement
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.manifests import ManifestSyntaxError, parse_manifests
from coxswain.compile.model.objects import Meta, Service
from coxswain.compile.snapshot import Certificate
from coxswain.compile.snapshot_json import dump_snapshot, snapshot_to_data

CERT = Certificate(chain_pem="c", key_pem="k", secret="app/s")


def _requirement(operator: str, *values: str) -> LabelSelector:
    return LabelSelector(
        match_expressions=pvector(
            [SelectorRequirement(key="team", operator=operator, values=pvector(values))]
        )
    )


@pytest.mark.parametrize(
    ("selector", "labels", "matched"),
    [
        (_requirement("Exists"), {"team": "a"}, True),
        (_requirement("Exists"), {"other": "a"}, False),
        (_requirement("Exists"), None, False),
        (_requirement("DoesNotExist"), {"team": "a"}, False),
        (_requirement("DoesNotExist"), {"other": "a"}, True),
        (_requirement("DoesNotExist"), None, True),
        (_requirement("In", "a", "b"), {"team": "b"}, True),
        (_requirement("In", "a"), {"team": "c"}, False),
        (_requirement("In", "a"), {}, False),
        (_requirement("NotIn", "a"), {"team": "a"}, False),
        (_requirement("NotIn", "a"), {"team": "c"}, True),
        (_requirement("NotIn", "a"), {}, True),
        (LabelSelector(match_labels=pmap({"team": "a"})), {"team": "a", "x": "y"}, True),
        (LabelSelector(match_labels=pmap({"team": "a"})), {"team": "b"}, False),
        (LabelSelector(), None, True),
        (LabelSelector(problem="bad operator"), {"team": "a"}, False),
    ],
)
def test_a_namespace_selector_applies_each_operator(selector, labels, matched):
    assert matches_selector(selector, None if labels is None else pmap(labels)) is matched


@pytest.mark.parametrize(
    ("listener", "route", "served"),
    [
        ("*.example.com", ("a.example.com",), ("a.example.com",)),
        ("*.example.com", ("a.b.example.com",), ("a.b.example.com",)),
        ("*.example.com", (".example.com",), ()),
        ("*.example.com", ("example.com",), ()),
        ("*.example.com", ("abexample.com",), ()),
        ("a.example.com", ("*.example.com",), ("a.example.com",)),
        ("example.com", ("*.example.com",), ()),
        (
            None,
            ("b.example.com", "a.example.com", "b.example.com"),
            ("b.example.com", "a.example.com"),
        ),
        ("h.example.com", (), ("h.example.com",)),
        (None, (), ("*",)),
    ],
)
def test_a_wildcard_covers_one_or_more_labels_and_nothing_shorter(listener, route, served):
    assert intersect_hostnames(listener, route) == served


def test_a_diagnostic_reads_as_severity_object_field_message_and_reason():
    key = ObjectKey("Ingress", "app", "web")
    about = Diagnostic(
        key=key, field="spec.rules[0]", severity=Severity.ERROR, reason="R", message="m"
    )
    no_field = Diagnostic(key=key, field="", severity=Severity.WARNING, reason="R", message="m")
    whole = Diagnostic(key=None, field="", severity=Severity.ERROR, reason="Skipped", message="m")
    assert str(about) == "error: Ingress app/web spec.rules[0]: m (R)"
    assert str(no_field) == "warning: Ingress app/web: m (R)"
    assert str(whole) == "error: input: m (Skipped)"


def test_documents_are_found_past_empty_ones_with_their_lines():
    text = "---\n---\nkind: A\n---\n# nothing\n---\nkind: B\nitems: 1\n"
    parsed = parse_manifests(text, "f.yaml")
    assert not isinstance(parsed, ManifestSyntaxError)
    assert [(b.body, b.line) for b in parsed] == [
        ({"kind": "A"}, 3),
        ({"kind": "B", "items": 1}, 7),
    ]


@pytest.mark.parametrize("path", ["f.json", "-"])
def test_json_documents_get_their_own_lines(path):
    text = '[\n  {"kind": "A"},\n\n  {"kind": "B"}\n]\n'
    parsed = parse_manifests(text, path)
    assert not isinstance(parsed, ManifestSyntaxError)
    assert [(b.body, b.line, b.path) for b in parsed] == [
        ({"kind": "A"}, 2, path),
        ({"kind": "B"}, 4, path),
    ]


def test_a_json_object_without_a_yaml_reading_still_starts_at_line_1():
    text = '{"kind": "A", "s": "\\ud800"}'
    parsed = parse_manifests(text, "f.json")
    assert not isinstance(parsed, ManifestSyntaxError)
    assert [(b.body["kind"], b.line) for b in parsed] == [("A", 1)]


@pytest.mark.parametrize(
    ("body", "items"),
    [
        ({"kind": "List", "apiVersion": "v1", "items": [{"kind": "A"}]}, [{"kind": "A"}]),
        (
            {"kind": "ServiceList", "apiVersion": "v1", "items": [{"metadata": {}}, 7]},
            [{"kind": "Service", "apiVersion": "v1", "metadata": {}}, 7],
        ),
        ({"kind": "List", "items": 3}, []),
    ],
)
def test_lists_are_flattened_and_typed_lists_name_their_items(body, items):
    parsed = parse_manifests(json.dumps(body), "f.json")
    assert not isinstance(parsed, ManifestSyntaxError)
    assert [b.body for b in parsed] == items


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (  # an unclosed collection: the line where it opens, not one past the end
            "a: [1\n",
            1,
            "while parsing a flow sequence, did not find expected ',' or ']'",
        ),
        ("a: b: c\n", 1, "mapping values are not allowed in this context"),
    ],
)
def test_yaml_errors_say_where_and_what(text, line, message):
    found = parse_manifests(text, "f.yaml")
    assert isinstance(found, ManifestSyntaxError)
    assert (found.line, found.message) == (line, message)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("10.0.0.1", "IPAddress"),
        ("fd00::1", "IPAddress"),
        ("1.2.3", "IPAddress"),
        ("lb.example.com", "Hostname"),
        ("a1.example", "Hostname"),
    ],
)
def test_a_load_balancer_address_is_an_ip_or_a_hostname(address, kind):
    service = Service(
        meta=Meta(key=ObjectKey("Service", "ns", "vip")),
        type="LoadBalancer",
        load_balancer=pvector([address]),
    )
    assert service_addresses(service) == [(kind, address)]


@pytest.mark.parametrize(
    ("cluster_ip", "addresses"),
    [("10.0.0.9", [("IPAddress", "10.0.0.9")]), ("None", []), (None, [])],
)
def test_other_services_give_their_cluster_ip(cluster_ip, addresses):
    service = Service(meta=Meta(key=ObjectKey("Service", "ns", "vip")), cluster_ip=cluster_ip)
    assert service_addresses(service) == addresses
    assert service_addresses(None) == []


def test_a_name_that_fits_63_characters_is_kept_and_a_longer_one_is_cut_and_hashed():
    fits = "a" * 63
    assert fit_name(fits) == fits
    long = "a" * 53 + "-" + "b" * 20
    digest = hashlib.sha256(long.encode()).hexdigest()[:8]
    assert fit_name(long) == "a" * 53 + "-" + digest
    dashed = "-" + "c" * 70
    dashed_digest = hashlib.sha256(dashed.encode()).hexdigest()[:8]
    assert fit_name(dashed, limit=20) == "-" + "c" * 10 + "-" + dashed_digest
    assert len(fit_name("x" * 64)) == 63
    upper = "a" * 53 + "X" + "b" * 20
    upper_digest = hashlib.sha256(upper.encode()).hexdigest()[:8]
    assert fit_name(upper) == "a" * 53 + "X-" + upper_digest


@pytest.mark.parametrize(
    ("host", "found"),
    [
        ("a.example.com", True),
        ("b.example.com", True),
        ("a.b.example.com", False),
        ("example.com", False),
        ("*", False),
    ],
)
def test_a_host_has_a_certificate_of_its_own_exactly_or_by_a_one_label_wildcard(host, found):
    certificates = pmap({"a.example.com": CERT, "*.example.com": CERT, "*": CERT})
    assert has_certificate(certificates, host) is found
    assert has_certificate(pmap({"*": CERT}), host) is False


def _ingress_with(annotations: dict[str, str]) -> Any:
    found = decode_object(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "i", "namespace": "app", "annotations": annotations},
        }
    )
    assert isinstance(found, Decoded)
    return found.obj


@pytest.mark.parametrize(
    ("value", "redirect"),
    [("true", True), ("TRUE", True), ("True", True), ("false", False), ("FALSE", False)],
)
def test_ssl_redirect_is_true_or_false_in_any_case(value, redirect):
    options, found = parse_options(_ingress_with({"coxswain-labs.dev/ssl-redirect": value}))
    assert (options.ssl_redirect, found) == (redirect, [])


def test_a_diagnostic_about_the_input_sorts_before_any_object():
    def about(kind: str | None, name: str) -> Diagnostic:
        key = None if kind is None else ObjectKey(kind, "app", name)
        return Diagnostic(key=key, field="", severity=Severity.ERROR, reason="R", message="m")

    found = [about("Service", "b"), about("Ingress", "z"), about(None, ""), about("Service", "a")]
    assert sorted(found, key=diagnostic_order) == [found[2], found[1], found[3], found[0]]


def test_a_snapshot_is_dumped_with_sorted_keys_two_space_indent_and_a_final_newline():
    snapshot = compile(build_state([]), SharedPool()).snapshot
    data = snapshot_to_data(snapshot)
    assert dump_snapshot(snapshot) == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert dump_snapshot(snapshot, indent=None) == json.dumps(data, sort_keys=True) + "\n"
    assert dump_snapshot(snapshot).startswith('{\n  "client_certs": {},\n')
