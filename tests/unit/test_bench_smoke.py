"""The benchmarks still run (their --quick mode), so `make bench` cannot rot unnoticed.

No timing is asserted here: figures belong in docs/benchmarks.md (STYLE: benchmarks, not timed
assertions).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("compile_*.py")))
def test_benchmark_runs_in_quick_mode(script):
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Targets" in done.stdout or "SKIP" in done.stdout
