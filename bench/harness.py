"""What the benchmark scripts in bench/ share: how they run, measure and report.

Each script generates its own workload, checks its own results and prints its own tables;
around that they run alike, and this module holds that common part so that a fix to one (a
memory reader, the subprocess protocol, the header recorded with every result) reaches all:

- running: the command line (``--quick``, the hidden ``--worker``), one size per fresh
  subprocess whose JSON result is read back, and the header and footer every run prints
  (the command, Python, machine, date, commit; load average before and after);
- measuring: wall-clock runs with the time spent in the cyclic collector (and the figures a
  worker returns for them), runs after ``gc.freeze()``, ``tracemalloc`` peaks, RSS and its
  high-water mark from /proc/self/status, and the build-then-compile measurement the compile
  benchmarks make;
- reporting: right-aligned tables, ``median (best)`` and ``median / p99 / max`` cells, MB
  figures, PASS/FAIL lines, and the stop when a workload does not compile as it should;
- building: a copy of the project with the HTTP/1.1 codec compiled by mypyc, as the image
  ships it (setup.py), for the proxy benchmarks and tests/compiled.py.

The API objects the workloads are built from are in ``api_objects.py``; the subprocesses the
proxy and controller benchmarks start, and how they wait on them, in ``processes.py`` (kept out
of here: its imports would add to the memory the compile benchmarks measure). The scripts run as
``.venv/bin/python bench/<script>.py``, which puts bench/ first on ``sys.path``; they import
this module as plain ``harness``. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

T = TypeVar("T")
S = TypeVar("S")  # a compile's input state

MB = 1_000_000


# --- running: command line, worker subprocesses, header and footer ------------------------------


def parse_args(
    doc: str | None,
    argv: Sequence[str],
    options: Callable[[argparse.ArgumentParser], object] | None = None,
) -> argparse.Namespace:
    """``--quick`` (tiny sizes, a smoke run), the hidden ``--worker KIND N...``, and whatever
    ``options`` adds for the script."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    if options is not None:
        options(parser)
    return parser.parse_args(argv)


def answer_worker(argv: list[str], workers: Mapping[str, Callable[..., dict[str, Any]]]) -> None:
    """In the subprocess: run ``workers[KIND](*N)`` and write its result to stdout as JSON."""
    kind, *numbers = argv
    json.dump(workers[kind](*(int(n) for n in numbers)), sys.stdout)


def run_worker(script: str, args: Sequence[str]) -> dict[str, Any]:
    """Run ``script --worker *args`` in a fresh interpreter and return the JSON it prints.

    A fresh process per size keeps memory figures from carrying over. When the worker fails,
    the tail of its output goes to stderr and this process exits non-zero.
    """
    out = subprocess.run(
        [sys.executable, script, "--worker", *args], check=False, capture_output=True, text=True
    )
    if out.returncode:
        sys.stderr.write(out.stdout[-2000:] + out.stderr[-4000:])
        raise SystemExit(f"worker {' '.join(args)} failed with exit code {out.returncode}")
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def run_workers(
    script: str, kind: str, plan: Iterable[Sequence[int]], say: Callable[[Sequence[int]], str]
) -> list[dict[str, Any]]:
    """``run_worker(script, [kind, *entry])`` for each entry of ``plan``, in turn, each
    announced by the line ``say(entry)`` as it starts."""
    results = []
    for entry in plan:
        print(f"  {say(entry)} ...", flush=True)
        results.append(run_worker(script, [kind, *map(str, entry)]))
    return results


def git_version() -> str:
    """``git describe --always --dirty`` of the checkout being measured, if git is there."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, or ``n/a`` off Linux."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _proc_line(path: str, field: str) -> str | None:
    """What follows ``field:`` on its line of a /proc file (None when absent, or off Linux)."""
    try:
        for line in Path(path).read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == field:
                return value.strip()
    except OSError:
        pass
    return None


def machine() -> str:
    """What a figure depends on: the cores this process may use, the CPU model, the memory."""
    memory = _proc_line("/proc/meminfo", "MemTotal")  # "24576000 kB"
    size = f"{int(memory.split()[0]) / 2**20:.1f} GiB" if memory else "memory unknown"
    cpu = _proc_line("/proc/cpuinfo", "model name") or platform.processor() or "unknown CPU"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"nproc {cores}, {cpu}, {size}"


@contextmanager
def session(script: str, argv: Sequence[str]) -> Iterator[None]:
    """Print what a result needs beside it: the command, Python, machine, date and commit
    before the run; the total time and the load average before and after, once the run has
    finished without an exception."""
    print(
        f"bench/{Path(script).name}{''.join(' ' + arg for arg in argv)}: "
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit {git_version()}\n"
        f"  machine: {machine()}"
    )
    load_before = load_average()
    started = time.perf_counter()
    yield
    print(
        f"\n(total {time.perf_counter() - started:.0f} s; load average before {load_before}, "
        f"after {load_average()})"
    )


# --- building: the compiled codec -------------------------------------------------------------

PROJECT_FILES = ("coxswain", "build_backend", "pyproject.toml", "setup.py", "README.md")
_LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.so", ".hypothesis", ".pytest_cache")


def copy_project(source: Path, into: Path, names: Sequence[str] = PROJECT_FILES) -> Path:
    """Copy ``names`` (files or folders) of the project at ``source`` into ``into``, leaving
    out byte code and any native module built there; returns ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, into / name, ignore=_LEFT_OUT)
        else:
            shutil.copy2(source / name, into / name)
    return into


