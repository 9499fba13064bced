"""``dump_json``: the text ``json.dumps(data, sort_keys=True, indent=2)`` gives, faster; and
``json_pieces``: the same text in pieces, a value held twice written once."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.shell.output import dump_json, json_pieces


def reference(data: object) -> bytes:
    return (json.dumps(data, sort_keys=True, indent=2) + "\n").encode("ascii")


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.text(max_size=8)
    | st.sampled_from([0.0, 0.001, 0.025, 1.5, 30.0, 1e15, -2.5])
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=25,
)


@given(_DATA)
def test_the_text_is_the_standard_librarys(data):
    assert dump_json(data) == reference(data)


@pytest.mark.parametrize(
    "data",
    [
        {},
        [],
        {"a": {}},
        {"é": "ü", "k": "\u2028"},
        {"big": 2**64},
        {"b": 1, "a": [None, True]},
        {"del": "\x7f", "controls": "\x00\x1f\n", "\x7f": 1},
    ],
)
def test_empty_collections_non_ascii_text_and_large_integers_come_out_alike(data):
    assert dump_json(data) == reference(data)


@given(_DATA)
def test_the_pieces_join_into_the_text(data):
    shared = {"a": [data, data], "b": [[data]], "c": data}  # at three levels, twice at one
    assert b"".join(json_pieces(shared)) == reference(shared)


@pytest.mark.parametrize(
    "data",
    [
        {},
        [[]],
        {"a": {"é": 1}},
        {"k": ["\u2028"]},
        [{"big": 2**64}],
        {"b": {1: 2}},
        [1e-05],
        {"a": ["\x7f"]},
        {"a": {"\x7f": 1}},
    ],
)
def test_pieces_are_dump_json_where_orjson_and_the_standard_library_differ(data):
    assert b"".join(json_pieces(data)) == dump_json(data)


def test_a_value_held_twice_at_one_level_is_one_piece():
    rule = {"match": {"path": "/"}, "backends": [1, 2]}
    pieces = json_pieces({"a": [rule], "b": [rule]})
    assert len({id(piece) for piece in pieces if b"match" in piece}) == 1
