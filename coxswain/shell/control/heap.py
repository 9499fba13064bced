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
collection runs; young collections still do, as often as CPython's thresholds say (a pass over
a young generation is short however large the heap; rarer passes are longer ones, which a
20,000-allocation threshold showed: young passes of 0.3 to 0.9 s during the lists). At its
end, and after a later round that folded in a bulk of objects (:func:`settle`: a relist after
the watch history expired, a mass apply), what is alive is frozen (:func:`gc.freeze`): the
state and memo are immutable values, so a full collection then walks only what is newer. The
price: an object frozen while alive that later becomes part of a reference cycle's garbage is
never reclaimed. The state holds no cycles (every full collection measured at the cold start
collected none), but the tasks and requests in flight at a freeze may; hence no freeze after a
small round, whose objects the collector walks in a moment: what leaks is bounded by the bulk
rounds, not by the rounds.
"""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["building", "settle"]

_NO_FULL: Final = 2**31 - 1
"""A full-collection threshold never reached: one per that many middle-generation passes."""

BULK: Final = 1_000
"""A round that changed at least this many objects freezes what is alive after it."""


@contextlib.contextmanager
def building() -> Iterator[None]:
    """No full collection inside; on leaving, what is alive is frozen and the thresholds are
    restored."""
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, _NO_FULL)
    try:
        yield
    finally:
        settle()
        gc.set_threshold(young, middle, full)


def settle(changed: int | None = None) -> None:
    """After building the state (``changed`` None) or a round that changed ``changed`` objects
    (at least :data:`BULK`): what is alive is frozen, so that full collections walk only what
    is newer."""
    if changed is None or changed >= BULK:
        gc.freeze()
