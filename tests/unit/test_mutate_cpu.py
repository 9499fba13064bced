"""The cost section of `make mutate`'s report (tools/mutate/run.py, docs/quality.md)."""

from __future__ import annotations

from tools.mutate.run import cpu_lines

LOG = [
    {"phase": "generate mutants", "cpu": 120.4, "wall": 300.0},
    {"phase": "clean run (skipped: the stats run passed these tests)"},
    {"phase": "mutants start", "cpu": 400.2},
    {"mutant": "coxswain.route.paths.x_a__mutmut_1", "exit": 1, "cpu": 0.5, "wall": 2.0},
    {"mutant": "coxswain.route.paths.x_a__mutmut_2", "exit": 1, "cpu": 1.5, "wall": 2.0},
    {"mutant": "coxswain.route.paths.x_b__mutmut_1", "exit": 0, "cpu": 6.0, "wall": 9.0},
    {"mutant": "coxswain.compile.tls.x_c__mutmut_1", "exit": -24, "cpu": 13.0, "wall": 14.0},
]


def test_the_cost_section_gives_cpu_seconds_per_phase_verdict_and_module():
    lines = cpu_lines(LOG)
    assert "- generate mutants: 120 CPU-s (300 s wall)" in lines
    assert "- clean run (skipped: the stats run passed these tests)" in lines
    assert "- mutants start: 400 CPU-s since the start" in lines
    assert "- mutants tested: 4, 21 CPU-s in their workers" in lines
    assert "  - killed: 2, 2 CPU-s, 1.00 CPU-s each" in lines
    assert "  - survived: 1, 6 CPU-s, 6.00 CPU-s each" in lines
    assert "  - timeout: 1, 13 CPU-s, 13.00 CPU-s each" in lines
    modules = [line for line in lines if line.startswith("| `")]
    assert modules == [
        "| `coxswain.compile.tls` | 1 | 13 | 13.00 |",
        "| `coxswain.route.paths` | 3 | 8 | 2.67 |",
    ]
