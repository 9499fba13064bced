"""When the controller's next round starts (``shell.control.settling``): at once for a lone
change after a quiet spell, after the changes settle otherwise. Trio's mock clock: the times
below are exact."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from coxswain.shell.control.settling import Settling

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

LEAST, MOST = 0.05, 1.0


def _run(main: Callable[[], Awaitable[None]]) -> None:
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def _poke_at(settling: Settling, times: list[float]) -> None:
    start = trio.current_time()
    for at in times:
        await trio.sleep_until(start + at)
        settling.poke()


def _settled_after(pokes: list[float], *, pending: bool = False, at_most: float = 60.0) -> float:
    """Seconds from the call of ``settled`` (the end of a round) to its return, the changes
    poked at ``pokes`` seconds after the call; ``pending``: one change made before the call
    (during the round)."""
    took: list[float] = []

    async def main() -> None:
        settling = Settling(LEAST, MOST)
        if pending:
            settling.poke()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poke_at, settling, pokes)
            start = trio.current_time()
            await settling.settled(at_most)
            took.append(trio.current_time() - start)
            nursery.cancel_scope.cancel()

    _run(main)
    return took[0]


def test_a_lone_change_after_a_quiet_spell_starts_a_round_at_once() -> None:
    assert _settled_after([5.0]) == pytest.approx(5.0)
    assert _settled_after([MOST + 0.01]) == pytest.approx(MOST + 0.01)


def test_a_burst_after_a_quiet_spell_makes_its_first_change_a_round_of_its_own() -> None:
    # the rest of the burst is pending when that round ends, and waits to settle then
    assert _settled_after([5.0, 5.01, 5.02]) == pytest.approx(5.0)


def test_a_change_soon_after_a_round_waits_until_no_change_came_for_least() -> None:
    assert _settled_after([0.5]) == pytest.approx(0.5 + LEAST)
    assert _settled_after([0.5, 0.53, 0.56]) == pytest.approx(0.56 + LEAST)


def test_a_change_made_during_the_round_waits_to_settle() -> None:
    # a status the round wrote, watched back; a proxy's Ack of what it published
    assert _settled_after([], pending=True) == pytest.approx(LEAST)
    assert _settled_after([0.03], pending=True) == pytest.approx(0.03 + LEAST)


def test_changes_that_never_settle_wait_at_most_most_after_the_first() -> None:
    steady = [0.2 + 0.04 * k for k in range(100)]  # every 40 ms, closer than LEAST
    assert _settled_after(steady) == pytest.approx(0.2 + MOST)


def test_no_change_returns_after_at_most_for_the_periodic_resync() -> None:
    assert _settled_after([], at_most=300.0) == pytest.approx(300.0)
    # a retry sooner than MOST after a failed round waits as a change would
    assert _settled_after([], at_most=0.5) == pytest.approx(0.5 + LEAST)


def test_each_change_is_taken_by_one_round() -> None:
    async def main() -> None:
        settling = Settling(LEAST, MOST)
        settling.poke()
        await settling.settled(60.0)
        start = trio.current_time()
        with trio.move_on_after(10.0):
            await settling.settled(600.0)  # nothing new: no round is due
        assert trio.current_time() - start == pytest.approx(10.0)

    _run(main)
