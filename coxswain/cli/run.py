"""Running a long-lived command (``proxy``, ``serve``, ``controller``) and the exit codes.

Exit codes: 0 when the command did its job (or was stopped by SIGTERM or Ctrl-C), 2 when its
input or flags could not be used (``coxswain COMMAND: message`` on standard error).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["EXIT_OK", "EXIT_UNREADABLE", "run_until_done"]

EXIT_OK: Final = 0
EXIT_UNREADABLE: Final = 2


def run_until_done(
    command: str,
    main: Callable[[], Awaitable[object]],
    expected: tuple[type[Exception], ...],
) -> int:
    """Run a long-lived command under trio: exit 0 when it ends (SIGTERM, Ctrl-C), 2 with
    ``coxswain COMMAND: message`` for each ``expected`` failure."""
    import trio

    failures: list[str] = []
    try:
        trio.run(main)
    except* expected as group:
        failures.extend(str(leaf) for leaf in _leaves(group))
    except* KeyboardInterrupt:
        pass
    for failure in failures:
        print(f"coxswain {command}: {failure}", file=sys.stderr)
    return EXIT_UNREADABLE if failures else EXIT_OK


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]
