"""Run ``mutmut`` with CPU accounting: CPU-seconds per phase and per mutant.

Why: the machine this runs on is shared, so wall time says little about what a run costs;
CPU time does (docs/quality.md, "What a run costs"). mutmut 3.8.1 (pinned by the ``mutate``
extra) records only wall time per mutant. This wrapper runs mutmut's own command line in this
process and wraps four of its functions, without changing what they do:

- each setup phase (mutant generation, the mypy pass, the stats run, the clean run, the
  forced-fail run) is timed in CPU-seconds of this process and its children;
- each forked worker is reaped with ``os.wait4`` instead of ``os.wait``, which gives the
  worker's own CPU time along with its exit status.

Both go, one JSON object a line, to the file named by ``COXSWAIN_MUTATE_CPU_LOG``;
tools/mutate/run.py reads it into the report. It changes three things that cost CPU and decide
nothing:

- mypy's errors are attributed to mutants through the index of function spans mutmut writes
  beside each mutated file (``<file>.spans``), instead of parsing each mutated file again with
  libcst: the same line-in-function lookup, without minutes of serial parsing;
- a worker's hard CPU limit is ``CPU_LIMIT_FACTOR`` × the time of its tests in the stats run
  (traced by coverage.py there, about three times their plain time) + ``CPU_LIMIT_CONSTANT``
  seconds, instead of mutmut's 2 × the wall limit (100 CPU-s at least with
  ``timeout_constant = 10``); within it, each test has a limit of its own
  (tools/mutate/collected.py), so an infinite loop costs what its test is allowed. The wall
  limit (``timeout_multiplier`` and ``timeout_constant`` of ``[tool.mutmut]``) stays lax, for a
  loaded machine, where wall time says little;
- the clean run of every selected test, which mutmut starts after its stats run, is skipped when
  that stats run ran every selected test in this same process and they passed (mutmut stops
  otherwise): it would run the same tests on the same code a second time.

A mutant listed in ``tools/mutate/equivalent.toml`` is not run: it is handed to mutmut with no
tests, which records it as reached by none (exit code 33), and the report counts it as
equivalent while its ``change`` line still matches the mutant (a function edited since
renumbers its mutants: the report flags the entry and counts the mutant as a survivor). Running
it could only confirm what the entry says, at a survivor's price: every test that runs its
statement. To try a new test on a listed mutant, take it out of the list, or run pytest on it
with ``MUTANT_UNDER_TEST`` (docs/quality.md, "Killing a survivor").

A worker does not start a pytest session of its own: it runs its tests from the one session
that mutmut's process collected before it forked its workers (tools/mutate/collected.py), which
first proves that a forced failure fails there and that the unmutated code passes.

A worker given a test the collection does not hold (a node id that a pytest session of its own
would not find either, as an id holding a backslash once did) exits with pytest's exit code 4,
which the report counts as *other*, not as a kill. The clean and forced-fail runs are mutmut's
own sessions; mutmut raises when their tests are not found.

And it narrows mutmut's choice of tests twice. A mutant runs only the tests that executed the
statement it changes (tools/mutate/lines.py: the stats run under coverage.py, a context per
test). And a test named in ``[tool.coxswain.mutate.judges]`` of
pyproject.toml runs only for the mutants of the functions its patterns match (``fnmatch`` on
mutmut's name of the function, ``coxswain.compile.memo.xǁCompileMemoǁcompile``), not for every
mutant whose function it reaches: a differential test whose two sides both run a mutated
function cannot tell the mutant apart, and a test that costs seconds runs where it is the
judge. pyproject.toml says why each test is there.

Usage (run.py does this)::

    python tools/mutate/accounting.py run --max-children 2 'coxswain.route.paths.*'
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import resource
import sys
import time
import tomllib
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from collected import Collected
    from lines import LineIndex
    from run import Equivalent

LOG_ENV: Final = "COXSWAIN_MUTATE_CPU_LOG"
CHECK_TESTS: Final = 20  # the collected session's check runs this many of the fastest tests
CPU_LIMIT_FACTOR: Final = 3.0
CPU_LIMIT_CONSTANT: Final = 3.0
PYPROJECT: Final = Path(__file__).resolve().parents[2] / "pyproject.toml"
MUTANTS: Final = PYPROJECT.parent / "mutants"


def load_judges(text: str) -> dict[str, tuple[str, ...]]:
    """``[tool.coxswain.mutate.judges]`` of a pyproject.toml: test (a pytest node id, or the
    start of one: a file, or a test without its parameters) → the patterns of the functions
    whose mutants it judges."""
    table = tomllib.loads(text).get("tool", {}).get("coxswain", {}).get("mutate", {})
    return {test: tuple(patterns) for test, patterns in table.get("judges", {}).items()}


def judges_function(test: str, function: str, judges: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether ``test`` judges the mutants of ``function``: every test does, unless it is
    named in ``judges``; then only those of the functions its patterns match."""
    for named, patterns in judges.items():
        if test == named or test.startswith((named + "::", named + "[")):
            return any(fnmatch.fnmatchcase(function, pattern) for pattern in patterns)
    return True


