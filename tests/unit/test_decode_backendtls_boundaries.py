"""compile.model.decode_backendtls: what each BackendTLSPolicy field decodes to, exactly (GEP-1897).

Each case pins the kept values, the ``invalid`` reasons that make the compiler refuse the
policy, and the findings (field, severity, reason, message), at the CRD's bounds and past them.
"""

from __future__ import annotations

from typing import Any

from pyrsistent import pvector

from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.model.gateway_objects import ObjectRef, PolicyTarget
from coxswain.compile.snapshot import SubjectAltName

NO_TARGET = ("spec.targetRefs", "error", "InvalidField", "the policy targets nothing")
CA = {"group": "", "kind": "ConfigMap", "name": "ca"}
TARGET = {"group": "", "kind": "Service", "name": "s"}
GOOD = {"hostname": "shop.example.com", "wellKnownCACertificates": "System"}


def _policy(spec: dict[str, Any]) -> tuple[Any, list[tuple[str, str, str, str]]]:
    found = decode_object(
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "BackendTLSPolicy",
            "metadata": {"name": "p", "namespace": "app"},
            "spec": spec,
        }
    )
    assert isinstance(found, Decoded)
    policy = found.obj
    return policy, [(d.field, d.severity.value, d.reason, d.message) for d in policy.diagnostics]


def test_an_empty_spec_is_invalid_for_each_missing_part_and_targets_nothing() -> None:
    policy, problems = _policy({})
    assert policy.hostname == ""
    assert policy.invalid == pvector(
        [
            ("spec.validation", "the policy has no validation"),
            ("spec.validation.hostname", "the policy has no hostname to send and verify"),
            ("spec.validation", "one of caCertificateRefs and wellKnownCACertificates must be set"),
        ]
    )
    assert problems == [NO_TARGET]


def test_both_ca_sources_are_invalid_and_a_wrong_type_is_reported_at_its_field() -> None:
    policy, _ = _policy({"validation": {**GOOD, "caCertificateRefs": [CA]}, "targetRefs": [TARGET]})
    assert policy.invalid == pvector(
        [("spec.validation", "caCertificateRefs and wellKnownCACertificates cannot both be set")]
    )
    policy, problems = _policy(
        {
            "validation": {
                "hostname": "a.example",
                "wellKnownCACertificates": 7,
                "caCertificateRefs": [CA],
            }
        }
    )
    assert policy.well_known is None
    assert policy.invalid == pvector()
    assert problems == [
        (
            "spec.validation.wellKnownCACertificates",
            "error",
            "InvalidField",
            "expected a string, found int 7",
        ),
        NO_TARGET,
    ]


def test_a_ca_reference_without_a_kind_keeps_an_empty_kind() -> None:
    policy, _ = _policy(
        {"validation": {"hostname": "a.example", "caCertificateRefs": [{"name": "ca"}]}}
    )
    assert policy.ca_refs == pvector(
        [ObjectRef(group="", kind="", name="ca", field="spec.validation.caCertificateRefs[0]")]
    )


def test_a_hostname_not_lower_case_or_not_a_dns_name_is_invalid_and_kept() -> None:
    for hostname in ("Shop.example.com", "bad_name"):
        policy, _ = _policy({"validation": {**GOOD, "hostname": hostname}})
        assert policy.hostname == hostname
        assert policy.invalid == pvector(
            [("spec.validation.hostname", f"{hostname!r} is not a lower-case DNS name")]
        )


def test_sixteen_targets_are_kept_and_a_seventeenth_is_reported_and_ignored() -> None:
    refs = [{**TARGET, "name": f"s{n}"} for n in range(17)]
    policy, problems = _policy({"validation": GOOD, "targetRefs": refs[:16]})
    assert [t.name for t in policy.targets] == [f"s{n}" for n in range(16)]
    assert problems == []
    policy, problems = _policy({"validation": GOOD, "targetRefs": refs})
    assert [t.name for t in policy.targets] == [f"s{n}" for n in range(16)]
    assert problems == [
        (
            "spec.targetRefs",
            "error",
            "InvalidField",
            "17 entries, more than 16; those past the 16th are ignored",
        )
    ]


