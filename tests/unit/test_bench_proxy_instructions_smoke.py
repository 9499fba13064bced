"""bench/proxy_instructions.py still runs (a few requests on two connections), so that
`make bench` cannot rot unnoticed. Skipped on a machine without valgrind or nginx, which this
test does not install. No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.unit.bench_smoke import BENCH


def test_instruction_count_benchmark_runs():
    tools = ("valgrind", "callgrind_control", "nginx")
    missing = [tool for tool in tools if not shutil.which(tool)]
    if missing:
        pytest.skip(f"bench/proxy_instructions.py needs {', '.join(missing)} on PATH")
    done = subprocess.run(
        [sys.executable, str(BENCH / "proxy_instructions.py"), "--requests", "16"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"^\s+\.\s+[\d,]+$", done.stdout, re.MULTILINE), done.stdout
