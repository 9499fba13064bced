"""``compile.endpoint_uses``: the table patched as groups of backends come and go is the one
``backends.endpoints_table`` builds from scratch."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.backends import endpoints_table, index_services
from coxswain.compile.endpoint_uses import endpoint_uses
from coxswain.compile.model.state import build_state
from coxswain.compile.snapshot import Backend

_GROUPS = tuple(
    tuple(
        Backend(namespace="a", service=f"s{(i + j) % 4}", port=80 + j % 2, valid=(i + j) % 5 > 0)
        for j in range(i % 3 + 1)
    )
    for i in range(8)
)
"""Groups of backends sharing some keys; each group is one object, as a route's share is."""


@given(st.lists(st.lists(st.sampled_from(_GROUPS), max_size=6), min_size=1, max_size=6))
def test_a_patched_table_is_the_table_built_from_scratch(
    calls: list[list[tuple[Backend, ...]]],
) -> None:
    index = index_services(build_state([]))
    uses = None
    for groups in calls:
        uses = endpoint_uses(index, groups, None, uses)
        fresh = endpoints_table(index, [b for group in groups for b in group])
        assert dict(uses.table) == dict(fresh)


@given(st.lists(st.lists(st.sampled_from(_GROUPS), max_size=6), min_size=1, max_size=6))
def test_a_table_patched_for_the_groups_gone_and_added_is_the_table_built_from_scratch(
    calls: list[list[tuple[Backend, ...]]],
) -> None:
    index = index_services(build_state([]))
    uses = endpoint_uses(index, calls[0])
    was = {id(group): group for group in calls[0]}
    for groups in calls[1:]:
        now = {id(group): group for group in groups}
        gone = [group for key, group in was.items() if key not in now]
        added = [group for key, group in now.items() if key not in was]
        uses = endpoint_uses(index, (), None, uses, change=(gone, added))
        fresh = endpoints_table(index, [b for group in groups for b in group])
        assert dict(uses.table) == dict(fresh)
        was = now
