"""bench/proxy.py still runs (its --quick mode: one worker, 32 connections, 1 s cells), so that
`make bench` cannot rot unnoticed. Kept apart from test_bench_smoke.py because it needs nginx
and wrk, which a machine without them skips rather than installs.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

import shutil

import pytest

from tests.unit.bench_smoke import BENCH, run_quick

SCRIPT = BENCH / "proxy.py"


def test_proxy_benchmark_runs_in_quick_mode():
    missing = [tool for tool in ("nginx", "wrk") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"bench/proxy.py needs {' and '.join(missing)} on PATH")
    done = run_quick(SCRIPT, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "SKIP" in done.stdout
    assert "errors: none" in done.stdout, done.stdout
