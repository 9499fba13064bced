"""Where findings are: file and line from the manifests, for every finding of a file's object."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.manifests import ManifestSyntaxError, SourcedBody, parse_manifests
from coxswain.compile.model.places import locate

if TYPE_CHECKING:
    from collections.abc import Iterable

BROKEN = """\
apiVersion: v1
kind: Service
metadata:
  namespace: app
---
- just a string
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: app}
spec: {ingressClassName: absent}
"""
MORE_WIDGETS = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\n"


def parsed(text: str, path: str) -> list[SourcedBody]:
    bodies = parse_manifests(text, path)
    assert not isinstance(bodies, ManifestSyntaxError), bodies
    return bodies


def placed(diagnostics: Iterable[Diagnostic]) -> list[tuple[str, str, int]]:
    return [(d.reason, d.file, d.line) for d in diagnostics]


def test_bodies_that_are_no_object_are_reported_at_their_file_and_line():
    state = build_state(parsed(BROKEN, "a.yaml"))
    assert placed(state.input_diagnostics) == [
        ("MalformedObject", "a.yaml", 1),
        ("MalformedObject", "a.yaml", 6),
        ("UnrecognisedKind", "a.yaml", 8),
    ]
    assert [str(d).split(": ")[0] for d in state.input_diagnostics] == [
        "a.yaml:1",
        "a.yaml:6",
        "a.yaml:8",
    ]
    assert not any("input" in str(d) for d in state.input_diagnostics)


@pytest.mark.parametrize("reverse", [False, True])
def test_a_kind_skipped_several_times_is_reported_once_at_its_first_place(reverse):
    bodies = parsed(MORE_WIDGETS, "0.yaml") + parsed(BROKEN, "a.yaml")
    state = build_state(reversed(bodies) if reverse else bodies)
    (skipped,) = [d for d in state.input_diagnostics if d.reason == "UnrecognisedKind"]
    assert (skipped.file, skipped.line) == ("0.yaml", 1)
    assert skipped.message.startswith("skipped 2 object(s) of example.com/v1 Widget")


def test_raw_bodies_give_findings_without_a_place():
    state = build_state(b.body for b in parsed(BROKEN, "a.yaml"))
    assert {(d.file, d.line) for d in state.input_diagnostics} == {("", 0)}
    assert str(state.input_diagnostics[0]).startswith("error: input: ")


def test_findings_about_an_object_get_the_place_of_its_body():
    bodies = parsed(BROKEN, "a.yaml")
    found = compile(build_state(bodies), SharedPool()).diagnostics
    located = locate(found, bodies)
    (missing,) = [d for d in located if d.reason == "IngressClassNotFound"]
    assert (missing.key, missing.field) == (
        ObjectKey("Ingress", "app", "shop"),
        "spec.ingressClassName",
    )
    assert str(missing).startswith("a.yaml:12: warning: Ingress app/shop spec.ingressClassName: ")
    assert [d.reason for d in located] == [d.reason for d in found]  # same order


def finding(key: ObjectKey | None, file: str = "", line: int = 0) -> Diagnostic:
    return Diagnostic(
        key=key, field="", severity=Severity.ERROR, reason="R", message="m", file=file, line=line
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_an_object_given_twice_is_placed_at_its_first_place_whatever_the_order(reverse):
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n"
    bodies = parsed("---\n" + namespace, "b.yaml") + parsed(namespace, "a.yaml")
    (where,) = locate(
        [finding(ObjectKey("Namespace", "", "n"))], reversed(bodies) if reverse else bodies
    )
    assert (where.file, where.line) == ("a.yaml", 1)


def test_a_finding_that_has_its_place_keeps_it_and_one_without_a_body_gets_none():
    found = [finding(None), finding(ObjectKey("Service", "app", "gone")), finding(None, "x", 3)]
    assert locate(found, parsed(BROKEN, "a.yaml")) == found
