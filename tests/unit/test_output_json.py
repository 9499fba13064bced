"""``dump_json``: the text ``json.dumps(data, sort_keys=True, indent=2)`` gives, faster."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.shell.output import dump_json


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
    [{}, [], {"a": {}}, {"é": "ü", "k": "\u2028"}, {"big": 2**64}, {"b": 1, "a": [None, True]}],
)
def test_empty_collections_non_ascii_text_and_large_integers_come_out_alike(data):
    assert dump_json(data) == reference(data)
