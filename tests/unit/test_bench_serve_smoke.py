"""bench/serve.py still runs (its --quick mode: ``coxswain serve`` over 20 route files, new
files and one-file edits followed to a 200), so that the serve benchmark cannot rot unnoticed.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

from tests.unit.bench_smoke import BENCH, check_quick_run


def test_serve_benchmark_runs_in_quick_mode() -> None:
    check_quick_run(BENCH / "serve.py", timeout=120, shows="HTTPRoute edit")
