"""shell.control.heap: no full collection while the controller's state is built or a list runs;
what is alive frozen after the start and after a round that changed a bulk of objects; young
collections rarer meanwhile, and paced by the loop while a worker thread works."""

from __future__ import annotations

import gc
from typing import Any

import trio
import trio.testing

from coxswain.shell.control import heap


def test_building_suspends_full_collections_then_freezes_and_sets_the_thresholds() -> None:
    before = gc.get_threshold()
    try:
        with heap.building():
            young, middle, full = gc.get_threshold()
            assert (young, middle) == (heap.YOUNG, heap.MIDDLE)
            assert full >= 2**31 - 1  # one full collection per that many middle ones: never
            built = [[n] for n in range(1000)]
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() >= len(built)
        gc.unfreeze()
        heap.settle()
        assert gc.get_freeze_count() >= len(built)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_round_freezes_only_after_a_bulk_of_changes() -> None:
    try:
        gc.unfreeze()
        kept = [[n] for n in range(1000)]
        heap.settle(heap.BULK - 1)
        assert gc.get_freeze_count() == 0
        heap.settle(heap.BULK)
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()


def test_thresholds_are_restored_even_when_building_fails() -> None:
    before = gc.get_threshold()
    try:
        try:
            with heap.building():
                raise KeyError
        except KeyError:
            pass
        assert gc.get_threshold() == before
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_overlapping_lists_keep_the_thresholds_until_the_last_ends() -> None:
    before = gc.get_threshold()
    try:
        first, second = heap.quiet(), heap.quiet()
        first.__enter__()
        second.__enter__()
        assert gc.get_threshold()[:2] == before[:2]  # young passes as usual: short ones
        first.__exit__(None, None, None)  # lists of two informers end in any order
        assert gc.get_threshold()[2] >= 2**31 - 1
        second.__exit__(None, None, None)
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() == 0  # a list freezes nothing: the round decides
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_list_inside_the_start_leaves_its_thresholds_to_the_start() -> None:
    before = gc.get_threshold()
    try:
        with heap.building():
            with heap.quiet():
                pass
            assert gc.get_threshold()[:2] == (heap.YOUNG, heap.MIDDLE)
            assert gc.get_threshold()[2] >= 2**31 - 1
        assert gc.get_threshold() == before
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_paced_runs_young_passes_whatever_the_allocation_count_then_stops() -> None:
    """A worker that frees as many objects as it makes leaves the count at zero: the passes
    come from the loop, one per PACE, a middle one when its threshold is reached."""
    before = gc.get_threshold()
    passes: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    async def main() -> int:
        async with heap.paced():
            await trio.sleep(8.5 * heap.PACE)
        inside = len(passes)
        await trio.sleep(8 * heap.PACE)
        return inside

    gc.disable()  # no pass but the paced ones
    gc.set_threshold(before[0], 3, before[2])
    gc.collect(1)  # the young and middle counts start at zero
    gc.callbacks.append(seen)
    try:
        inside = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*before)
        gc.enable()
    assert passes == [0, 0, 0, 1, 0, 0, 0, 1]
    assert inside == len(passes)  # none after leaving


def test_a_small_round_defers_every_pass_until_it_has_published() -> None:
    """Neither the thresholds nor the loop's paced passes collect inside ``deferred`` for a
    change smaller than a bulk; the collector is back on after, and a bulk round is left to
    the paced passes."""
    passes: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    async def main() -> tuple[int, bool, bool]:
        async with heap.paced():
            with heap.deferred(heap.BULK - 1):
                kept = [[n] for n in range(10 * gc.get_threshold()[0])]
                await trio.sleep(8.5 * heap.PACE)
                inside, enabled = len(passes), gc.isenabled()
            assert kept
            with heap.deferred(heap.BULK):
                bulk = gc.isenabled()
                await trio.sleep(2.5 * heap.PACE)
        return inside, enabled, bulk

    gc.callbacks.append(seen)
    try:
        inside, enabled, bulk = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        gc.callbacks.remove(seen)
    assert (inside, enabled) == (0, False)
    assert bulk
    assert gc.isenabled()
    assert len(passes) >= 2  # the bulk round's paced ones
