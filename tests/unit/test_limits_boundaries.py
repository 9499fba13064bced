"""Exact values of the raw-data bounds (coxswain/compile/model/limits.py): which field a
refusal names, how keys that are not strings count, and how ``preview`` cuts a value."""

from __future__ import annotations

from coxswain.compile.model.limits import (
    MAX_OBJECT_DEPTH,
    MAX_OBJECT_SIZE,
    Excess,
    measure,
    preview,
)


def test_the_bounds_are_those_the_security_page_gives():
    assert MAX_OBJECT_DEPTH == 64
    assert MAX_OBJECT_SIZE == 3 * 1024 * 1024


def test_a_key_that_is_not_a_string_counts_as_a_value_only():
    # the mapping, the characters of "cd", its two values, the characters of "ab"
    assert measure({1: "ab", "cd": 2}, max_depth=5, max_size=100) == 1 + 2 + 2 + 2
    assert measure({1: "ab", "cd": 2}, max_depth=5, max_size=6) == Excess(
        "[1]", "ObjectTooLarge", "is larger than 6 (values plus characters)"
    )


def test_a_scalar_body_is_one_value():
    assert measure(7, max_depth=1, max_size=1) == 1
    assert measure("abc", max_depth=1, max_size=4) == 4
    assert measure("abc", max_depth=1, max_size=3) == Excess(
        "", "ObjectTooLarge", "is larger than 3 (values plus characters)"
    )


def test_the_refusal_names_the_first_two_levels_of_the_field():
    deep = {"spec": {"template": {"a": {"b": {}}}}}
    assert measure(deep, max_depth=3, max_size=100) == Excess(
        "spec.template", "ObjectTooDeep", "nests deeper than 3 levels"
    )
    assert measure(deep, max_depth=2, max_size=100) == Excess(
        "spec.template", "ObjectTooDeep", "nests deeper than 2 levels"
    )
    assert measure(deep, max_depth=1, max_size=100) == Excess(
        "spec", "ObjectTooDeep", "nests deeper than 1 levels"
    )


def test_list_items_are_named_by_their_index():
    body = {"items": [1, {"x": [[]]}]}
    assert measure(body, max_depth=3, max_size=100) == Excess(
        "items[1]", "ObjectTooDeep", "nests deeper than 3 levels"
    )
    assert measure([[0], [[]]], max_depth=2, max_size=100) == Excess(
        "[1][0]", "ObjectTooDeep", "nests deeper than 2 levels"
    )


def test_a_too_large_string_names_its_field():
    body = {"metadata": {"annotations": {"k": "v" * 50}}}
    assert measure(body, max_depth=10, max_size=40) == Excess(
        "metadata.annotations", "ObjectTooLarge", "is larger than 40 (values plus characters)"
    )
    assert measure({"a": "x" * 10}, max_depth=10, max_size=12) == Excess(
        "a", "ObjectTooLarge", "is larger than 12 (values plus characters)"
    )


def test_a_too_large_container_names_its_field():
    assert measure({"a": [0] * 10}, max_depth=10, max_size=8) == Excess(
        "a", "ObjectTooLarge", "is larger than 8 (values plus characters)"
    )


def test_a_long_key_is_named_by_its_first_sixty_characters():
    key = "k" * 70
    assert measure({key: {"x": {}}}, max_depth=2, max_size=1000) == Excess(
        "k" * 60 + ".x", "ObjectTooDeep", "nests deeper than 2 levels"
    )
    assert measure({key: {}}, max_depth=1, max_size=1000) == Excess(
        "k" * 60, "ObjectTooDeep", "nests deeper than 1 levels"
    )


def test_a_key_that_is_not_a_string_is_named_by_its_preview():
    assert measure({(1, 2): {"x": []}}, max_depth=2, max_size=1000) == Excess(
        "(1, 2).x", "ObjectTooDeep", "nests deeper than 2 levels"
    )


def test_preview_cuts_to_sixty_characters_and_two_levels():
    assert preview("a" * 100) == "'" + "a" * 27 + "..." + "a" * 28 + "'"
    assert preview("a" * 58) == "'" + "a" * 58 + "'"
    assert preview({"k": list(range(100))}) == "{'k': [0, 1, 2, 3, 4, 5, ...]}"
    assert preview([[[1]]]) == "[[[...]]]"
    assert preview(2**60 - 1) == str(2**60 - 1)
    assert preview(2**60) == "<an integer of 61 bits>"
    assert preview(-(2**60)) == "<an integer of 61 bits>"