def compile_codec(folder: Path) -> None:
    """Build setup.py's modules in place in ``folder`` (a copy or a worktree, never the
    working tree: a native module there would shadow edits to its source) and check that
    ``python -m coxswain`` run there uses them."""
    done = subprocess.run(
        [sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"],
        cwd=folder,
        env=dict(os.environ, COXSWAIN_MYPYC="1"),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the mypyc build in {folder} failed:\n{done.stdout}\n{done.stderr}")
    check = "from coxswain.http1 import codec_build; print(codec_build())"
    build = subprocess.run(
        [sys.executable, "-c", check], cwd=folder, capture_output=True, text=True, check=True
    ).stdout.strip()
    if build != "compiled":
        raise SystemExit(f"the copy in {folder} runs the codec {build}, not compiled")


# --- measuring: memory and time -----------------------------------------------------------------


def proc_status(field: str) -> int | None:
    """A ``VmRSS``-style field of /proc/self/status, in bytes (None off Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def rss_bytes() -> int:
    """Current resident set size."""
    return proc_status("VmRSS") or max_rss_bytes()


def max_rss_bytes() -> int:
    """Peak resident set size of this process so far."""
    found = proc_status("VmHWM")
    if found is not None:
        return found
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class GcClock:
    """Time spent in the cyclic garbage collector, through ``gc.callbacks``."""

    def __init__(self) -> None:
        self.total = 0.0
        self.full = 0  # collections of the oldest generation
        self.cpu = 0.0  # CPU time of the whole run (set by timed)
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start
            self.full += info["generation"] == 2


def timed(function: Callable[[], T], repeat: int) -> tuple[list[float], list[GcClock], T]:
    """Run ``function`` ``repeat`` (at least 1) times, after a full collection each: wall times,
    the gc clock of each run (collector time, full collections, CPU time), the last value."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, not {repeat}")
    times: list[float] = []
    in_gc: list[GcClock] = []
    last: list[T] = []  # the previous run's value is dropped before the next run
    for _ in range(repeat):
        last.clear()
        gc.collect()
        clock = GcClock()
        gc.callbacks.append(clock)
        cpu, start = time.process_time(), time.perf_counter()
        last.append(function())
        times.append(time.perf_counter() - start)
        clock.cpu = time.process_time() - cpu
        gc.callbacks.remove(clock)
        in_gc.append(clock)
    return times, in_gc, last[0]


@contextmanager
def gc_frozen() -> Iterator[None]:
    """A full collection, then every live object out of the collector's reach (``gc.freeze()``)
    for the block: as a controller could do with its long-lived inputs and state after a sync."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def timed_figures(
    name: str, times: list[float], clocks: list[GcClock]
) -> dict[str, list[float] | list[int]]:
    """What ``timed`` measured, for a worker's JSON result: ``<name>_s`` (wall times),
    ``<name>_gc_s`` (time in the collector), ``<name>_cpu_s`` and ``<name>_full_gcs``."""
    return {
        f"{name}_s": times,
        f"{name}_gc_s": [c.total for c in clocks],
        f"{name}_cpu_s": [c.cpu for c in clocks],
        f"{name}_full_gcs": [c.full for c in clocks],
    }


def traced(function: Callable[[], T]) -> tuple[int, int, T]:
    """Bytes traced by tracemalloc while ``function`` runs: the peak, what is still held at the
    end (mostly the returned value), and the value."""
    gc.collect()
    tracemalloc.start()
    try:
        value = function()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, held, value


def build_and_compile(
    bodies: list[dict[str, Any]],
    build: Callable[[list[dict[str, Any]]], S],
    compile_: Callable[[S], Any],
    check: Callable[[Any], None],
    repeats: CompileRepeats,
    between: Callable[[S], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What the compile benchmarks measure of one size, in this order: RSS with the raw
    ``bodies`` (kept alive by the caller, as an informer cache keeps its objects); timed runs
    of ``build(bodies)`` and ``compile_(state)``, the last result ``check``-ed; RSS and its
    high-water mark after them; ``between(state)``'s own figures, if given; ``tracemalloc``
    peaks of one ``build`` (if ``repeats.trace_build``) and one ``compile_``; timed runs of
    ``compile_`` after ``gc.freeze()`` of the inputs and the state; the high-water mark at the
    end, tracing included."""
    rss_inputs = rss_bytes()
    build_times, build_gc, state = timed(lambda: build(bodies), repeats.build)
    compile_times, compile_gc, result = timed(lambda: compile_(state), repeats.compile)
    check(result)
    figures: dict[str, Any] = {
        "rss_inputs_bytes": rss_inputs,
        "rss_after_bytes": rss_bytes(),
        "max_rss_bytes": max_rss_bytes(),
    }
    del result
    if between is not None:
        figures.update(between(state))
    figures["build_peak_bytes"] = figures["state_held_bytes"] = None
    if repeats.trace_build:  # the state's own size: one traced build, replacing the timed one
        del state
        figures["build_peak_bytes"], figures["state_held_bytes"], state = traced(
            lambda: build(bodies)
        )
    figures["compile_peak_bytes"], figures["result_held_bytes"], _ = traced(lambda: compile_(state))
    # The same compile once the long-lived objects (inputs, state) are moved out of the
    # collector's reach with gc.freeze(), as a controller could do after each sync.
    frozen_times: list[float] = []
    frozen_gc: list[GcClock] = []
    if repeats.frozen:
        with gc_frozen():
            frozen_times, frozen_gc, _ = timed(lambda: compile_(state), repeats.frozen)
    return {
        **figures,
        **timed_figures("build", build_times, build_gc),
        **timed_figures("compile", compile_times, compile_gc),
        **timed_figures("frozen", frozen_times, frozen_gc),
        "max_rss_end_bytes": max_rss_bytes(),
    }


@dataclass(frozen=True)
class CompileRepeats:
    """How many timed runs ``build_and_compile`` makes of each call (``frozen`` may be 0),
    and whether it traces a ``build`` too."""

    build: int
    compile: int
    frozen: int
    trace_build: bool


# --- reporting ----------------------------------------------------------------------------------


def print_table(columns: Sequence[tuple[str, int]], rows: Iterable[Sequence[object]]) -> None:
    """A header line and one line per row: each cell right-aligned to its column's width, one
    space between columns. Cells are formatted with ``format(cell, ">width")``; pass strings
    for anything but plain integers and words."""
    print(" ".join(f"{title:>{width}}" for title, width in columns))
    for row in rows:
        print(" ".join(f"{cell:>{width}}" for cell, (_, width) in zip(row, columns, strict=True)))


def med_best(
    values: list[float],
    scale: float = 1e3,
    digits: int = 1,
    grouping: str = ",",
    best: Callable[[list[float]], float] = min,
) -> str:
    """``median (best)`` of ``values`` times ``scale``, or ``–`` when there were no runs.
    ``grouping`` is the thousands separator (``""`` for none); ``best`` is ``min`` for times,
    ``max`` for rates."""
    if not values:
        return "–"
    spec = f"{grouping}.{digits}f"
    return f"{statistics.median(values) * scale:{spec}} ({best(values) * scale:{spec}})"


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def spread(values: Sequence[float], digits: int, scale: float = 1e3) -> str:
    """``median / p99 / max`` of ``values`` times ``scale`` (seconds to ms by default)."""
    return " / ".join(
        f"{figure * scale:,.{digits}f}"
        for figure in (statistics.median(values), percentile(values, 0.99), max(values))
    )


def mb(count: int | None, grouping: str = ",") -> str:
    """Bytes as MB (10^6 bytes) with one decimal, or ``–`` for None."""
    return "–" if count is None else f"{count / MB:{grouping}.1f}"


def verdict(ok: bool) -> str:
    """``PASS`` or ``FAIL``."""
    return "PASS" if ok else "FAIL"


def print_targets(lines: list[tuple[bool, str]]) -> None:
    """One ``PASS``/``FAIL`` line per target."""
    for ok, text in lines:
        print(f"{verdict(ok)}  {text}")


def stop_unless_empty(what: str, problems: Sequence[str]) -> None:
    """Stop the run (exit non-zero) when a check found ``problems``: a workload that does not
    compile to what it should breaks the benchmark, whatever its figures."""
    if problems:
        raise SystemExit(f"{what}: " + "; ".join(problems[:10]))


def print_skipped_targets() -> None:
    """The line that stands for every target when the run did not reach the target sizes."""
    print("SKIP  all targets: --quick does not run the target sizes")
