"""bench/proxy_cpu.py still runs (one short round, the working tree interpreted), so that it
cannot rot unnoticed. Skipped on a machine without nginx, which this test does not install.
No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.unit.bench_smoke import BENCH


def test_cpu_per_request_benchmark_runs():
    if shutil.which("nginx") is None:
        pytest.skip("bench/proxy_cpu.py needs nginx on PATH")
    command = [sys.executable, str(BENCH / "proxy_cpu.py"), "--build", "interpreted"]
    done = subprocess.run(
        [*command, "--rounds", "1", "--requests", "200", "."],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"^\s+\.\s+[\d.]+\s+[\d,]+$", done.stdout, re.MULTILINE), done.stdout
