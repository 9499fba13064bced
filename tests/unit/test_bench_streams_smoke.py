"""bench/streams.py still runs (its --quick mode: one round of 1 s per workload through
Coxswain and nginx's stream module), so that the layer-4 benchmark cannot rot unnoticed.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.unit.bench_smoke import BENCH, run_quick

SCRIPT = BENCH / "streams.py"


@pytest.mark.skipif(
    shutil.which("nginx") is None
    or not Path("/usr/lib/nginx/modules/ngx_stream_module.so").exists(),
    reason="nginx with its stream module is not installed",
)
def test_streams_benchmark_runs_in_quick_mode() -> None:
    done = run_quick(SCRIPT, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for workload in ("bulk", "connect", "udp"):
        assert f"\n{workload} " in done.stdout, done.stdout
