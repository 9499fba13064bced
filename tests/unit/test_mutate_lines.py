"""tools/mutate/lines.py: a mutant runs only the tests that executed the statement it changes."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import textwrap
from typing import TYPE_CHECKING

import coverage

from tools.mutate.lines import LineIndex, MutatedFile, changed_offsets, statement_lines

if TYPE_CHECKING:
    from pathlib import Path

# A file as mutmut writes it: the original of each function and its mutants, one after the
# other, and a trampoline (here a plain call) under the function's own name.
GRADE = textwrap.dedent(
    '''\
    def x_grade__mutmut_NAME(score, strict=False):
        """A grade."""
        if score > 90:
            return "a"
        elif score > 50:
            return "b"
        try:
            low = compute(
                score,
                strict,
            )
        except ValueError:
            return "?"
        return low
    '''
)
MUTATIONS = {
    "1": ("if score > 90:", "if score >= 90:"),
    "2": ("            strict,\n", ""),
    "3": ("strict=False)", "strict=True)"),
    "4": ('return "a"', 'return "XXaXX"'),
}
HELPERS = textwrap.dedent(
    """\
    def compute(score, strict):
        if strict:
            raise ValueError(score)
        return "c"


    def grade(score, strict=False):
        return x_grade__mutmut_orig(score, strict)
    """
)
SOURCE = "\n\n".join(
    [
        GRADE.replace("NAME", "orig"),
        *(GRADE.replace("NAME", n).replace(*change) for n, change in MUTATIONS.items()),
        HELPERS,
    ]
)


def _spans(source: str) -> dict[str, list[int]]:
    return {
        node.name: [node.lineno, node.end_lineno or node.lineno]
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef)
    }


def _mutated(tmp_path: Path) -> Path:
    package = tmp_path / "mutants" / "pkg"
    package.mkdir(parents=True)
    path = package / "grades.py"
    path.write_text(SOURCE, encoding="utf-8")
    spans = {"version": 1, "spans": _spans(SOURCE)}
    (package / "grades.py.spans").write_text(json.dumps(spans), encoding="utf-8")
    return path


def _covered(tmp_path: Path, path: Path, calls: dict[str, tuple[int, bool]]) -> LineIndex:
    """Run ``grade`` once per test name, each in its own coverage context, as the stats run
    does; the index built from that coverage."""
    spec = importlib.util.spec_from_file_location("pkg_grades_under_test", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    cov = coverage.Coverage(data_file=None, config_file=False, include=[f"{path.parent}/*"])
    cov.start()
    try:
        spec.loader.exec_module(module)
        for test, (score, strict) in calls.items():
            cov.switch_context(test)
            module.grade(score, strict)
    finally:
        cov.stop()
        sys.modules.pop("pkg_grades_under_test", None)
    index = LineIndex(tmp_path / "mutants")
    index.take(cov.get_data())
    return index


def test_the_changed_lines_are_found_by_diff_with_the_names_left_out():
    original = ["", "def x_f__mutmut_orig(a):", "    b = g(", "        a,", "    )"]
    replaced = ["", "def x_f__mutmut_3(a):", "    b = h(", "        a,", "    )"]
    deleted = ["", "def x_f__mutmut_4(a):", "    b = g(", "    )"]
    assert changed_offsets(original, original) == []
    assert changed_offsets(original, replaced) == [2]
    assert changed_offsets(original, deleted) == [3]
    inserted = ["", "def x_f__mutmut_5(a):", "    b = g(", "        a,", "        a,", "    )"]
    assert changed_offsets(original, inserted) == [3, 4]


def test_a_line_widens_to_its_statement_or_its_compound_header():
    function = ast.parse(SOURCE).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert statement_lines(function, 3) == range(3, 4)  # the `if` line alone
    assert statement_lines(function, 4) == range(4, 5)
    assert statement_lines(function, 5) == range(5, 6)  # the `elif`: a nested `if`'s header
    assert statement_lines(function, 9) == range(8, 12)  # inside a call over four lines
    assert statement_lines(function, 12) == range(7, 14)  # `except …:` is no statement: all
    assert statement_lines(function, 1) is None  # the signature: defaults run at import


def test_a_mutant_runs_only_the_tests_that_executed_its_statement(tmp_path):
    path = _mutated(tmp_path)
    index = _covered(
        tmp_path,
        path,
        {"t::high": (95, False), "t::middle": (60, False), "t::low": (10, False)},
    )
    every = ["t::low", "t::middle", "t::high"]
    # the `if` runs in every test; `return "a"` in one; the call below the `elif` in one
    assert index.select("pkg.grades", "x_grade__mutmut_1", every) == every
    assert index.select("pkg.grades", "x_grade__mutmut_4", every) == ["t::high"]
    assert index.select("pkg.grades", "x_grade__mutmut_2", every) == ["t::low"]
    # a default changed in the signature: every test mutmut chose, as before
    assert index.select("pkg.grades", "x_grade__mutmut_3", every) == every
    # only among mutmut's choice, in its order
    assert index.select("pkg.grades", "x_grade__mutmut_4", ["t::low", "t::middle"]) == []


def test_no_coverage_or_an_unknown_mutant_keeps_every_test(tmp_path):
    path = _mutated(tmp_path)
    every = ["t::a", "t::b"]
    assert LineIndex(tmp_path / "mutants").select("pkg.grades", "x_grade__mutmut_4", every) == every
    index = _covered(tmp_path, path, {"t::a": (95, False)})
    assert index.select("pkg.grades", "x_grade__mutmut_99", every) == every
    assert index.select("pkg.other", "x_grade__mutmut_4", every) == every
    index.take(None)
    assert index.select("pkg.grades", "x_grade__mutmut_4", every) == every


def test_the_mutated_file_reads_its_functions_and_spans(tmp_path):
    mutated = MutatedFile.read(_mutated(tmp_path))
    assert set(mutated.functions) == {"x_grade__mutmut_orig"}
    assert mutated.original_lines("x_grade__mutmut_4") == {4}
    assert mutated.original_lines("x_grade__mutmut_2") == set(range(8, 12))