def judging(
    tests: Iterable[str], function: str, judges: Mapping[str, tuple[str, ...]]
) -> list[str]:
    """The tests among ``tests`` (those reaching ``function``) that judge its mutants."""
    return [test for test in tests if judges_function(test, function, judges)]


def not_listed(mutant: str, tests: list[str], equivalents: Mapping[str, Equivalent]) -> list[str]:
    """The tests to run ``mutant`` with: none when equivalent.toml lists it."""
    return [] if mutant in equivalents else tests


def cpu_seconds() -> float:
    """CPU time of this process and of every child it has reaped."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _write(log: IO[str], record: dict[str, Any]) -> None:
    log.write(json.dumps(record) + "\n")
    log.flush()


def _phase(log: IO[str], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = cpu_seconds(), time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            _write(
                log,
                {
                    "phase": name,
                    "cpu": round(cpu_seconds() - cpu, 3),
                    "wall": round(time.monotonic() - wall, 3),
                },
            )

    return timed


def type_check_by_spans() -> dict[str, Any]:
    """mutmut's ``filter_mutants_with_type_checker``: each mypy error in a mutated function
    marks that mutant as caught. The function holding an error's line is found in the spans
    index (1-based, inclusive lines) that mutmut wrote with the mutants."""
    from mutmut.configuration import config
    from mutmut.mutation.file_mutation import (
        FailedTypeCheckMutant,
        MutatedMethodLocation,
        group_by_path,
    )
    from mutmut.type_checking import run_type_checker
    from mutmut.utils.file_utils import change_cwd
    from mutmut.utils.format_utils import get_mutant_name, is_mutated_method_name

    caught: dict[str, Any] = {}
    with change_cwd(Path("mutants")):
        here = Path(".").absolute()
        for path, errors in group_by_path(run_type_checker(config().type_check_command)).items():
            index = Path(str(path) + ".spans")
            if not index.exists():  # not a mutated file: mutmut skips it too
                continue
            spans = json.loads(index.read_text("utf-8"))["spans"]
            functions = [
                (start, end, name)
                for name, (start, end) in spans.items()
                if is_mutated_method_name(name)
            ]
            for error in errors:
                found = [f for f in functions if f[0] <= error.line_number <= f[1]]
                if not found:
                    raise RuntimeError(f"{path}:{error.line_number}: a type error in no mutant")
                start, end, name = found[0]
                mutant = get_mutant_name(path.relative_to(here), name)
                caught[mutant] = FailedTypeCheckMutant(
                    method_location=MutatedMethodLocation(path, name, start, end),
                    name=mutant,
                    error=error,
                )
    return caught


class _TestContexts:
    """A pytest plugin that runs each test in a coverage context named by its node id."""

    def __init__(self, coverage: Any) -> None:
        self.coverage = coverage

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        del location
        self.coverage.switch_context(nodeid)


def _stats_with_coverage(index: LineIndex) -> None:
    """Wrap mutmut's stats run: when it runs every selected test, it runs under coverage.py
    and ``index`` takes the lines each test executed; a partial stats run (of changed tests
    only) leaves no index, and mutants are then judged by mutmut's choice of tests."""
    import coverage
    from mutmut.runners.harness import PytestRunner

    original = PytestRunner.run_stats

    def run_stats(self: PytestRunner, *, tests: Iterable[str]) -> int:
        tests = list(tests)
        if tests:
            index.take(None)
            partial: int = original(self, tests=tests)
            return partial
        cov = coverage.Coverage(
            data_file=None, config_file=False, include=[f"{MUTANTS.resolve()}/*"]
        )
        contexts = _TestContexts(cov)
        execute = self.execute_pytest

        def with_contexts(params: list[str], **kwargs: Any) -> int:
            kwargs["plugins"] = [*kwargs.get("plugins", ()), contexts]
            code: int = execute(params, **kwargs)
            return code

        self.execute_pytest = with_contexts  # type: ignore[method-assign, unused-ignore]
        cov.start()
        try:
            result: int = original(self, tests=tests)
        finally:
            cov.stop()
            del self.execute_pytest
        index.take(cov.get_data())
        return result

    PytestRunner.run_stats = run_stats  # type: ignore[method-assign, unused-ignore]


