"""Shared by the test_bench_*smoke.py files: run one bench script in its --quick mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def run_quick(
    script: Path, timeout: int, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``script *args --quick`` under this interpreter, its output captured as text; never
    raises on a non-zero exit, so the caller's assertions report it."""
    return subprocess.run(
        [sys.executable, str(script), *args, "--quick"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def check_quick_run(script: Path, timeout: int, shows: str) -> None:
    """``script --quick`` exits 0, skips the targets and prints ``shows`` (one of its tables)."""
    done = run_quick(script, timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "SKIP" in done.stdout
    assert shows in done.stdout, done.stdout
