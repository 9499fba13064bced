"""bench/controller.py still runs (its --quick mode: the API emulator, ``coxswain controller``
and a shared ``coxswain proxy`` as subprocesses, 20 routes present, 3 single creations, bursts
of 20 and up to 60 routes), so that the controller benchmark cannot rot unnoticed. Kept apart
from test_bench_smoke.py, which runs the compile_*.py scripts. About 7 s.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

from tests.unit.bench_smoke import BENCH, run_quick

SCRIPT = BENCH / "controller.py"


def test_controller_benchmark_runs_in_quick_mode() -> None:
    done = run_quick(SCRIPT, timeout=60)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "SKIP" in done.stdout
    assert "last route served: 200" in done.stdout, done.stdout