def install(log: IO[str]) -> None:
    """Wrap mutmut's phases and its worker reaping so that both report CPU time to ``log``."""
    import mutmut.__main__ as main
    from lines import LineIndex  # beside this script, which runs as one (see Usage)
    from mutmut.runners.harness import PytestRunner
    from mutmut.state import state
    from mutmut.utils.format_utils import mangled_name_from_mutant_name
    from mutmut.workers import isolation
    from run import EQUIVALENT_FILE, load_equivalents

    judges = load_judges(PYPROJECT.read_text("utf-8"))
    equivalents = load_equivalents(EQUIVALENT_FILE.read_text("utf-8"))
    index = LineIndex(MUTANTS)
    _stats_with_coverage(index)

    for name, phase in (
        ("create_mutants", "generate mutants"),
        ("run_forced_fail_test", "forced-fail run"),
    ):
        setattr(main, name, _phase(log, phase, getattr(main, name)))
    main.filter_mutants_with_type_checker = _phase(  # type: ignore[attr-defined, unused-ignore]
        log, "mypy", type_check_by_spans
    )
    runner = isolation.ForkRunner
    full_stats = _phase(log, "stats run", main.run_stats_collection)
    stats_of_all: list[bool] = []

    def run_stats_collection(*args: Any, **kwargs: Any) -> Any:
        result = full_stats(*args, **kwargs)
        tests = args[1] if len(args) > 1 else kwargs.get("tests")
        stats_of_all.append(not tests)  # mutmut's `tests=None` or empty: every selected test
        return result

    main.run_stats_collection = run_stats_collection
    timed_clean = _phase(log, "clean run", runner.run_clean_tests)

    def run_clean_tests(self: isolation.ForkRunner, tests: Any) -> int:
        if stats_of_all and stats_of_all[-1] and not list(tests):
            _write(log, {"phase": "clean run (skipped: the stats run passed these tests)"})
            return 0
        result: int = timed_clean(self, tests)
        return result

    original_submit = runner.submit

    def submit(
        self: isolation.ForkRunner,
        mutant_name: str,
        tests: list[str],
        cpu_time_limit: int,
        estimated_time: float,
    ) -> None:
        del cpu_time_limit  # mutmut's: 2 x its wall limit
        reached = judging(tests, mangled_name_from_mutant_name(mutant_name), judges)
        module, _, function = mutant_name.rpartition(".")
        tests = not_listed(mutant_name, index.select(module, function, reached), equivalents)
        _write(log, {"selected": mutant_name, "tests": len(tests), "of": len(reached)})
        estimated_time = sum(state().duration_by_test[test] for test in tests)
        limit = math.ceil(CPU_LIMIT_FACTOR * estimated_time + CPU_LIMIT_CONSTANT)
        original_submit(self, mutant_name, tests, limit, estimated_time)

    original_startup = runner.startup
    collected: list[Collected] = []

    def collect(self: isolation.ForkRunner) -> None:
        from collected import Collected  # beside this script, as lines.py
        from mutmut.mutation.trampoline import set_mutant_under_test

        test_runner = self.test_runner
        assert isinstance(test_runner, PytestRunner)
        args = [
            "--rootdir=.",
            "--tb=native",
            *test_runner._pytest_args_regular_run([]),
            *test_runner._pytest_add_cli_args,
        ]
        durations = state().duration_by_test
        session = Collected(args, MUTANTS, durations)
        reaching = set().union(*state().tests_by_mangled_function_name.values())
        fastest = sorted((t for t in reaching if t in session.items), key=durations.__getitem__)
        session.check(fastest[:CHECK_TESTS], lambda on: set_mutant_under_test("fail" if on else ""))
        collected.append(session)

    timed_collect = _phase(log, "collect once", collect)

    def startup(self: isolation.ForkRunner) -> None:
        timed_collect(self)
        _write(log, {"phase": "mutants start", "cpu": round(cpu_seconds(), 3)})
        original_startup(self)

    def wait_for_result(
        self: isolation.ForkRunner, timeout: float | None = None
    ) -> isolation.MutantResult:
        # As mutmut's own ForkRunner.wait_for_result, with os.wait4 for the worker's CPU time.
        if self._no_tests_results:
            return self._no_tests_results.pop(0)
        pid, status, usage = os.wait4(-1, 0)
        exit_code = os.waitstatus_to_exitcode(status)
        worker = self._running.pop(pid)
        duration = (datetime.now() - worker.start_time).total_seconds()
        _write(
            log,
            {
                "mutant": worker.mutant_name,
                "exit": exit_code,
                "cpu": round(usage.ru_utime + usage.ru_stime, 3),
                "wall": round(duration, 3),
            },
        )
        return isolation.MutantResult(
            mutant_name=worker.mutant_name, exit_code=exit_code, duration=duration
        )

    original_run_tests = PytestRunner.run_tests

    def run_tests(self: PytestRunner, *, mutant_name: str | None, tests: Any) -> int:
        if mutant_name is None:  # the clean and forced-fail runs: mutmut's own sessions
            result: int = original_run_tests(self, mutant_name=mutant_name, tests=tests)
            return result
        return collected[0].run(list(tests))  # a worker: collected at startup

    PytestRunner.run_tests = run_tests  # type: ignore[method-assign, unused-ignore]
    runner.run_clean_tests = run_clean_tests  # type: ignore[method-assign, unused-ignore]
    runner.submit = submit  # type: ignore[method-assign, unused-ignore]
    runner.startup = startup  # type: ignore[method-assign, unused-ignore]
    runner.wait_for_result = wait_for_result  # type: ignore[method-assign, unused-ignore]


def main() -> int:
    path = os.environ.get(LOG_ENV)
    if not path:
        print(f"{LOG_ENV} names no file to write the CPU log to", file=sys.stderr)
        return 2
    with open(path, "a", encoding="utf-8") as log:
        install(log)
        from mutmut.__main__ import cli

        try:
            cli.main(args=sys.argv[1:], prog_name="mutmut", standalone_mode=False)
        except SystemExit as stop:
            return stop.code if isinstance(stop.code, int) else 1
        _write(log, {"phase": "end", "cpu": round(cpu_seconds(), 3)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
