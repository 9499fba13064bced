"""Benchmark: what single pieces of the proxy's request path cost, in microseconds per call.

Run from the repository root::

    .venv/bin/python bench/proxy_parts.py      # a few seconds

The proxy's docstrings and docs/benchmarks.md ("Proxy parts") cite these figures for choices
made on the request path; each pair below is the choice and what it replaced, timed with
``timeit`` in this process (best of 5 repeats, so the figure is the cost when nothing else
interferes: a floor, not what a loaded process sees). No targets: the script prints a table.
"""

from __future__ import annotations

import io
import math
import timeit
from dataclasses import fields, make_dataclass
from typing import TYPE_CHECKING

import harness
import trio
from prometheus_client import CollectorRegistry, Counter, Histogram

from coxswain.http1 import RequestHead, ResponseParser, codec_named
from coxswain.shell.dataplane.access_log import AccessLog
from coxswain.shell.dataplane.metrics import Metrics
from coxswain.shell.dataplane.wire import EventReader, Timer, Watchdog

if TYPE_CHECKING:
    from collections.abc import Callable

NUMBER = 20_000
REPEAT = 5


# RequestHead's fields as a frozen dataclass: what the head was before (derived, so the two
# cannot drift apart).
_FrozenHead = make_dataclass(
    "_FrozenHead",
    [(f.name, f.type) for f in fields(RequestHead)],
    frozen=True,
    slots=True,
    kw_only=True,
)


_HEAD = {
    "method": b"GET",
    "target": b"/small",
    "http_version": b"1.1",
    "headers": ((b"host", b"h0.example.com"),),
    "host": b"h0.example.com",
    "connection": (),
    "keep_alive": True,
    "content_length": None,
    "chunked": False,
    "expect_continue": False,
    "upgrade": None,
}
_LOG = {
    "method": b"GET",
    "host": b"h0.example.com",
    "path": b"/small",
    "route": "Ingress bench/ing-0 spec.rules[0].http.paths[0]",
    "client": "127.0.0.1",
    "reason": None,
    "status": 200,
    "upstream": "127.0.0.1:8080",
    "duration_ms": 1.234,
}


def _per_call(function: Callable[[], object]) -> float:
    return min(timeit.repeat(function, number=NUMBER, repeat=REPEAT)) / NUMBER * 1e6


def _log_line_dict(log: AccessLog) -> None:
    log.write(
        {
            "method": _LOG["method"].decode("latin-1"),  # type: ignore[attr-defined]
            "host": _LOG["host"].decode("latin-1"),  # type: ignore[attr-defined]
            "path": _LOG["path"].decode("latin-1"),  # type: ignore[attr-defined]
            "route": _LOG["route"],
            "client": _LOG["client"],
            "status": _LOG["status"],
            "upstream": _LOG["upstream"],
            "duration_ms": _LOG["duration_ms"],
        }
    )


def _parts() -> list[tuple[str, str, float, float]]:
    rows = []
    rows.append(
        (
            "request head event",
            "plain dataclass / frozen",
            _per_call(lambda: RequestHead(**_HEAD)),  # type: ignore[arg-type]
            _per_call(lambda: _FrozenHead(**_HEAD)),
        )
    )
    log = AccessLog(io.StringIO())
    rows.append(
        (
            "access-log line",
            "AccessLog.request / dict + json",
            _per_call(lambda: log.request(**_LOG)),  # type: ignore[arg-type]
            _per_call(lambda: _log_line_dict(log)),
        )
    )
    codec = codec_named("llhttp")
    spare = EventReader(None, ResponseParser(codec))  # type: ignore[arg-type]

    def reuse() -> None:
        spare.stream = None  # type: ignore[assignment]

    rows.append(
        (
            "response reader",
            "reuse a spare / build one",
            _per_call(reuse),
            _per_call(lambda: EventReader(None, ResponseParser(codec))),  # type: ignore[arg-type]
        )
    )
    metrics = Metrics()
    registry = CollectorRegistry()
    counter = Counter("c", "c", ["a", "b", "c", "d", "e"], registry=registry)
    child = counter.labels("80", "Ingress", "ns", "name", "2xx")
    histogram = Histogram("h", "h", registry=registry)
    route = ("Ingress", "ns", "name")

    def ours() -> None:
        metrics.request(listener=80, route=route, status=200)
        metrics.forwarded(0.0012)

    def library() -> None:
        child.inc()
        histogram.observe(0.0012)

    rows.append(
        (
            "request metrics",
            "plain integers / prometheus_client",
            _per_call(ours),
            _per_call(library),
        )
    )
    rows.append(("per-wait timeout", "watchdog / cancel scope", *trio.run(_timeouts)))
    return rows


async def _timeouts() -> tuple[float, float]:
    watchdog = Watchdog(1.0)
    timer = Timer(watchdog)

    def watched() -> None:
        timer.arm(None, 60.0)
        timer.disarm()

    def scoped() -> None:
        with trio.CancelScope(deadline=trio.current_time() + 60.0):  # noqa: ASYNC100 (timed)
            pass

    assert timer.scope.deadline == math.inf
    return _per_call(watched), _per_call(scoped)


def main() -> None:
    with harness.session(__file__, quick=False):
        print(f"µs per call, best of {REPEAT} × {NUMBER:,} calls\n")
        harness.print_table(
            [("piece", 20), ("ours / before", 36), ("ours", 7), ("before", 7)],
            [
                (piece, pair, f"{ours:.2f}", f"{before:.2f}")
                for piece, pair, ours, before in _parts()
            ],
        )


if __name__ == "__main__":
    main()
