"""tools/mutate/accounting.py: the tests that judge only some functions' mutants, and the table
of them in pyproject.toml (``[tool.coxswain.mutate.judges]``, docs/quality.md)."""

from __future__ import annotations

import fnmatch
import re

from tools.mutate.accounting import PYPROJECT, judges_function, judging, load_judges, not_listed
from tools.mutate.run import column_of, load_equivalents, mutate_globs

NO_TESTS = 33  # mutmut's exit code for a mutant that no test reaches

ROOT = PYPROJECT.parent
JUDGES = {
    "tests/property/test_memo_props.py": ("pkg.memo.*",),
    "tests/unit/test_slow.py::test_walk": ("pkg.limits.x_walk", "pkg.yaml*"),
}


def test_a_test_not_named_judges_every_function_it_reaches():
    assert judges_function("tests/unit/test_other.py::test_a", "pkg.memo.x_f", JUDGES)
    assert judges_function("tests/property/test_memo_props.pyx::t", "pkg.decode.x_f", JUDGES)


def test_a_named_file_judges_only_the_functions_its_patterns_match():
    test = "tests/property/test_memo_props.py::test_equal"
    assert judges_function(test, "pkg.memo.xǁMemoǁcompile", JUDGES)
    assert not judges_function(test, "pkg.decode.x_f", JUDGES)
    assert not judges_function(test, "pkg.memory.x_f", JUDGES)


def test_a_named_test_judges_them_with_every_parameter_and_no_other_test_does():
    for test in ("tests/unit/test_slow.py::test_walk", "tests/unit/test_slow.py::test_walk[a-b]"):
        assert judges_function(test, "pkg.limits.x_walk", JUDGES)
        assert judges_function(test, "pkg.yaml_loader.x_load", JUDGES)
        assert not judges_function(test, "pkg.limits.x_walk_named", JUDGES)
        assert not judges_function(test, "pkg.decode.x_f", JUDGES)
    assert judges_function("tests/unit/test_slow.py::test_walker", "pkg.decode.x_f", JUDGES)


def test_judging_keeps_the_order_of_the_tests_it_keeps():
    tests = [
        "tests/unit/test_other.py::test_b",
        "tests/property/test_memo_props.py::test_equal",
        "tests/unit/test_slow.py::test_walk[x]",
        "tests/unit/test_other.py::test_a",
    ]
    assert judging(tests, "pkg.decode.x_f", JUDGES) == [tests[0], tests[3]]
    assert judging(tests, "pkg.memo.x_f", JUDGES) == tests[:2] + tests[3:]
    assert judging([], "pkg.memo.x_f", JUDGES) == []


def test_the_table_is_read_from_its_place_in_pyproject():
    text = '[tool.coxswain.mutate.judges]\n"tests/a.py" = ["m.*"]\n[tool.mutmut]\nx = 1\n'
    assert load_judges(text) == {"tests/a.py": ("m.*",)}
    assert load_judges("[tool.mutmut]\nx = 1\n") == {}


def _mutated_modules() -> list[str]:
    """The modules mutmut mutates: its globs match across folders, as fnmatch does."""
    files = [p.relative_to(ROOT).as_posix() for p in (ROOT / "coxswain").rglob("*.py")]
    globs = mutate_globs()
    return sorted(
        f.removesuffix(".py").replace("/", ".")
        for f in files
        if any(fnmatch.fnmatchcase(f, glob) for glob in globs)
    )


def test_every_judge_in_pyproject_names_a_test_and_patterns_of_mutated_modules():
    judges = load_judges(PYPROJECT.read_text("utf-8"))
    assert judges, "pyproject.toml has no [tool.coxswain.mutate.judges]"
    modules = _mutated_modules()
    problems = []
    for test, patterns in judges.items():
        path, _, name = test.partition("::")
        source = ROOT / path
        if not source.is_file():
            problems.append(f"{test}: no file {path}")
        elif name and not re.search(rf"^def {re.escape(name)}\(", source.read_text(), re.M):
            problems.append(f"{test}: {path} defines no test {name}")
        problems += [
            f"{test}: {pattern} matches no mutated module"
            for pattern in patterns
            if not any(fnmatch.fnmatchcase(f"{module}.x_", pattern) for module in modules)
        ]
    assert not problems, "\n".join(problems)


def test_a_mutant_listed_as_equivalent_runs_no_test_and_is_reported_as_equivalent():
    listed = load_equivalents(
        '[[equivalent]]\nmutant = "pkg.m.x_f__mutmut_2"\nchange = "x = 2"\nreason = "r"\n'
    )
    tests = ["tests/unit/test_m.py::test_a", "tests/unit/test_m.py::test_b"]
    assert not_listed("pkg.m.x_f__mutmut_2", tests, listed) == []
    assert not_listed("pkg.m.x_f__mutmut_3", tests, listed) == tests
    assert column_of(NO_TESTS, equivalent=True) == "equivalent"
    assert column_of(NO_TESTS, equivalent=False) == "survived"
