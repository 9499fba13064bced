"""A finding's text at its edges (``compile.diagnostics.Diagnostic.__str__``): a finding about
no object says ``input`` only when it has no place, as the place says more."""

from __future__ import annotations

from coxswain.compile.diagnostics import Diagnostic, Severity


def test_a_finding_about_no_object_names_its_place_or_else_the_input() -> None:
    placed = Diagnostic(
        key=None,
        field="",
        severity=Severity.ERROR,
        reason="R",
        message="bad",
        file="in.yaml",
        line=3,
    )
    assert str(placed) == "in.yaml:3: error: bad (R)"
    unplaced = Diagnostic(key=None, field="", severity=Severity.ERROR, reason="R", message="bad")
    assert str(unplaced) == "error: input: bad (R)"
