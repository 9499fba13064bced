"""The compile benchmarks still run (their --quick mode), so `make bench` cannot rot unnoticed.

No timing is asserted here: figures belong in docs/benchmarks.md (benchmarks measure; tests do
not time).
"""

from __future__ import annotations

import pytest

from tests.unit.bench_smoke import BENCH, run_quick


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("compile_*.py")))
def test_benchmark_runs_in_quick_mode(script):
    done = run_quick(BENCH / script, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Targets" in done.stdout or "SKIP" in done.stdout