def test_a_bad_target_is_skipped_and_the_targets_after_it_are_kept() -> None:
    policy, problems = _policy(
        {
            "validation": GOOD,
            "targetRefs": [
                "s",
                {"kind": "Service"},
                {"name": 5},
                {"name": "a"},
                TARGET,
                {**TARGET, "sectionName": ""},
                {**TARGET, "name": "b", "sectionName": "https"},
            ],
        }
    )
    assert policy.targets == pvector(
        [
            PolicyTarget(group="", kind="", name="a", field="spec.targetRefs[3]"),
            PolicyTarget(group="", kind="Service", name="s", field="spec.targetRefs[4]"),
            PolicyTarget(
                group="", kind="Service", name="b", section_name="https", field="spec.targetRefs[6]"
            ),
        ]
    )
    assert problems == [
        ("spec.targetRefs[0]", "error", "InvalidField", "expected an object, found str 's'"),
        ("spec.targetRefs[1].name", "error", "InvalidField", "the target has no name; ignored"),
        ("spec.targetRefs[2].name", "error", "InvalidField", "expected a string, found int 5"),
        (
            "spec.targetRefs[5]",
            "error",
            "InvalidField",
            "the same target is named twice; ignored",
        ),
    ]


def test_each_bad_subject_alt_name_is_invalid_and_the_names_after_it_are_kept() -> None:
    uri_253 = "spiffe://" + "a" * 244
    policy, _ = _policy(
        {
            "validation": {
                **GOOD,
                "subjectAltNames": [
                    "x",
                    {"type": "Hostname", "hostname": "bad_name!"},
                    {"type": "URI", "uri": "not-a-uri"},
                    {"type": "Other", "hostname": "a.example"},
                    {"type": "URI", "uri": uri_253},
                ],
            },
            "targetRefs": [TARGET],
        }
    )
    assert policy.subject_alt_names == pvector([SubjectAltName(type="URI", value=uri_253)])
    assert policy.invalid == pvector(
        [
            ("spec.validation.subjectAltNames[0]", "not an object"),
            ("spec.validation.subjectAltNames[1].hostname", "'bad_name!' is not a DNS name"),
            ("spec.validation.subjectAltNames[2].uri", "'not-a-uri' is not an absolute URI"),
            (
                "spec.validation.subjectAltNames[3]",
                "type 'Other' needs exactly its own value: hostname for Hostname, uri for URI",
            ),
        ]
    )


def test_subject_alt_names_after_a_bad_hostname_or_uri_are_kept() -> None:
    policy, _ = _policy(
        {
            "validation": {
                **GOOD,
                "subjectAltNames": [
                    {"type": "Hostname", "hostname": "bad_name!"},
                    {"type": "Hostname", "hostname": "a.example"},
                    {"type": "URI", "uri": "spiffe://" + "a" * 245},
                    {"type": "URI", "uri": "https://a.example/x"},
                ],
            },
            "targetRefs": [TARGET],
        }
    )
    assert policy.subject_alt_names == pvector(
        [
            SubjectAltName(type="Hostname", value="a.example"),
            SubjectAltName(type="URI", value="https://a.example/x"),
        ]
    )
    assert [field for field, _ in policy.invalid] == [
        "spec.validation.subjectAltNames[0].hostname",
        "spec.validation.subjectAltNames[2].uri",
    ]


def test_each_option_is_a_warning_and_more_than_sixteen_keys_are_an_error() -> None:
    options = {f"k{n:02}": "v" for n in range(17)}
    _, problems = _policy({"validation": GOOD, "targetRefs": [TARGET], "options": options})
    warning = "Coxswain defines no BackendTLSPolicy option; ignored"
    assert problems == [
        ("spec.options", "error", "InvalidField", "17 keys, more than 16"),
        *[(f"spec.options['k{n:02}']", "warning", "UnsupportedValue", warning) for n in range(16)],
    ]
    del options["k16"]
    _, problems = _policy({"validation": GOOD, "targetRefs": [TARGET], "options": options})
    assert len(problems) == 16
    _, problems = _policy({"validation": GOOD, "targetRefs": [TARGET], "options": {"k": 5}})
    assert problems == [
        ("spec.options['k']", "error", "InvalidField", "expected a string, found int 5")
    ]
