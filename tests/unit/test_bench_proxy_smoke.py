"""bench/proxy.py still runs in each of its modes (``--quick``: a smoke run of seconds), so
that `make bench` and the A/B tools cannot rot unnoticed. Kept apart from test_bench_smoke.py
because most modes need nginx, wrk or valgrind, which a machine without them skips rather than
installs (the script itself installs them when run as root).

No figure is asserted: they belong in docs/benchmarks.md. What is asserted is that a run ends
with exit 0 and prints the figure it exists for.
"""

from __future__ import annotations

import re
import shutil

import pytest

from tests.unit.bench_smoke import BENCH, run_quick

SCRIPT = BENCH / "proxy.py"

# mode and its arguments, the tools it needs, a line its report must hold
MODES = {
    "full": (("full",), ("nginx", "wrk"), r"^errors: none"),
    # the working tree alone, interpreted: no mypyc build, no worktree
    "ab": (
        ("ab", "--build", "interpreted", "."),
        ("nginx", "wrk"),
        r"^\s+\.\s+[\d,]+\s+[\d.]+\s+\d+$",
    ),
    "cpu": (("cpu", "--build", "interpreted", "."), ("nginx",), r"^\s+\.\s+[\d.]+\s+[\d,]+$"),
    "instructions": (
        ("instructions",),
        ("nginx", "valgrind", "callgrind_control"),
        r"^\s+\.\s+[\d,]+$",
    ),
    "parts": (("parts",), (), r"^\s+per-wait timeout\s+watchdog / cancel scope\s+[\d.]+\s+[\d.]+$"),
    "h2": (
        ("h2", "--build", "interpreted"),
        ("nginx", "h2load"),
        r"^\s+\S+\s+10\s+[\d,]+\s+[\d,]+\s+\d+%",  # revision, streams, req/s, nginx, ratio
    ),
    "grpc": (
        ("grpc", "--build", "interpreted"),
        ("nginx", "h2load"),
        r"^coxswain / nginx: \d+%",
    ),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_proxy_benchmark_mode_runs_in_quick_mode(mode: str) -> None:
    args, tools, expected = MODES[mode]
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"bench/proxy.py {mode} needs {' and '.join(missing)} on PATH")
    done = run_quick(SCRIPT, timeout=600, args=args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(expected, done.stdout, re.MULTILINE), done.stdout
