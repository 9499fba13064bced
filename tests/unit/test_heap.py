"""shell.control.heap: no full collection while the controller's state is built or a list runs;
what is alive frozen after the start and after a round that changed a bulk of objects; young
collections rarer meanwhile."""

from __future__ import annotations

import gc

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
