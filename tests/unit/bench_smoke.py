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
