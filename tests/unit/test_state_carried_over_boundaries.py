"""compile.model.state.carried_over: the new state's whole-input fields are carried too."""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.state import ClusterState, carried_over


def test_gateway_api_and_input_findings_come_from_the_new_state() -> None:
    finding = Diagnostic(key=None, field="", severity=Severity.WARNING, reason="R", message="m")
    for gateway_api, found in (
        (False, pvector()),
        (True, pvector([finding])),
        (False, pvector([finding])),
    ):
        state = replace(ClusterState(), gateway_api=gateway_api, input_diagnostics=found)
        carried = carried_over(ClusterState(), state)
        assert (carried.gateway_api, carried.input_diagnostics) == (gateway_api, found)
