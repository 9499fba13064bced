"""compile.model decoders: the values, bounds and defaults each field takes, exactly.

tests/unit/test_decode_boundaries.py checks every field is reported where it is; these pin
what a decoder makes of a value in range, at a bound or absent: mirror shares, namespace
selectors, path modifiers, client-certificate references and opaque parameter blocks.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import trustme

from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.manifests import ManifestSyntaxError, parse_manifests

GW = "gateway.networking.k8s.io/v1"


def _decoded(body: dict[str, Any]) -> Any:
    found = decode_object(body)
    assert isinstance(found, Decoded)
    return found.obj


def _route_filter(filter_: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    route = _decoded(
        {
            "apiVersion": GW,
            "kind": "HTTPRoute",
            "metadata": {"name": "r", "namespace": "app"},
            "spec": {"rules": [{"filters": [filter_]}]},
        }
    )
    [found] = route.rules[0].filters
    return found, [(d.field, d.message) for d in route.diagnostics]


def _mirror(**mirror: Any) -> dict[str, Any]:
    return {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "m"}, **mirror}}


@pytest.mark.parametrize(
    ("mirror", "percent", "problems"),
    [
        ({}, 100.0, []),
        ({"percent": 0}, 0.0, []),
        ({"percent": 100}, 100.0, []),
        ({"percent": 101}, 100.0, [("percent", "101 is outside 0..100")]),
        ({"percent": -1}, 100.0, [("percent", "-1 is outside 0..100")]),
        ({"fraction": {"numerator": 1}}, 1.0, []),
        ({"fraction": {"numerator": 0, "denominator": 1}}, 0.0, []),
        ({"fraction": {"numerator": 1, "denominator": 3}}, 100.0 / 3, []),
        ({"fraction": {"numerator": 5, "denominator": 4}}, 100.0, []),
        ({"fraction": {"numerator": 2**31, "denominator": 2**31}}, 100.0, []),
        ({"fraction": {}}, 100.0, []),
        (
            {"fraction": {"numerator": 2**31 + 1}},
            100.0,
            [("fraction.numerator", "2147483649 is outside 0..2147483648")],
        ),
        (
            {"fraction": {"numerator": 1, "denominator": 0}},
            1.0,
            [("fraction.denominator", "0 is outside 1..2147483648")],
        ),
        (
            {"fraction": {"numerator": 1, "denominator": 2**31 + 1}},
            1.0,
            [("fraction.denominator", "2147483649 is outside 1..2147483648")],
        ),
    ],
)
def test_a_mirror_share_is_its_percent_or_its_fraction_at_most_everything(
    mirror, percent, problems
):
    found, diagnostics = _route_filter(_mirror(**mirror))
    assert found.mirror_percent == pytest.approx(percent)
    where = "spec.rules[0].filters[0].requestMirror"
    assert diagnostics == [(f"{where}.{field}", message) for field, message in problems]


@pytest.mark.parametrize(
    ("modifier", "kind", "value"),
    [
        ({"type": "ReplaceFullPath", "replaceFullPath": "/x"}, "ReplaceFullPath", "/x"),
        ({"type": "ReplacePrefixMatch", "replacePrefixMatch": "/y"}, "ReplacePrefixMatch", "/y"),
        ({"type": "ReplaceFullPath"}, "ReplaceFullPath", "/"),
        ({"type": "Other", "replaceFullPath": "/x"}, "Other", "/"),
        ({}, "", "/"),
    ],
)
def test_a_path_modifier_takes_the_value_its_type_names_or_slash(modifier, kind, value):
    found, _ = _route_filter({"type": "URLRewrite", "urlRewrite": {"path": modifier}})
    assert (found.rewrite.path.type, found.rewrite.path.value) == (kind, value)


def _listener_selector(namespaces: dict[str, Any]) -> Any:
    gateway = _decoded(
        {
            "apiVersion": GW,
            "kind": "Gateway",
            "metadata": {"name": "g", "namespace": "app"},
            "spec": {
                "listeners": [
                    {
                        "name": "l",
                        "port": 80,
                        "protocol": "HTTP",
                        "allowedRoutes": {"namespaces": namespaces},
                    }
                ]
            },
        }
    )
    return gateway.listeners[0].allowed_routes.selector


WHERE = "spec.listeners[0].allowedRoutes.namespaces.selector.matchExpressions[0]"


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ({"key": "k", "operator": "In", "values": ["a"]}, None),
        ({"key": "k", "operator": "NotIn", "values": ["a"]}, None),
        ({"key": "k", "operator": "Exists"}, None),
        ({"key": "k", "operator": "DoesNotExist"}, None),
        (
            {"key": "k", "operator": "In"},
            f"{WHERE}: In needs values for In/NotIn and none otherwise",
        ),
        (
            {"key": "k", "operator": "NotIn", "values": []},
            f"{WHERE}: NotIn needs values for In/NotIn and none otherwise",
        ),
        (
            {"key": "k", "operator": "Exists", "values": ["a"]},
            f"{WHERE}: Exists needs values for In/NotIn and none otherwise",
        ),
        ({"key": "k", "operator": "Near"}, f"{WHERE}: operator 'Near' on key 'k' is not valid"),
        ({"key": "k"}, f"{WHERE}: operator '' on key 'k' is not valid"),
        ({"operator": "Exists"}, f"{WHERE}: operator 'Exists' on key '' is not valid"),
    ],
)
def test_a_selector_expression_needs_a_key_an_operator_and_values_only_for_in(expression, problem):
    selector = _listener_selector(
        {"from": "Selector", "selector": {"matchExpressions": [expression]}}
    )
    assert selector.problem == problem
    [requirement] = selector.match_expressions
    assert (requirement.key, requirement.operator) == (
        expression.get("key", ""),
        expression.get("operator", ""),
    )


def test_a_selector_namespace_rule_without_a_selector_has_a_problem():
    selector = _listener_selector({"from": "Selector"})
    assert selector.problem == "namespaces.from is Selector but no selector is given"


def test_client_certificate_references_default_to_core_config_maps():
    gateway = _decoded(
        {
            "apiVersion": GW,
            "kind": "Gateway",
            "metadata": {"name": "g", "namespace": "app"},
            "spec": {
                "listeners": [],
                "tls": {
                    "frontend": {"default": {"validation": {"caCertificateRefs": [{"name": "ca"}]}}}
                },
            },
        }
    )
    validation = gateway.frontend_default
    [ref] = validation.ca_refs
    assert (ref.group, ref.kind, ref.name) == ("", "ConfigMap", "ca")
    assert validation.mode == "AllowValidOnly"


def test_a_parameters_block_keeps_values_json_cannot_hold_as_text():
    text = (
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1\nkind: CoxswainGatewayParameters\n"
        "metadata: {name: p, namespace: app}\nspec:\n  podTemplate:\n    metadata:\n"
        "      annotations: {when: 2024-01-02}\n"
    )
    parsed = parse_manifests(text, "p.yaml")
    assert not isinstance(parsed, ManifestSyntaxError)
    [body] = [b.body for b in parsed]
    assert body["spec"]["podTemplate"]["metadata"]["annotations"]["when"] == datetime.date(
        2024, 1, 2
    )
    parameters = _decoded(body)
    assert parameters.pod_template == '{"metadata": {"annotations": {"when": "2024-01-02"}}}'


@pytest.mark.parametrize(
    ("text", "path", "number"),
    [
        ('  {"kind": "A", "n": 1e5}', "-", 100000.0),
        ('[{"kind": "A", "n": 1e5}]', "-", 100000.0),
        ('{"kind": "A", "n": 1e5}', "a.json", 100000.0),
        ('{"kind": "A", "n": 1e5}', "a.yaml", "1e5"),
        ("kind: A\nn: 1e5\n", "-", "1e5"),
    ],
)
def test_json_is_read_as_json_from_json_files_and_json_looking_standard_input(text, path, number):
    # JSON and YAML 1.1 read 1e5 differently (a number; a string): it shows which parser ran
    parsed = parse_manifests(text, path)
    assert not isinstance(parsed, ManifestSyntaxError)
    assert [b.body["n"] for b in parsed] == [number]


def test_standard_input_that_is_not_json_after_all_is_read_as_yaml():
    parsed = parse_manifests('{"kind": "A", bad: yaml}', "-")
    assert not isinstance(parsed, ManifestSyntaxError)
    assert [b.body for b in parsed] == [{"kind": "A", "bad": "yaml"}]


@pytest.mark.parametrize(
    ("status", "problems"),
    [
        (100, []),
        (599, []),
        (99, ["99 is outside 100..599"]),
        (600, ["600 is outside 100..599"]),
    ],
)
def test_a_redirect_status_code_is_between_100_and_599(status, problems):
    found, diagnostics = _route_filter(
        {"type": "RequestRedirect", "requestRedirect": {"statusCode": status}}
    )
    assert [message for _, message in diagnostics] == problems
    assert found.redirect.status == (status if not problems else 302)


def test_a_filter_without_a_type_has_the_empty_type():
    found, _ = _route_filter({})
    assert found.type == ""


def _parameters(spec: dict[str, Any]) -> Any:
    return _decoded(
        {
            "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
            "kind": "CoxswainGatewayParameters",
            "metadata": {"name": "p", "namespace": "app"},
            "spec": spec,
        }
    )


@pytest.mark.parametrize(
    ("replicas", "kept", "problems"),
    [
        (0, 0, []),
        (1000, 1000, []),
        (1001, None, ["1001 is outside 0..1000"]),
        (-1, None, ["-1 is outside 0..1000"]),
    ],
)
def test_parameters_replicas_are_between_0_and_1000(replicas, kept, problems):
    parameters = _parameters({"replicas": replicas})
    assert parameters.replicas == kept
    assert [(d.field, d.message) for d in parameters.diagnostics] == [
        ("spec.replicas", p) for p in problems
    ]


@pytest.mark.parametrize(
    ("ready", "is_ready", "problems"),
    [
        (0, False, []),
        (1, True, []),
        (2**31, True, []),
        (2**31 + 1, False, ["2147483649 is outside 0..2147483648"]),
        (-1, False, ["-1 is outside 0..2147483648"]),
    ],
)
def test_a_deployment_is_ready_with_one_ready_replica_or_more(ready, is_ready, problems):
    deployment = _decoded(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "app"},
            "status": {"readyReplicas": ready},
        }
    )
    assert deployment.ready is is_ready
    assert [(d.field, d.message) for d in deployment.diagnostics] == [
        ("status.readyReplicas", p) for p in problems
    ]


def _config_map(data: Any) -> Any:
    return _decoded(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "app"},
            "data": data,
        }
    )


def test_a_config_map_without_ca_crt_has_that_problem():
    found = _config_map({"other": "x"})
    assert (found.ca_bundle, found.problem) == (None, "has no ca.crt key")


def test_a_config_map_with_a_bad_bundle_names_ca_crt_and_keeps_no_bundle():
    found = _config_map({"ca.crt": "not a certificate"})
    assert found.ca_bundle is None
    assert found.problem is not None
    assert found.problem.startswith("ca.crt ")
    assert len(found.problem) > len("ca.crt ")


def test_a_config_map_with_a_good_bundle_keeps_it_and_its_findings():
    pem = trustme.CA().cert_pem.bytes().decode()
    found = _config_map({"ca.crt": pem, "other": 7})
    assert (found.ca_bundle, found.problem) == (pem, None)
    assert found == _config_map({"ca.crt": pem})
    labelled = _decoded(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "app", "labels": {"a": 7}},
            "data": {"ca.crt": pem},
        }
    )
    assert [d.field for d in labelled.diagnostics] == ["metadata.labels['a']"]


def test_a_reference_grant_target_keeps_its_name_or_none_for_any():
    grant = _decoded(
        {
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "kind": "ReferenceGrant",
            "metadata": {"name": "g", "namespace": "app"},
            "spec": {
                "from": [{"group": GW.split("/")[0], "kind": "HTTPRoute", "namespace": "web"}],
                "to": [
                    {"group": "", "kind": "Service", "name": "one"},
                    {"group": "", "kind": "Secret"},
                ],
            },
        }
    )
    assert list(grant.targets) == [("", "Service", "one"), ("", "Secret", None)]
