"""compile.gateway.route_rules: why a header modifier is refused, exactly (RFC 9110 §5.1,
§5.5): the verb, the header and the value quoted, for each list it may come from."""

from __future__ import annotations

import pytest
from pyrsistent import pvector

from coxswain.compile.gateway.route_rules import _header_edits_problem
from coxswain.compile.snapshot_filters import HeaderEdits

_VALUE = "is not an RFC 9110 field value (control characters, or white space at either end)"


@pytest.mark.parametrize(
    ("edits", "problem"),
    [
        (
            HeaderEdits(set=pvector([("x a", "v")])),
            "set header name 'x a' is not an RFC 9110 token",
        ),
        (HeaderEdits(set=pvector([("x-a", "v\n")])), f"set header x-a value 'v\\n' {_VALUE}"),
        (
            HeaderEdits(add=pvector([("x a", "v")])),
            "add header name 'x a' is not an RFC 9110 token",
        ),
        (HeaderEdits(add=pvector([("x-a", " v")])), f"add header x-a value ' v' {_VALUE}"),
        (HeaderEdits(remove=pvector(["x a"])), "remove header name 'x a' is not an RFC 9110 token"),
        (HeaderEdits(set=pvector([("x-a", "v")]), remove=pvector(["x-b"])), None),
    ],
)
def test_a_header_modifier_names_the_first_name_or_value_refused(
    edits: HeaderEdits, problem: str | None
) -> None:
    assert _header_edits_problem(edits) == problem
