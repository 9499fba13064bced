"""bench/discovery.py, bench/discovery_fleet.py and bench/proxy_resubscribe.py still run (their
--quick modes: 100 routes, a few subscribers or streams over mutual TLS on 127.0.0.1, a few
publishes or subscriptions), so that the discovery benchmarks cannot rot unnoticed. Kept apart
from test_bench_smoke.py, which runs the compile_*.py scripts.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

from tests.unit.bench_smoke import BENCH, check_quick_run, run_quick

SCRIPT = BENCH / "discovery.py"


def test_discovery_benchmark_runs_in_quick_mode() -> None:
    done = run_quick(SCRIPT, timeout=60)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "SKIP" in done.stdout
    assert "Publish to applied" in done.stdout, done.stdout


def test_discovery_fleet_benchmark_runs_in_quick_mode() -> None:
    check_quick_run(BENCH / "discovery_fleet.py", timeout=120, shows="Cold start")


def test_proxy_resubscribe_benchmark_runs_in_quick_mode() -> None:
    done = run_quick(BENCH / "proxy_resubscribe.py", timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "worst lateness: median" in done.stdout, done.stdout
