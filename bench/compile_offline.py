"""Benchmark: ``coxswain compile -f DUMP --scope shared -o json`` end to end, against the parse.

Run from the repository root::

    .venv/bin/python bench/compile_offline.py           # full run (`make bench`)
    .venv/bin/python bench/compile_offline.py --quick   # tiny smoke run, for tests
    .venv/bin/python bench/compile_offline.py --keep DIR  # leave the dumps in DIR

The worlds: ``bench/compile_ingress.py``'s (Ingress paths, 10 per host, each with its Service
and EndpointSlice) at 1,000, 3,000 and 10,000 paths, and ``bench/compile_gateway.py``'s (Gateways
of 10 HTTPRoutes of 10 rules, every one in the shared pool) at 10,000, 30,000 and 100,000 rules.
Each world is written twice into a temporary folder: as multi-document YAML (``---``, what
``kubectl get -o yaml`` of single objects or a folder of manifests looks like) and as one JSON
``List`` (``kubectl get -o json``).

What it measures, each in a fresh subprocess (``os.wait4`` gives the child's own CPU time and
peak RSS; CPU time, user + system, because the machine is shared):

1. the parse alone: PyYAML's C loader (``yaml.load_all(..., Loader=yaml.CSafeLoader)``) on the
   YAML dump, and the standard library's ``json.load`` on the JSON dump;
2. the command on each dump, its standard output written to a file (its size is shown);
3. at the largest size of each world, what the compiler holds, traced by ``tracemalloc`` in a
   process of its own (the whole process traced, from before the parse of the JSON dump, so
   that strings the state shares with the parsed bodies count): the state once the bodies are
   gone, the compile's peak above it (its working set, result included) and the result it
   leaves; their sum ("held", the state and the compile's peak) per 10,000 routes is the
   measure of the memory target, with the command's peak RSS beside it.

Targets (docs/benchmarks.md): the command within 2x the C loader's parse of the YAML dump at
10,000 Ingress paths and at 100,000 rules, from either dump; growth no worse than n log n from
10,000 to 100,000 rules (the exponent of a least-squares fit of log CPU time on log size over
the three sizes, against log(12.5)/log(10) = 1.10); under 100 MB per 10,000 routes, both held by
the compiler and the whole command's peak RSS above the interpreter's own (the RSS of a process
that imports the command and stops: its modules are no route's). A route is one match of a
path to a backend, the unit the sizes count: an Ingress path or an HTTPRoute rule (the world's
HTTPRoutes hold 10 rules each; their count is printed beside). The script prints PASS/FAIL per
target and exits 0 whatever the figures; it exits non-zero only when it breaks (a command that
fails).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import api_objects as objects
import compile_gateway
import compile_ingress
import harness
import yaml

if TYPE_CHECKING:
    import argparse

RATIO_TARGET = 2.0  # the command's CPU time / the C loader's parse of the YAML dump
ROUTES_PER_100_MB = 10_000  # memory target: under 100 MB per this many paths or rules
GROWTH_FROM, GROWTH_TO = 10_000, 100_000  # rules, for the n log n bound
NLOGN = math.log(10 * math.log(GROWTH_TO) / math.log(GROWTH_FROM)) / math.log(10)

_PARSE_YAML = (
    "import sys, yaml\n"
    "with open(sys.argv[1], encoding='utf-8') as f:\n"
    "    n = sum(1 for _ in yaml.load_all(f.read(), Loader=yaml.CSafeLoader))\n"
)
_PARSE_JSON = (
    "import sys, json\n"
    "with open(sys.argv[1], encoding='utf-8') as f:\n"
    "    n = len(json.loads(f.read())['items'])\n"
)
# The interpreter with the command's modules, and nothing compiled: its RSS is no route's.
_BASELINE = "import coxswain.cli.compile\n"
# What the compiler holds (3. above): bytes traced after build_state, the compile's peak above
# them, what its result leaves; printed as JSON.
_HELD = (
    "import gc, json, sys, tracemalloc\n"
    "from coxswain.compile import CompileConfig, SharedPool, build_state, compile\n"
    "from coxswain.shell.sources import read_manifests\n"
    "gc.disable()\n"
    "tracemalloc.start()\n"
    "bodies = read_manifests([sys.argv[1]])\n"
    "state = build_state(bodies)\n"
    "del bodies\n"
    "held = tracemalloc.get_traced_memory()[0]\n"
    "tracemalloc.reset_peak()\n"
    "result = compile(state, SharedPool(), CompileConfig())\n"
    "now, peak = tracemalloc.get_traced_memory()\n"
    "print(json.dumps([held, peak - held, now - held]))\n"
)


def _dumps(world: str, size: int, folder: Path, tls: dict[str, str]) -> dict[str, Any]:
    """Write the world of ``size`` (paths or rules) as YAML and JSON; what it holds."""
    if world == "ingress":
        load = compile_ingress.workload(size, compile_ingress.PATHS_PER_HOST, tls)
        routes = size
    else:
        load = compile_gateway.workload(size // 100, tls)
        routes = size
    bodies = load["bodies"]
    httproutes = sum(1 for body in bodies if body["kind"] == "HTTPRoute")
    yaml_path = folder / f"{world}-{size}.yaml"
    json_path = folder / f"{world}-{size}.json"
    with yaml_path.open("w", encoding="utf-8") as out:
        yaml.dump_all(bodies, out, Dumper=yaml.CSafeDumper, sort_keys=False)
    with json_path.open("w", encoding="utf-8") as out:
        json.dump({"apiVersion": "v1", "kind": "List", "items": bodies}, out, indent=4)
    return {
        "world": world,
        "size": size,
        "routes": routes,
        "httproutes": httproutes,
        "objects": len(bodies),
        "yaml": yaml_path,
        "json": json_path,
    }


# Each measured process reports the peak RSS of its own address space (``VmHWM``), read as it
# ends. Its rusage would not do: Linux keeps in ``ru_maxrss`` the larger of a process's peaks
# across ``exec``, the address space it was forked from included, so a child of this process,
# which holds the worlds, reported this process's peak whenever its own was smaller.
_PEAK_MARK = "compile_offline peak kB"
_OWN_PEAK = (
    "import runpy, sys\n"
    "how, what = sys.argv[1], sys.argv[2]\n"
    "sys.argv = sys.argv[2:]\n"
    "try:\n"
    "    if how == '-m':\n"
    "        runpy.run_module(what, run_name='__main__', alter_sys=True)\n"
    "    else:\n"
    "        exec(compile(what, '<bench>', 'exec'), {'__name__': '__main__'})\n"
    "finally:\n"
    "    with open('/proc/self/status', encoding='ascii') as status:\n"
    "        kb = next(line.split()[1] for line in status if line.startswith('VmHWM:'))\n"
    f"    sys.stderr.write('\\n{_PEAK_MARK} ' + kb + '\\n')\n"
)


def _run(argv: list[str], out: Path) -> tuple[float, int]:
    """CPU seconds (user + system) and peak RSS (bytes) of ``python -c SCRIPT ARGS...`` or
    ``python -m MODULE ARGS...`` (``argv``), run to completion."""
    python, how, what, *rest = argv
    with out.open("wb") as stdout:
        child = subprocess.Popen(
            [python, "-c", _OWN_PEAK, how, what, *rest], stdout=stdout, stderr=subprocess.PIPE
        )
        assert child.stderr is not None
        errors = child.stderr.read().decode(errors="replace")
        child.stderr.close()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): {errors[-2000:]}")
    peak = errors.rpartition(_PEAK_MARK)[2].split()
    return usage.ru_utime + usage.ru_stime, int(peak[0]) * 1024


def _measure(dump: dict[str, Any], folder: Path, traced: bool) -> dict[str, Any]:
    out = folder / "out.json"
    python = sys.executable
    figures = dict(dump)
    figures["parse_yaml"] = _run([python, "-c", _PARSE_YAML, str(dump["yaml"])], out)
    figures["parse_json"] = _run([python, "-c", _PARSE_JSON, str(dump["json"])], out)
    for form in ("yaml", "json"):
        command = [python, "-m", "coxswain", "compile", "-f", str(dump[form])]
        figures[f"cli_{form}"] = _run([*command, "--scope", "shared", "-o", "json"], out)
        figures[f"out_{form}"] = out.stat().st_size
    figures["dump_mb"] = (dump["yaml"].stat().st_size, dump["json"].stat().st_size)
    if traced:
        _run([python, "-c", _HELD, str(dump["json"])], out)
        figures["held"] = json.loads(out.read_text(encoding="utf-8"))
    return figures


def exponent(sizes: list[int], times: list[float]) -> float:
    """The slope of the least-squares line of log(time) on log(size)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def report(runs: list[dict[str, Any]], baseline: int, quick: bool) -> None:
    columns = [("world", 8), ("size", 8), ("objects", 8), ("YAML MB", 8), ("JSON MB", 8),
               ("C loader s", 10), ("json s", 7), ("cmd YAML s", 10), ("ratio", 6),
               ("cmd JSON s", 10), ("ratio", 6), ("peak MB", 13), ("out MB", 7)]  # fmt: skip
    print("\nCPU seconds (user + system) of each process; ratio: the command / the C loader")
    rows = []
    for r in runs:
        parse = r["parse_yaml"][0]
        rows.append((r["world"], f"{r['size']:,}", f"{r['objects']:,}",
                     harness.mb(r["dump_mb"][0]), harness.mb(r["dump_mb"][1]), f"{parse:.2f}",
                     f"{r['parse_json'][0]:.2f}", f"{r['cli_yaml'][0]:.2f}",
                     f"{r['cli_yaml'][0] / parse:.2f}", f"{r['cli_json'][0]:.2f}",
                     f"{r['cli_json'][0] / parse:.2f}",
                     f"{harness.mb(r['cli_yaml'][1], '')}/{harness.mb(r['cli_json'][1], '')}",
                     harness.mb(r["out_json"])))  # fmt: skip
    harness.print_table(columns, rows)
    targets: list[tuple[bool, str]] = []
    for world in ("ingress", "gateway"):
        mine = [r for r in runs if r["world"] == world]
        sizes = [r["size"] for r in mine]
        for form in ("yaml", "json"):
            fit = exponent(sizes, [r[f"cli_{form}"][0] for r in mine])
            print(f"{world}, {form.upper()} dump: growth exponent {fit:.2f} over {sizes}")
            if world == "gateway":
                targets.append((fit <= NLOGN, f"growth {form.upper()} {fit:.2f} <= {NLOGN:.2f}"))
        big = mine[-1]
        parse = big["parse_yaml"][0]
        for form in ("yaml", "json"):
            ratio = big[f"cli_{form}"][0] / parse
            targets.append((ratio <= RATIO_TARGET, f"{world} {big['size']:,} {form.upper()}: "
                            f"{ratio:.2f}x the C loader's parse <= {RATIO_TARGET}"))  # fmt: skip
    print()
    targets += _held(runs, baseline)
    if quick:
        harness.print_skipped_targets()
    else:
        harness.print_targets(targets)


