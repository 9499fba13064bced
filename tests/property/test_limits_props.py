"""The bounds on a tenant's raw data (coxswain/compile/model/limits.py), at their edges.

``measure`` walks a body once, level by level, and stops at the first bound it passes. The
oracle here is the recursive definition in its docstring: the size is one per value plus the
characters of every string and key; the depth counts nested mappings and lists, the body
itself as one. A body is a mapping or a list (a scalar alone is never measured). Each
property puts the bound exactly at the body's size or depth, then one below: the first must
pass and return the size, the second must be refused for that bound.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.model.limits import Excess, measure

pytestmark = pytest.mark.property

BIG = 10**9

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
bodies = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
    ),
    max_leaves=12,
)


def size(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(len(k) for k in value) + sum(size(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(size(v) for v in value)
    if isinstance(value, str):
        return 1 + len(value)
    return 1


def depth(value: Any) -> int:
    """Mappings and lists on the deepest path (0 for a scalar)."""
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


@given(bodies.filter(lambda b: isinstance(b, dict | list)))
def test_a_body_exactly_as_large_as_the_bound_passes_and_one_more_is_refused(body):
    total = size(body)
    assert measure(body, max_depth=BIG, max_size=total) == total
    refused = measure(body, max_depth=BIG, max_size=total - 1)
    assert isinstance(refused, Excess)
    assert refused.reason == "ObjectTooLarge"
    assert refused.message == f"is larger than {total - 1} (values plus characters)"


@given(bodies.filter(lambda b: depth(b) >= 2))
def test_a_body_exactly_as_deep_as_the_bound_passes_and_one_level_more_is_refused(body):
    levels = depth(body)
    assert measure(body, max_depth=levels, max_size=BIG) == size(body)
    refused = measure(body, max_depth=levels - 1, max_size=BIG)
    assert isinstance(refused, Excess)
    assert refused.reason == "ObjectTooDeep"
    assert refused.message == f"nests deeper than {levels - 1} levels"
