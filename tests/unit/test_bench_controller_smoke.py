"""bench/controller.py still runs (its --quick mode: the API emulator, ``coxswain controller``
and a shared ``coxswain proxy`` as subprocesses, 20 routes present, 3 single creations, bursts
of 20 and up to 60 routes), so that the controller benchmark cannot rot unnoticed. Kept apart
from test_bench_smoke.py, which runs the compile_*.py scripts. About 7 s.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "controller.py"


def test_controller_benchmark_runs_in_quick_mode() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "SKIP" in done.stdout
    assert "last route served: 200" in done.stdout, done.stdout