def _held(runs: list[dict[str, Any]], baseline: int) -> list[tuple[bool, str]]:
    """Print what the compiler holds at each traced size, per 10,000 routes beside the
    command's peak RSS above ``baseline`` (the interpreter's); the memory targets on both."""
    print("Held by the compiler (tracemalloc, MB): the state, the compile's peak above it")
    print("(result included) and the result; per 10,000 routes (paths or rules): held (state +")
    print("compile peak) and the command's peak RSS above the interpreter's")
    print(f"({harness.mb(baseline)} MB), YAML / JSON dump")
    columns = [("world", 8), ("size", 8), ("HTTPRoutes", 10), ("state", 7),
               ("compile peak", 12), ("result", 7), ("held/10k", 9),
               ("peak RSS/10k", 13)]  # fmt: skip
    rows, targets = [], []
    for r in runs:
        if "held" not in r:
            continue
        state, peak, result = r["held"]
        scale = ROUTES_PER_100_MB / r["routes"]
        held = int((state + peak) * scale)
        rss = [int((r[f"cli_{form}"][1] - baseline) * scale) for form in ("yaml", "json")]
        rows.append((r["world"], f"{r['size']:,}", f"{r['httproutes']:,}", harness.mb(state),
                     harness.mb(peak), harness.mb(result), harness.mb(held),
                     "/".join(harness.mb(b, "") for b in rss)))  # fmt: skip
        where = f"{r['world']} {r['size']:,}"
        targets.append((held < 100 * harness.MB, f"{where}: {harness.mb(held)} MB held by the "
                        "compiler per 10,000 routes < 100"))  # fmt: skip
        for form, per in zip(("YAML", "JSON"), rss, strict=True):
            targets.append((per < 100 * harness.MB, f"{where} {form}: {harness.mb(per)} MB "
                            "peak RSS of the command above the interpreter's per 10,000 routes "
                            "< 100"))  # fmt: skip
    harness.print_table(columns, rows)
    print()
    return targets


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep", type=Path, help="write the dumps here and leave them")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = harness.parse_args(__doc__, argv, _options)
    if args.quick:
        plan = [("ingress", s) for s in (100, 200, 300)] + [("gateway", s) for s in (100, 200)]
    else:
        plan = [("ingress", s) for s in (1_000, 3_000, 10_000)]
        plan += [("gateway", s) for s in (10_000, 30_000, 100_000)]
    tls = objects.make_tls_data(compile_ingress.TLS_SERIAL)
    with harness.session(__file__, argv), tempfile.TemporaryDirectory() as temporary:
        folder = args.keep or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        runs = []
        for at, (world, size) in enumerate(plan):
            print(f"  {world} {size:,} ...", flush=True)
            last = at + 1 == len(plan) or plan[at + 1][0] != world
            runs.append(_measure(_dumps(world, size, folder, tls), folder, traced=last))
        baseline = _run([sys.executable, "-c", _BASELINE], folder / "out.json")[1]
        report(runs, baseline, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
