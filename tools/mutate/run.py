"""`make mutate`: mutation testing of the pure packages with mutmut, and a report of the scores.

Why a mutation run: the property tests and goldens say the compiler and the router are right on
the inputs they try; a mutant (one operator, constant or call changed in the code) that every
test still passes shows a behaviour no test pins. docs/quality.md explains how to read and
act on the report.

What it does:

1. runs ``mutmut run`` (pinned by the ``mutate`` extra) from the repository root. What is
   mutated (``only_mutate``), which tests may run (``pytest_add_cli_args_test_selection``) and
   the type check that rejects mutants before any test runs (``type_check_command``: mypy
   --strict, as ``make lint`` would) are in ``[tool.mutmut]`` of pyproject.toml, and nowhere
   else. mutmut copies the tree into ``mutants/``, runs the selected tests once to learn which
   tests reach which function, then tests each mutant in a forked worker with only those
   tests, fastest first, under ``HYPOTHESIS_PROFILE=mutate`` (tests/conftest.py);
2. writes ``build/mutate/report.md`` (and ``report.json``): per package and per file, the
   mutants killed by a test, rejected by mypy, timed out, survived, listed as equivalent in
   ``tools/mutate/equivalent.toml``, the total and the score, then every survivor with its diff.

``make mutate`` starts from a clean ``mutants/`` so that the report describes this tree and
these tests (mutmut would otherwise keep the verdicts of unchanged functions, even after new
tests). To work on one module, name mutants with mutmut's globs; only those are tested again
and the report still covers every mutant mutmut knows::

    make mutate MUTANTS='coxswain.route.paths.*'
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

ROOT: Final = Path(__file__).resolve().parents[2]
MUTANTS: Final = ROOT / "mutants"
REPORT_DIR: Final = ROOT / "build" / "mutate"
EQUIVALENT_FILE: Final = Path(__file__).resolve().parent / "equivalent.toml"
CPU_LOG: Final = REPORT_DIR / "cpu.jsonl"
LOG_ENV: Final = "COXSWAIN_MUTATE_CPU_LOG"  # as tools/mutate/accounting.py reads it

# mutmut's exit codes (mutmut/stats.py), sorted into the report's columns. A test run that
# errors (3) is a kill; a worker killed on its CPU limit is a timeout; a mutant no selected test
# reaches (33) survives, since nothing would notice it. A worker whose pytest could not find its
# tests (4, tools/mutate/accounting.py) is neither: the report counts it as other. A worker
# that spent its CPU budget with every test so far passing (35, tools/mutate/collected.py's
# BUDGET_SPENT) is not caught either: its own column, among the survivors in the score.
KILLED_CODES: Final = frozenset({1, 3})
TYPE_CODES: Final = frozenset({37})
TIMEOUT_CODES: Final = frozenset({-24, 24, 152, 255, 36, -9, -11})
SURVIVED_CODES: Final = frozenset({0, 5, 33})
BUDGET_CODES: Final = frozenset({35})
NOT_CAUGHT: Final = SURVIVED_CODES | BUDGET_CODES
COLUMNS: Final = (
    "killed",
    "mypy",
    "timeout",
    "survived",
    "budget",
    "equivalent",
    "unchecked",
    "other",
    "total",
)


@dataclass(frozen=True)
class Equivalent:
    """A survivor that no test can kill: the mutant behaves as the original on every input."""

    mutant: str
    change: str
    reason: str


@dataclass
class Tally:
    """Counts of one package or file."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0))

    def add(self, column: str) -> None:
        self.counts[column] += 1
        self.counts["total"] += 1

    @property
    def score(self) -> float | None:
        """Share of non-equivalent mutants that something caught (test, mypy or timeout)."""
        c = self.counts
        judged = c["total"] - c["equivalent"] - c["unchecked"] - c["other"]
        caught = c["killed"] + c["mypy"] + c["timeout"]
        return caught / judged if judged else None


