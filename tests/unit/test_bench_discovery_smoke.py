"""bench/discovery.py still runs (its --quick mode: 100 routes, 1 and 3 subscribers over mutual
TLS on 127.0.0.1, a few publishes), so that the discovery benchmark cannot rot unnoticed. Kept
apart from test_bench_smoke.py, which runs the compile_*.py scripts.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "discovery.py"


def test_discovery_benchmark_runs_in_quick_mode() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "SKIP" in done.stdout
    assert "Publish to applied" in done.stdout, done.stdout
