"""shell.control.heap: no full collection while the controller's state is built; what is
alive frozen after it and after a round that changed a bulk of objects; young collections
rarer meanwhile."""

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
