"""One pytest session for every mutant: the selected tests collected once, before mutmut forks
its workers; each worker runs its mutant's tests from that collection.

Why: mutmut 3.8.1 runs a mutant's tests with a new ``pytest.main`` in the forked worker, a
session set up and collected again for every mutant: configuration, plugins, and the
collection of each test file named (the goldens' module alone yields 1,356 items). That cost,
0.2 to 0.5 CPU-seconds, is paid by every mutant before its first test runs, and most mutants
are killed by their first test: it was most of a run (docs/quality.md, "What a run costs").

How: mutmut's process, once its stats run is done, configures pytest with the same arguments
as a worker's session (mutmut's, and the test selection of ``[tool.mutmut]``), starts the
session and collects it, as ``pytest.main`` would, and keeps its items by node id. A forked
worker inherits them and runs its tests, in the order it is given, each through pytest's own
per-test protocol (``pytest_runtest_protocol``: fixtures, the ``filterwarnings`` of
pyproject.toml, strict xfail, everything a session applies to a test), stopping at the first
that fails. The differences from a worker's own session: output is not captured (``-s``: the
worker's output goes nowhere, and the ``capsys`` and ``capfd`` fixtures capture as they
always do) and no report is printed.

A worker's CPU is bounded twice (``Limits``). Each test gets ``factor`` × its time in the stats
run + ``constant`` seconds from the moment it starts, after which the kernel stops the worker
(``SIGXCPU``: a timeout, an infinite loop mostly), instead of that multiple of all its tests'
time: a loop in the first test costs what that test is allowed, not what the whole list is.
And a worker that has spent ``budget`` seconds with every test so far passing stops there
(``BUDGET_SPENT``): the report counts its mutant as not caught, in a column of its own, since
the tests it did not run might have caught it. A survivor otherwise runs every test that
reaches its statement, which made a few hundred survivors of the statements every golden case
runs most of a run; and a test that first fails after that much CPU is rare (3 in 9,252 mutants
at 5 seconds, 16 at 3, in a run that had no budget; docs/quality.md).

It proves itself before any mutant runs: a worker with mutmut's forced-failure switch set
must fail, and one without it must pass, on the same tests (``check``).
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import pytest

TESTS_NOT_FOUND: Final = 4  # pytest's ExitCode.USAGE_ERROR, as a worker's own session says it
PASSED: Final = 0
FAILED: Final = 1
BUDGET_SPENT: Final = 35  # not one of mutmut's codes (tools/mutate/run.py sorts them)


@dataclass(frozen=True)
class Limits:
    """A worker's CPU bounds, in seconds (module docstring)."""

    factor: float = 3.0  # × a test's time in the stats run (traced: about 3 × its plain time)
    constant: float = 3.0  # + this, for its fixtures and the machine's noise
    budget: float = 3.0  # a worker stops after this much with every test so far passing


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _stop_after(seconds: float) -> None:
    """SIGXCPU once this process has used ``seconds`` more CPU, within its hard limit."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    at = math.ceil(_cpu() + seconds)
    resource.setrlimit(
        resource.RLIMIT_CPU, (at if hard == resource.RLIM_INFINITY else min(at, hard), hard)
    )


class Collected:
    """The items of one configured, started and collected pytest session, by node id."""

    def __init__(
        self,
        args: Sequence[str],
        root: Path,
        durations: Mapping[str, float],
        limits: Limits = Limits(),
    ) -> None:
        """Collect the tests ``args`` select, with ``root`` (mutmut's copy) as the current
        folder, as a worker's session would; ``durations``: each test's time in the stats
        run."""
        from _pytest.config import _prepareconfig
        from _pytest.main import Session

        self.root = root
        self.durations = durations
        self.limits = limits
        self.failed = False
        here = Path.cwd()
        os.chdir(root)
        try:
            config = _prepareconfig(["-s", *args], plugins=[self])
            config._do_configure()
            session = Session.from_config(config)
            config.hook.pytest_sessionstart(session=session)
            config.hook.pytest_collection(session=session)
        finally:
            os.chdir(here)
        self.items: dict[str, pytest.Item] = {item.nodeid: item for item in session.items}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A hook of this session: a phase of a test (setup, call, teardown) that failed."""
        if report.failed:
            self.failed = True

    def run(self, tests: Sequence[str]) -> int:
        """In a forked worker: run ``tests`` (node ids) in order, stopping at the first that
        fails. ``FAILED`` then, ``PASSED`` when all pass, ``BUDGET_SPENT`` when the budget is
        spent before the last, ``TESTS_NOT_FOUND`` when one of them is not in the collection
        (nothing runs). A test over its CPU limit ends the process (``SIGXCPU``)."""
        items = [self.items.get(test) for test in tests]
        if any(item is None for item in items):
            return TESTS_NOT_FOUND
        silent = os.open(os.devnull, os.O_WRONLY)
        os.dup2(silent, 1)
        os.dup2(silent, 2)
        os.chdir(self.root)
        limits = self.limits
        following = [*items[1:], None]
        for item, after in zip(items, following, strict=True):
            assert item is not None
            _stop_after(limits.factor * self.durations.get(item.nodeid, 0.0) + limits.constant)
            item.ihook.pytest_runtest_protocol(item=item, nextitem=after)
            if self.failed:
                return FAILED
            if after is not None and _cpu() > limits.budget:
                return BUDGET_SPENT
        return PASSED

    def check(self, tests: Sequence[str], fail: Callable[[bool], None]) -> None:
        """Run ``tests`` in two forked workers, the first with ``fail(True)`` called in it
        (mutmut's forced failure: every mutated function raises), the second with
        ``fail(False)``: the first must fail and the second pass, or the collection does not
        run what a worker's own session runs.

        Raises:
            RuntimeError: either worker gave the other verdict.
        """
        for forced, want in ((True, FAILED), (False, PASSED)):
            pid = os.fork()
            if pid == 0:
                fail(forced)
                os._exit(self.run(tests))
            _, status = os.waitpid(pid, 0)
            got = os.waitstatus_to_exitcode(status)
            if got != want:
                raise RuntimeError(
                    f"the collected session's check: {len(tests)} tests with the forced failure "
                    f"{'on' if forced else 'off'} exited {got}, not {want}"
                )
