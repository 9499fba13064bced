"""A canary Ingress's annotations at their edges (``compile.ingress.canary``; ingress-nginx's
``canary-*``, docs/migrating-from-ingress-nginx.md, "Canary"): what reaches the main path's
``Canary``, and the exact finding for each value refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from coxswain.compile import SharedPool, build_state, compile
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, service

if TYPE_CHECKING:
    from coxswain.compile.snapshot import Canary

NGINX = "nginx.ingress.kubernetes.io/"


def attached(annotations: dict[str, str]) -> tuple[Canary, list[tuple[str, str]]]:
    """The main path's canary, and the (annotation, message) of each value refused."""
    main = ingress("main", rule("shop.example.com", path("/", "a")))
    canary = ingress(
        "canary",
        rule("shop.example.com", path("/", "b")),
        annotations={NGINX + "canary": "true", **{NGINX + k: v for k, v in annotations.items()}},
    )
    state = build_state([INGRESS_CLASS, main, canary, *service("a"), *service("b")])
    result = compile(state, SharedPool())
    actions = result.snapshot.ingress.hosts["shop.example.com"].paths[0].actions
    assert actions is not None
    assert actions.canary is not None
    prefix = f"metadata.annotations[{NGINX!r}"[:-1]
    found = [
        (d.field.removeprefix(prefix).removesuffix("']"), d.message)
        for d in result.diagnostics
        if d.reason == "InvalidAnnotation"
    ]
    return actions.canary, found


def test_without_rules_the_canary_weighs_nothing_out_of_100() -> None:
    canary, found = attached({})
    assert (canary.weight, canary.weight_total, found) == (0, 100, [])
    assert (canary.header, canary.header_value, canary.header_pattern, canary.cookie) == (None,) * 4


@given(total=st.sampled_from([0, 1, 99, 100, 101, 1000, 1 << 31, (1 << 31) + 1]))
@example(total=0)
@example(total=99)
@example(total=1000)
@example(total=(1 << 31) + 1)
def test_weight_total_is_a_positive_whole_number_at_least_100(total: int) -> None:
    canary, found = attached({"canary-weight-total": str(total)})
    if 0 < total <= 1 << 31:
        assert (canary.weight_total, found) == (max(total, 100), [])
    else:
        assert canary.weight_total == 100
        assert found == [("canary-weight-total", "is not a positive whole number")]


@given(weight=st.sampled_from(["0", "1", "99", "100", "101", "x", "-1"]))
@example(weight="0")
@example(weight="100")
@example(weight="101")
def test_weight_is_a_whole_number_up_to_the_total(weight: str) -> None:
    canary, found = attached({"canary-weight": weight})
    if weight.isdigit() and int(weight) <= 100:
        assert (canary.weight, found) == (int(weight), [])
    else:
        why = "is not a whole number from 0 to 100; 0 applies"
        assert (canary.weight, found) == (0, [("canary-weight", why)])


def test_the_weight_is_bounded_by_the_total_given() -> None:
    canary, found = attached({"canary-weight": "150", "canary-weight-total": "200"})
    assert (canary.weight, canary.weight_total, found) == (150, 200, [])


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("a b", True),
        ("a~", True),
        ("a\tb", True),
        ("v" * 1024, True),
        ("v" * 1025, False),
        ("a\x7f", False),
        ("a\x1fb", False),
        ("é", False),
    ],
)
def test_a_header_value_is_visible_ascii_space_and_tab_up_to_1024(value: str, kept: bool) -> None:
    canary, found = attached({"canary-by-header": "X-Canary", "canary-by-header-value": value})
    assert canary.header == "X-Canary"
    if kept:
        assert (canary.header_value, found) == (value, [])
    else:
        why = f"{value[:60]!r} is not a header value; not applied"
        assert (canary.header_value, found) == (None, [("canary-by-header-value", why)])


@pytest.mark.parametrize(
    ("annotation", "value", "what", "field"),
    [
        ("canary-by-header", "X Canary", "a header name", "header"),
        ("canary-by-cookie", "a;b", "a cookie name", "cookie"),
        ("canary-by-header-pattern", "(", "an RE2 pattern", "header_pattern"),
    ],
)
def test_names_and_patterns_that_do_not_parse_are_reported(
    annotation: str, value: str, what: str, field: str
) -> None:
    canary, found = attached({annotation: value})
    assert getattr(canary, field) is None
    assert found == [(annotation, f"{value!r} is not {what}; not applied")]


def test_valid_names_and_patterns_reach_the_canary() -> None:
    canary, found = attached(
        {
            "canary-by-header": "X-Canary",
            "canary-by-header-pattern": "^b[0-9]",
            "canary-by-cookie": "try",
        }
    )
    assert (canary.header, canary.header_pattern, canary.cookie, found) == (
        "X-Canary",
        "^b[0-9]",
        "try",
        [],
    )


def test_a_refused_value_is_quoted_by_its_first_60_characters() -> None:
    value = "x y" * 30
    _, found = attached({"canary-by-cookie": value})
    assert found == [("canary-by-cookie", f"{value[:60]!r} is not a cookie name; not applied")]
