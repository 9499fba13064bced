"""compile.labels.parse_selector at its edges: each part must be a valid ``key=value`` label."""

from __future__ import annotations

import pytest

from coxswain.compile.labels import parse_selector


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a=b,c=d", {"a": "b", "c": "d"}),
        (" a=b , c=d ", {"a": "b", "c": "d"}),
        ("a=", {"a": ""}),
        ("a=b=c", None),
        ("example.com/a=b", {"example.com/a": "b"}),
        ("A_b.c-D=x_Y.z-1", {"A_b.c-D": "x_Y.z-1"}),
        ("k" * 63 + "=" + "v" * 63, {"k" * 63: "v" * 63}),
    ],
)
def test_valid_selectors_are_parsed(text, expected):
    assert parse_selector(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "a=b,",
        ",a=b",
        "=b",
        "-a=b",
        "a-=b",
        "a=-b",
        "a=b-",
        "Example.com/a=b",
        "k" * 64 + "=v",
        "k=" + "v" * 64,
        "a=b c",
        "a b=c",
    ],
)
def test_invalid_selectors_are_refused(text):
    assert parse_selector(text) is None
