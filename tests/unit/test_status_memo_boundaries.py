"""Remembered statuses counted at their edges (``compile.status_memo``): a new memory has made
none, and a status is made again only when its inputs are not the very same objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from coxswain.compile.status_memo import StatusMemory

if TYPE_CHECKING:
    from coxswain.compile.status import ObjectStatus

KEY = ("Gateway", "infra", "edge")


def test_statuses_are_counted_from_zero_and_reused_for_the_same_inputs() -> None:
    memory = StatusMemory()
    assert memory.made_again == 0
    inputs = (object(),)
    first = cast("ObjectStatus", "first")
    second = cast("ObjectStatus", "second")
    assert memory.made(KEY, inputs, 1, lambda: first) == "first"
    memory.begin()
    assert memory.made(KEY, inputs, 1, lambda: second) == "first"
    assert memory.made_again == 1
    assert memory.made(KEY, (object(),), 1, lambda: second) == "second"
    assert memory.made_again == 2