def mutate_globs() -> list[str]:
    """The ``only_mutate`` globs of pyproject.toml: the one list of paths under mutation."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    globs: list[str] = config["tool"]["mutmut"]["only_mutate"]
    return globs


def package_of(path: str, globs: Sequence[str]) -> str:
    """The package a mutated file is reported under: the folder of the glob that selected it."""
    for pattern in globs:
        if fnmatch.fnmatch(path, pattern):
            return pattern.rpartition("/")[0]
    return path.rpartition("/")[0]


def load_equivalents(text: str) -> dict[str, Equivalent]:
    entries = tomllib.loads(text).get("equivalent", [])
    return {
        e["mutant"]: Equivalent(mutant=e["mutant"], change=e["change"], reason=e["reason"])
        for e in entries
    }


def column_of(exit_code: int | None, equivalent: bool) -> str:
    if exit_code is None:
        return "unchecked"
    if exit_code in NOT_CAUGHT and equivalent:
        return "equivalent"
    if exit_code in KILLED_CODES:
        return "killed"
    if exit_code in TYPE_CODES:
        return "mypy"
    if exit_code in TIMEOUT_CODES:
        return "timeout"
    if exit_code in SURVIVED_CODES:
        return "survived"
    if exit_code in BUDGET_CODES:
        return "budget"
    return "other"


def mutant_diff(mutants: Path, path: str, mutant: str) -> list[str]:
    """The lines a mutant changes, read from mutmut's copy and its index of function spans."""
    spans = json.loads((mutants / (path + ".spans")).read_text("utf-8"))["spans"]
    name = mutant.rpartition(".")[2]
    original = name.rpartition("__mutmut_")[0] + "__mutmut_orig"
    lines = (mutants / path).read_text("utf-8").splitlines()

    def body(function: str) -> list[str]:
        start, end = spans[function]
        return [line.rstrip() for line in lines[start:end]]  # skip the def line: names differ

    return [
        line
        for line in difflib.unified_diff(body(original), body(name), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and "__mutmut_" not in line
    ]


def changed_line(diff: Sequence[str]) -> str:
    """The first added line of a diff, stripped: how equivalent.toml names a mutation."""
    return next((line[1:].strip() for line in diff if line.startswith("+")), "")


@dataclass
class Report:
    packages: dict[str, Tally]
    files: dict[str, Tally]
    survivors: list[tuple[str, list[str]]]
    stale: list[str]

    def as_json(self) -> dict[str, Any]:
        def rows(tallies: Mapping[str, Tally]) -> dict[str, Any]:
            return {k: {**t.counts, "score": t.score} for k, t in sorted(tallies.items())}

        return {
            "packages": rows(self.packages),
            "files": rows(self.files),
            "survivors": [{"mutant": m, "diff": d} for m, d in self.survivors],
            "stale_equivalents": self.stale,
        }


def build_report(
    mutants: Path, globs: Sequence[str], equivalents: Mapping[str, Equivalent]
) -> Report:
    packages: dict[str, Tally] = {}
    files: dict[str, Tally] = {}
    survivors: list[tuple[str, list[str]]] = []
    stale: list[str] = []
    seen: set[str] = set()
    for meta in sorted(mutants.rglob("*.py.meta")):
        path = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        codes: dict[str, int | None] = json.loads(meta.read_text("utf-8"))["exit_code_by_key"]
        for mutant, code in sorted(codes.items()):
            seen.add(mutant)
            entry = equivalents.get(mutant)
            diff = mutant_diff(mutants, path, mutant) if code in NOT_CAUGHT else []
            if entry is not None and code in NOT_CAUGHT and changed_line(diff) != entry.change:
                stale.append(f"{mutant}: listed as `{entry.change}`, now `{changed_line(diff)}`")
                entry = None
            elif entry is not None and code not in NOT_CAUGHT:
                stale.append(f"{mutant}: listed as equivalent, but {column_of(code, False)}")
            column = column_of(code, entry is not None)
            packages.setdefault(package_of(path, globs), Tally()).add(column)
            files.setdefault(path, Tally()).add(column)
            if column == "survived":
                survivors.append((mutant, diff))
            elif column == "budget":
                survivors.append((f"{mutant} (budget spent)", diff))
    stale += [f"{m}: no such mutant" for m in sorted(set(equivalents) - seen)]
    return Report(packages=packages, files=files, survivors=survivors, stale=stale)


def cpu_lines(log: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's section on cost: CPU-seconds per setup phase, per tested mutant by verdict,
    and per file (tools/mutate/accounting.py writes the log)."""
    out = ["## CPU time", ""]
    for r in (r for r in log if "phase" in r):
        timed = (
            f": {r['cpu']:.0f} CPU-s ({r['wall']:.0f} s wall)"
            if "wall" in r
            else f": {r['cpu']:.0f} CPU-s since the start"
            if "cpu" in r
            else ""
        )
        out.append(f"- {r['phase']}{timed}")
    mutants = [r for r in log if "mutant" in r]
    by_column: dict[str, list[float]] = {}
    by_file: dict[str, list[float]] = {}
    for r in mutants:
        by_column.setdefault(column_of(r["exit"], False), []).append(r["cpu"])
        module = r["mutant"].rpartition(".")[0]
        by_file.setdefault(module, []).append(r["cpu"])
    total = sum(r["cpu"] for r in mutants)
    out.append(f"- mutants tested: {len(mutants)}, {total:.0f} CPU-s in their workers")
    for column, cpus in sorted(by_column.items()):
        out.append(
            f"  - {column}: {len(cpus)}, {sum(cpus):.0f} CPU-s, "
            f"{sum(cpus) / len(cpus):.2f} CPU-s each"
        )
    out += ["", "| module | mutants tested | CPU-s | CPU-s each |", "|---|---:|---:|---:|"]
    for module, cpus in sorted(by_file.items(), key=lambda kv: -sum(kv[1]))[:25]:
        out.append(f"| `{module}` | {len(cpus)} | {sum(cpus):.0f} | {sum(cpus) / len(cpus):.2f} |")
    return [*out, ""]


def _table(title: str, tallies: Mapping[str, Tally]) -> Iterable[str]:
    yield f"| {title} | " + " | ".join(COLUMNS) + " | score |"
    yield "|---" * (len(COLUMNS) + 2) + "|"
    for name, tally in sorted(tallies.items()):
        score = "n/a" if tally.score is None else f"{tally.score:.1%}"
        yield f"| `{name}` | " + " | ".join(str(tally.counts[c]) for c in COLUMNS) + f" | {score} |"


def render_markdown(report: Report, header: Sequence[str]) -> str:
    out = ["# Mutation testing report", "", *header, ""]
    out += _table("package", report.packages)
    out += ["", *_table("file", report.files), ""]
    if report.stale:
        out += ["## Stale entries in tools/mutate/equivalent.toml", ""]
        out += [f"- {line}" for line in report.stale] + [""]
    out += [f"## Survivors ({len(report.survivors)})", ""]
    for mutant, diff in report.survivors:
        out += [f"### {mutant}", "", "```diff", *diff, "```", ""]
    return "\n".join(out)


def git_commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    dirty = (
        " (with uncommitted changes)"
        if git("status", "--porcelain", "--", "coxswain", "tests")
        else ""
    )
    return git("rev-parse", "--short", "HEAD") + dirty


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_mutmut(patterns: Sequence[str], children: int) -> int:
    """Run mutmut under tools/mutate/accounting.py (CPU time per phase and mutant); its exit
    code."""
    env = dict(os.environ, HYPOTHESIS_PROFILE="mutate")
    env[LOG_ENV] = str(CPU_LOG)
    # type_check_command runs `mypy`: the one next to this interpreter.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    CPU_LOG.parent.mkdir(parents=True, exist_ok=True)
    CPU_LOG.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve().parent / "accounting.py"), "run"]
    done = subprocess.run([*command, "--max-children", str(children), *patterns], cwd=ROOT, env=env)
    return done.returncode


def _command(args: argparse.Namespace) -> str:
    if args.resume:
        return "make mutate MUTANTS=--resume"
    return "make mutate" + (" MUTANTS='" + " ".join(args.mutants) + "'" if args.mutants else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mutants", nargs="*", help="mutmut globs: test only these again")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep mutants/: test only what has no verdict (new or changed functions, "
        "timeouts after a change of the timeout settings)",
    )
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report")
    args = parser.parse_args(argv)

    commit = git_commit()  # before the run: the tree mutmut copies
    started = time.monotonic()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not args.report_only:
        if not args.mutants and not args.resume:
            shutil.rmtree(MUTANTS, ignore_errors=True)
        code = run_mutmut(args.mutants, args.children)
        if code != 0:
            return code
    elapsed = time.monotonic() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)

    report = build_report(MUTANTS, mutate_globs(), load_equivalents(EQUIVALENT_FILE.read_text()))
    header = [
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- commit: {commit}",
        f"- command: `{_command(args)}`",
        f"- run time: {elapsed / 60:.1f} min with {args.children} workers, {cpu / 60:.1f} CPU-min"
        if not args.report_only
        else "- run time: not measured (--report-only)",
        f"- machine: {os.cpu_count()} cores, {cpu_model()}",
    ]
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    log = (
        [json.loads(line) for line in CPU_LOG.read_text("utf-8").splitlines() if line.strip()]
        if CPU_LOG.exists()
        else []
    )
    markdown = render_markdown(report, [*header, "", *cpu_lines(log)])
    (REPORT_DIR / "report.md").write_text(markdown, "utf-8")
    data = {"header": header, **report.as_json()}
    (REPORT_DIR / "report.json").write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    print("\n".join(header))
    print("\n".join(_table("package", report.packages)))
    print(f"report: {REPORT_DIR / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
