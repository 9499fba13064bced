"""tools/mutate/run.py: the report of a mutation run, read from mutmut's files in mutants/."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tools.mutate.collected import BUDGET_SPENT
from tools.mutate.run import BUDGET_CODES, build_report, load_equivalents, render_markdown

if TYPE_CHECKING:
    from pathlib import Path
# mutmut's copy of a function f, with its original and three mutants.
MUTATED = """def x_f__mutmut_orig(x):
    return x + 1
def x_f__mutmut_1(x):
    return x - 1
def x_f__mutmut_2(x):
    return x + 2
def x_f__mutmut_3(x):
    return x * 1
"""


def _entry(mutant: str, change: str) -> str:
    return f'[[equivalent]]\nmutant = "{mutant}"\nchange = "{change}"\nreason = "why"\n'


def _mutants(tmp_path: Path, codes: dict[str, int | None]) -> Path:
    root = tmp_path / "mutants"
    folder = root / "pkg" / "core"
    folder.mkdir(parents=True)
    (folder / "m.py").write_text(MUTATED)
    spans = {"x_f__mutmut_orig": [1, 2], "x_f__mutmut_1": [3, 4], "x_f__mutmut_2": [5, 6]}
    spans["x_f__mutmut_3"] = [7, 8]
    (folder / "m.py.spans").write_text(json.dumps({"version": 1, "spans": spans}))
    keys = {f"pkg.core.m.x_f__mutmut_{k}": v for k, v in codes.items()}
    (folder / "m.py.meta").write_text(json.dumps({"exit_code_by_key": keys}))
    return root


def test_the_report_counts_each_verdict_and_scores_the_non_equivalent_mutants(tmp_path):
    root = _mutants(tmp_path, {"1": 1, "2": 0, "3": 0})
    equivalents = load_equivalents(_entry("pkg.core.m.x_f__mutmut_3", "return x * 1"))
    report = build_report(root, ["pkg/core/*"], equivalents)
    counts = report.packages["pkg/core"].counts
    assert (counts["killed"], counts["survived"], counts["equivalent"], counts["total"]) == (
        1,
        1,
        1,
        3,
    )
    assert report.packages["pkg/core"].score == 0.5
    assert report.survivors == [
        ("pkg.core.m.x_f__mutmut_2", ["-    return x + 1", "+    return x + 2"])
    ]
    assert report.stale == []
    text = render_markdown(report, ["- commit: abc"])
    assert "| `pkg/core` | 1 | 0 | 0 | 1 | 0 | 1 | 0 | 0 | 3 | 50.0% |" in text
    assert "### pkg.core.m.x_f__mutmut_2" in text


def test_a_mutant_whose_worker_spent_its_budget_is_not_caught_and_listed(tmp_path):
    assert {BUDGET_SPENT} == BUDGET_CODES
    root = _mutants(tmp_path, {"1": 1, "2": BUDGET_SPENT, "3": -24})
    report = build_report(root, ["pkg/core/*"], {})
    counts = report.packages["pkg/core"].counts
    assert (counts["killed"], counts["timeout"], counts["budget"], counts["survived"]) == (
        1,
        1,
        1,
        0,
    )
    assert report.packages["pkg/core"].score == 2 / 3
    assert report.survivors == [
        ("pkg.core.m.x_f__mutmut_2 (budget spent)", ["-    return x + 1", "+    return x + 2"])
    ]


def test_an_equivalent_entry_that_no_longer_matches_is_reported_stale(tmp_path):
    root = _mutants(tmp_path, {"1": 1, "2": 0, "3": None})
    equivalents = load_equivalents(
        _entry("pkg.core.m.x_f__mutmut_2", "return x + 3")
        + _entry("pkg.core.m.x_f__mutmut_1", "return x - 1")
        + _entry("pkg.core.m.gone", "")
    )
    report = build_report(root, ["pkg/core/*"], equivalents)
    assert report.stale == [
        "pkg.core.m.x_f__mutmut_1: listed as equivalent, but killed",
        "pkg.core.m.x_f__mutmut_2: listed as `return x + 3`, now `return x + 2`",
        "pkg.core.m.gone: no such mutant",
    ]
    counts = report.files["pkg/core/m.py"].counts
    assert (counts["killed"], counts["survived"], counts["unchecked"], counts["equivalent"]) == (
        1,
        1,
        1,
        0,
    )
