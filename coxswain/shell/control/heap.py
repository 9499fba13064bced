"""The controller's cyclic collector: no full pass over the state while it is built.

Why (docs/architecture.md, "Shell patterns"; docs/benchmarks.md, "Controller"): at 1,000
Gateways the informers' state and the first round's memo are millions of long-lived objects,
and CPython runs a full collection each time the objects that survived young collections grow
by a quarter. Each such pass walks the whole heap holding the interpreter lock, wherever it is
triggered (the loop thread folding a list item, the worker thread compiling): measured at a
cold start, sixteen passes while the lists built the state (the last ones 1.6 to 3.4 s each,
17 s in all) and eight more during the first round (0.3 to 1.0 s each), every one of them
collecting nothing; the event loop that renews the Lease and answers ``/healthz`` waited
through each.

So, while the state is built (:func:`building`: the lists and the first round), no full
collection runs, and young collections run less often than CPython's default (one per 700
allocations): each young pass also walks every element of each young persistent vector (the
C ``pvector`` reports its elements to the collector, not its nodes), and folding one object in
makes new bucket vectors of the tables it lands in (up to 16,384 entries each here). Measured
folding the 43,152 objects of ``bench/controller_scale.py`` in process: 6.2 s of young passes
at the default thresholds, 2.2 s at :data:`YOUNG` and :data:`MIDDLE` (longest young pass
15 ms, longest middle one 50 ms, kept short by its own threshold; a 20,000-allocation young
threshold with CPython's middle threshold of 10 made middle passes of 0.2 s here, up to 0.9 s
in the controller). A list after the start (a resync after the watch history expired) and a
round run without full collections too (:func:`quiet`): a list's pages are let go as they are
folded in, and each full pass walked the page in hand and whatever was unfrozen (33 to 53 ms
of CPU each at 1,000 Gateways); the round after the start, compiling again what the statuses
it wrote changed, made full passes of up to 300 ms walking its own new model. At the start's
end, after a later round that changed a bulk of objects, and after every bulk of events folded
in (:func:`settle`: the first round's 11,000 statuses, watched back,
change no state yet stay as the statuses the shell keeps; unfrozen, they made the full passes
while they arrived grow to 290 ms of CPU), what is alive is frozen (:func:`gc.freeze`): the
state and memo are immutable values, so a full collection then walks only what is newer. The
price: an object frozen while alive that later becomes part of a reference cycle's garbage is
never reclaimed. The state holds no cycles (every full collection measured at the cold start
collected none), but the tasks and requests in flight at a freeze may; hence no freeze after a
small round, whose objects the collector walks in a moment: what leaks is bounded by the bulk
rounds and bulks of events, not by the rounds. (A frozen object is still freed when its last
reference goes: only cycles are left to the collector.)

While a worker thread compiles a round or folds a list page in (:func:`paced`), the loop runs
the young and middle passes itself, every :data:`PACE`. CPython starts a young pass when the
allocations of tracked objects *net of deallocations* pass the threshold; a round or a page
that replaces frozen objects (the last state, the last memo) frees about as many as it makes,
so the count stays near zero while the young generation grows: the second round of a cold
start at 1,000 Gateways met its first young pass with 150,000 young objects, 94 to 121 ms of
CPU holding the interpreter lock (docs/benchmarks.md, "Controller"). Paced by time, a pass
walks only what the thread made since the last one. A round that changed few objects holds
every pass off until its snapshots are published (:func:`deferred`): what it made is then
walked once, after the proxies have the change.
"""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING, Final, NoReturn

import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

__all__ = ["building", "deferred", "paced", "quiet", "settle"]

_NO_FULL: Final = 2**31 - 1
"""A full-collection threshold never reached: one per that many middle-generation passes."""

YOUNG: Final = 5_000
"""Allocations between two young collections while building (CPython's default is 700)."""

MIDDLE: Final = 4
"""Young collections between two middle-generation ones while building (default 10)."""

PACE: Final = 0.005
"""Seconds between two paced young passes (:func:`paced`): the switch interval of the
interpreter lock, so that a pass walks about what the worker made while holding it once."""

BULK: Final = 1_000
"""A round that changed at least this many objects freezes what is alive after it; so does
the cluster view after every this many events folded in."""


class _Quiet:
    """The full-collection threshold to restore once no list or start holds it off."""

    def __init__(self) -> None:
        self.holders = 0
        self.full = gc.get_threshold()[2]


_QUIET: Final = _Quiet()  # the collector's thresholds are the process's: so is their holder


class _Deferred:
    """How many :func:`deferred` are open: the paced passes wait while any is."""

    def __init__(self) -> None:
        self.holders = 0


_DEFERRED: Final = _Deferred()


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No full collection inside; restored when the last of the overlapping holders (the
    informers' lists, the rounds, the start) leaves. What a list decodes is let go page by
    page, and what a round makes is frozen after it when it is a bulk: a full pass meanwhile
    would walk it, for nothing, holding the interpreter lock. Young collections keep their
    thresholds (short passes)."""
    if not _QUIET.holders:
        young, middle, _QUIET.full = gc.get_threshold()
        gc.set_threshold(young, middle, _NO_FULL)
    _QUIET.holders += 1
    try:
        yield
    finally:
        _QUIET.holders -= 1
        if not _QUIET.holders:
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, _QUIET.full)


@contextlib.contextmanager
def building() -> Iterator[None]:
    """:func:`quiet` with fewer young collections; on leaving, what is alive is frozen and
    the thresholds are restored."""
    young, middle, _ = gc.get_threshold()
    with quiet():
        gc.set_threshold(YOUNG, MIDDLE, _NO_FULL)
        try:
            yield
        finally:
            settle()
            gc.set_threshold(young, middle, _NO_FULL)


def settle(changed: int | None = None) -> None:
    """After building the state (``changed`` None) or a round that changed ``changed`` objects
    (at least :data:`BULK`): what is alive is frozen, so that full collections walk only what
    is newer."""
    if changed is None or changed >= BULK:
        gc.freeze()


@contextlib.contextmanager
def deferred(changed: int) -> Iterator[None]:
    """No collection inside, automatic or paced, when a round changed fewer than :data:`BULK`
    objects: the collector runs after. Such a round makes few objects but some large
    containers (the analysis' route list and tables, 10,000 entries and more at 1,000
    Gateways), and a young or middle pass walks every element of each young container it
    holds, touching objects all over the heap: measured at 1,000 Gateways, four passes during
    one route's edit, 25 to 45 ms in all, holding the interpreter lock while the round waited
    for it (docs/benchmarks.md, "Controller"). Deferred until the snapshots are published, the
    same containers are walked once, off the path from the change to the proxies."""
    if changed >= BULK:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    _DEFERRED.holders += 1
    try:
        yield
    finally:
        _DEFERRED.holders -= 1
        if enabled and not _DEFERRED.holders:
            gc.enable()


@contextlib.asynccontextmanager
async def paced() -> AsyncIterator[None]:
    """Inside, the loop runs a young pass every :data:`PACE` (a middle one instead when the
    young passes since the last reached the middle threshold), whatever the allocation count
    says; full passes are left to the thresholds (:func:`quiet`)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pace)
        try:
            yield
        finally:
            nursery.cancel_scope.cancel()


async def _pace() -> NoReturn:
    while True:
        await trio.sleep(PACE)
        if not _DEFERRED.holders:
            gc.collect(1 if gc.get_count()[1] >= gc.get_threshold()[1] else 0)
