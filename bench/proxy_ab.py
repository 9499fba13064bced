"""Benchmark: two or more versions of the proxy, alternated, for the CPU each spends per request.

Run from the repository root::

    .venv/bin/python bench/proxy_ab.py 81e0265 HEAD            # 4 rounds, 32 connections
    .venv/bin/python bench/proxy_ab.py --rounds 3 --connections 64 HEAD~1 HEAD
    .venv/bin/python bench/proxy_ab.py --response "1 MB" HEAD~1 HEAD
    .venv/bin/python bench/proxy_ab.py --build both HEAD      # interpreted against compiled
    .venv/bin/python bench/proxy_ab.py --build interpreted 18e71c1 HEAD

Full runs of ``bench/proxy.py`` swing by ±30% on a shared machine, more than one change
moves the figures; alternating the versions round by round, a few seconds apart, lets drift hit
each alike. Each revision is checked out with ``git worktree`` in a temporary folder and run
from there (``python -m coxswain`` in a checkout imports that checkout's code; ``.`` is the working
tree itself), its HTTP/1.1
codec compiled with mypyc as the image ships it (setup.py; revisions older than that build
need ``--build interpreted``, which measures what the editable install runs; ``--build both``
runs each revision both ways). One nginx
backend and one 10-route snapshot (compiled by this checkout) serve every version. Per round and
version: ``coxswain proxy --workers 1`` started, warmed with 1 s of ``wrk``, measured with
``wrk -t1 -cN -dS`` while its CPU is read from /proc, stopped. The table gives each round and
the medians: req/s, p99, and user + system CPU per request. No targets; needs nginx and wrk as
``bench/proxy.py`` does.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import harness
import proxy

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

ROUTES = 10


def versions(revisions: Sequence[str], build: str) -> list[tuple[str, str, bool]]:
    """(label, revision, compiled) for each revision and build asked for."""
    builds = {"compiled": [True], "interpreted": [False], "both": [False, True]}[build]
    return [
        (
            f"{revision} {'compiled' if compiled else 'interpreted'}"
            if len(builds) > 1
            else revision,
            revision,
            compiled,
        )
        for revision in revisions
        for compiled in builds
    ]


def checkout(revision: str, into: Path, *, compiled: bool) -> Path:
    """A worktree of ``revision`` in ``into``, its codec compiled if asked."""
    folder = into / f"rev-{len(list(into.iterdir()))}"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(folder), revision],
        cwd=proxy.REPO,
        check=True,
    )
    if compiled:
        harness.compile_codec(folder)
    return folder


def remove(folder: Path) -> None:
    subprocess.run(
        ["git", "worktree", "remove", "--force", str(folder)], cwd=proxy.REPO, check=False
    )


@contextmanager
def version_folders(runs: Sequence[tuple[str, str, bool]], trees: Path) -> Iterator[list[Path]]:
    """The folder each of ``versions``' runs starts from: the working tree for ``.`` (a copy
    of it when compiled: a native module must not land beside the sources), else a worktree of
    the revision in ``trees``; the worktrees are removed on the way out."""
    folders: list[Path] = []
    worktrees: list[Path] = []
    try:
        for _, revision, compiled in runs:
            if revision == ".":
                folders.append(proxy.built(trees) if compiled else proxy.REPO)
            else:
                worktrees.append(checkout(revision, trees, compiled=compiled))
                folders.append(worktrees[-1])
        yield folders
    finally:
        for folder in worktrees:
            remove(folder)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revisions", nargs="+", help="git revisions to compare (two or more)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument(
        "--response", choices=[label for label, _, _ in proxy.SIZES], default="100 B"
    )
    harness.add_build_argument(parser)
    args = parser.parse_args(argv)
    path = next(path for label, path, _ in proxy.SIZES if label == args.response)
    proxy.ensure_tools()
    fleet = proxy.Fleet()
    runs = versions(args.revisions, args.build)
    cells: dict[str, list[proxy.Cell]] = {label: [] for label, _, _ in runs}
    rows = []
    with (
        harness.session(__file__, sys.argv[1:]),
        tempfile.TemporaryDirectory() as tmp,
        version_folders(runs, Path(tmp)) as folders,
    ):
        root = Path(tmp)
        try:
            snapshot = proxy.compile_snapshot(root, ROUTES, proxy.start_backend(fleet, root))
            for number in range(1, args.rounds + 1):
                for (label, _, _), folder in zip(runs, folders, strict=True):
                    served = proxy.start_coxswain(fleet, root, snapshot, ROUTES, 1, folder)
                    proxy.run_wrk(served, path, args.connections, 1)
                    cell = proxy.run_wrk(served, path, args.connections, args.seconds)
                    fleet.stop(served.process)
                    cells[label].append(cell)
                    rows.append((number, label, *_figures([cell])))
        finally:
            fleet.stop_all()
        columns = [("round", 5), ("revision", 22), ("req/s", 9), ("p99 ms", 7), ("CPU/req µs", 10)]
        print(
            f"\n{args.response}, {args.connections} connections, {args.seconds} s per run, 1 worker"
        )
        harness.print_table(columns, rows)
        print("\nmedians")
        harness.print_table(columns[1:], [(label, *_figures(cells[label])) for label in cells])


def _figures(cells: list[proxy.Cell]) -> tuple[str, str, str]:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    return (
        f"{median([c.wrk.requests_per_s for c in cells]):,.0f}",
        f"{median([c.wrk.p99_ms for c in cells]):.2f}",
        f"{median([c.cpu_us_per_request for c in cells]):.0f}",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
