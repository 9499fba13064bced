"""bench/tls_stacks.py still runs (its --quick mode: a few handshakes and 1 MB on each TLS stack
over 127.0.0.1), so that the comparison of ``ssl`` and pyOpenSSL cannot rot unnoticed.

No figure is asserted: they belong in docs/benchmarks.md.
"""

from __future__ import annotations

from tests.unit.bench_smoke import BENCH, run_quick


def test_tls_stacks_benchmark_runs_in_quick_mode() -> None:
    done = run_quick(BENCH / "tls_stacks.py", timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert {"ssl", "pyOpenSSL"} <= set(rows), done.stdout
