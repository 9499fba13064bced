"""The emulator's copies and JSON text at any depth (tests/apiserver/deep_values.py): what
``copy.deepcopy`` and ``json.dumps`` give, without their recursion."""

from __future__ import annotations

import copy
import json

from hypothesis import given
from hypothesis import strategies as st

from tests.apiserver.deep_values import clone, dumps

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=20,
)


def nested(levels: int) -> dict[str, object]:
    value: dict[str, object] = {"leaf": [1, "x"]}
    for _ in range(levels):
        value = {"a": value, "b": []}
    return value


@given(_JSON)
def test_clone_and_dumps_give_what_the_standard_library_does(value: object) -> None:
    assert clone(value) == copy.deepcopy(value)
    assert dumps(value) == json.dumps(value).encode()
    deep: object = value  # too deep for the standard library: made level by level
    for _ in range(2000):
        deep = [deep]
    assert dumps(deep) == b"[" * 2000 + json.dumps(value).encode() + b"]" * 2000
    leaf = clone(deep)
    for _ in range(2000):
        assert isinstance(leaf, list)
        [leaf] = leaf
    assert leaf == copy.deepcopy(value)


def test_a_deep_value_is_copied_and_written_whole() -> None:
    deep = nested(5000)
    copied = clone(deep)
    node, original = copied, deep
    for _ in range(5000):  # every level is a new object, equal to the original's
        assert node is not original
        assert node["b"] == original["b"] == []
        assert node["b"] is not original["b"]
        node, original = node["a"], original["a"]  # type: ignore[assignment]
    assert node == original == {"leaf": [1, "x"]}
    text = dumps(deep)
    assert text == b'{"a": ' * 5000 + b'{"leaf": [1, "x"]}' + b', "b": []}' * 5000
