"""The proxy shell's small pure-ish parts: backend choice, round-robin, own answers, loading."""

from __future__ import annotations

import contextlib
import json
import math
import random
import re
import socket
import time
from collections import Counter
from dataclasses import replace
from email.utils import formatdate
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing
from pyrsistent import pvector

from coxswain.compile.scope import parse_scope
from coxswain.compile.snapshot import Backend, Endpoint, Retry
from coxswain.http1 import (
    Limits,
    RequestHead,
    RequestParser,
    ResponseHead,
    ResponseParser,
    codec_named,
)
from coxswain.route import Decision
from coxswain.shell.dataplane.balance import RoundRobin, pick_backend
from coxswain.shell.dataplane.connection import Connection
from coxswain.shell.dataplane.http1_connection import _drain
from coxswain.shell.dataplane.served import Routed
from coxswain.shell.dataplane.snapshot_file import SnapshotLoadError, load_snapshot
from coxswain.shell.dataplane.tries import Answer, after_retries
from coxswain.shell.dataplane.upstream import Forwarder, _final_head
from coxswain.shell.dataplane.wire import EventReader, Watchdog, http_date, own_answer
from tests.unit.turns import turn_counter

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path


def test_pick_backend_follows_weights_and_skips_zero() -> None:
    a = Backend(namespace="n", service="a", port=80, weight=1)
    b = Backend(namespace="n", service="b", port=80, weight=3)
    zero = Backend(namespace="n", service="z", port=80, weight=0)
    rng = random.Random(7)
    decision = Decision(
        matched=True, status=None, reason="r", host="h", path="/", backends=(a, b, zero)
    )
    routed = Routed(decision)
    assert routed.backends == (a, b)
    picks = [pick_backend(routed.backends, routed.weights, rng) for _ in range(4000)]
    seen = Counter(p.service for p in picks if p is not None)
    assert 2700 <= seen["b"] <= 3300
    assert pick_backend((a,), (1,), rng) is a
    assert Routed(replace(decision, backends=(zero,))).backends == ()
    assert pick_backend((), (), rng) is None


def test_round_robin_rotates_per_backend() -> None:
    endpoints = [Endpoint("10.0.0.1", 80), Endpoint("10.0.0.2", 80), Endpoint("10.0.0.3", 80)]
    rr = RoundRobin()
    firsts = [rr.order("k", endpoints)[0].address for _ in range(4)]
    assert firsts == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1"]
    assert rr.order("other", endpoints)[0].address == "10.0.0.1"
    assert sorted(rr.order("k", endpoints)) == endpoints


@pytest.mark.parametrize("close", [False, True])
def test_own_answer_is_a_well_framed_response(close: bool) -> None:
    wire = own_answer(308, "moved", close=close, location="https://a.example.com/x")
    parser = ResponseParser(codec_named("h11"))
    parser.expect_response(b"GET")
    parser.receive_data(wire)
    head = parser.next_event()
    assert isinstance(head, ResponseHead)
    headers = dict(head.headers)
    assert head.status == 308
    assert headers[b"server"] == b"coxswain"
    assert headers[b"date"] == http_date()
    assert headers[b"location"] == b"https://a.example.com/x"
    assert int(headers[b"content-length"]) == len(wire) - wire.index(b"\r\n\r\n") - 4
    assert (headers.get(b"connection") == b"close") is close


def test_http_date_is_an_imf_fixdate_of_this_second() -> None:
    before = int(time.time())
    value = http_date()
    after = int(time.time())
    assert value in {formatdate(t, usegmt=True).encode() for t in range(before, after + 1)}
    assert re.fullmatch(rb"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT", value)


def test_own_answer_to_head_has_no_body() -> None:
    wire = own_answer(404, "none", close=False, head_only=True)
    assert wire.endswith(b"\r\n\r\n")
    assert b"content-length: " in wire


def test_a_retry_waits_the_backoff_doubled_each_time_up_to_ten_times_it() -> None:
    counted: list[str] = []
    retry = Retry(codes=pvector([500]), attempts=9, backoff=0.1)
    waits: list[float] = []

    async def main() -> None:
        forwarder = Forwarder(
            codec=codec_named("h11"),
            rng=random.Random(1),
            watchdog=Watchdog(0.1),
            count_retry=counted.append,
        )
        for retried in range(6):
            before = trio.current_time()
            assert await forwarder.back_off(retry, retried, "status") == retried + 1
            waits.append(round(trio.current_time() - before, 9))

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert counted == ["status"] * 6


@pytest.mark.parametrize(
    ("status", "retried", "answered"),
    [(502, 0, 502), (502, 2, 503), (504, 2, 504), (500, 1, 500)],
)
def test_the_last_failure_is_answered_and_a_broken_connection_after_retries_is_503(
    status: int, retried: int, answered: int
) -> None:
    answer = after_retries(Answer(status, "the upstream broke", "10.0.0.1:80"), retried)
    assert (answer.status, answer.upstream) == (answered, "10.0.0.1:80")
    suffix = f" (after {retried} retries)" if retried else ""
    assert answer.reason == "the upstream broke" + suffix


def test_load_snapshot_reports_unreadable_foreign_and_bad_files(tmp_path: Path) -> None:
    shared = parse_scope("shared")
    assert shared is not None
    with pytest.raises(SnapshotLoadError, match="cannot be read"):
        load_snapshot(str(tmp_path / "missing.json"), shared)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(SnapshotLoadError, match="cannot be read"):
        load_snapshot(str(bad), shared)
    bad.write_text("{}")
    with pytest.raises(SnapshotLoadError, match="not a snapshot"):
        load_snapshot(str(bad), shared)
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "version": "sha256:x",
                "scope": "app/gw",
                "ingress": {"http_port": 80, "https_port": 443, "hosts": {}},
            }
        )
    )
    with pytest.raises(SnapshotLoadError, match="this proxy serves shared"):
        load_snapshot(str(good), shared)
    gateway = parse_scope("app/gw")
    assert gateway is not None
    assert load_snapshot(str(good), gateway).scope == gateway


def test_an_upstream_flooding_interim_responses_lets_other_tasks_run() -> None:
    """Nothing is sent for a 1xx and a receive that finds bytes does not yield, so the loop
    that skips interim responses yields itself."""

    async def main() -> None:
        interim = b"HTTP/1.1 100 Continue\r\n\r\n" * 2000  # 50 KB: one receive
        connection, peer = _filled(interim + b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        with peer, contextlib.closing(connection):
            parser = ResponseParser(codec_named("llhttp"))
            parser.expect_response(b"GET")
            reader = EventReader(connection, parser)
            head, turns = await _turns_while(lambda: _final_head(reader, upgrading=False))
            assert isinstance(head, ResponseHead)
            assert head.status == 200
            assert turns >= 1000

    trio.run(main)


async def _turns_while(work: Callable[[], Awaitable[object]]) -> tuple[object, int]:
    """Run ``work`` beside a task that counts its own turns; (the result, the turns)."""
    async with turn_counter() as turns:
        before = turns()
        result = await work()
        return result, turns() - before


def _filled(data: bytes) -> tuple[Connection, socket.socket]:
    """Our end of a socket pair whose peer has sent ``data`` already (it all fits)."""
    ours, theirs = socket.socketpair()
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    theirs.sendall(data)
    return Connection(ours), theirs


def test_a_head_whose_pieces_are_always_there_still_lets_other_tasks_run() -> None:
    """A receive that finds bytes does not yield; when they make no event, the reader does."""

    async def main() -> None:
        head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"v" * 300_000 + b"\r\n\r\n"
        connection, peer = _filled(head)  # five receives of 64 KiB, every one at once
        with peer, contextlib.closing(connection):
            parser = RequestParser(codec_named("llhttp"), limits=Limits(max_head_bytes=1 << 20))
            event, turns = await _turns_while(EventReader(connection, parser).next)
            assert isinstance(event, RequestHead)
            assert event.headers == ((b"host", b"x"), (b"x-long", b"v" * 300_000))
            # a yield between each two receives: 4; trio runs the tasks of a turn in either
            # order, so the other task may run once less (or more) around the first and last
            assert turns >= 3

    trio.run(main)


def test_dropping_a_body_of_tiny_chunks_lets_other_tasks_run() -> None:
    """The body of a request the proxy answers itself is read and dropped; nothing is sent
    meanwhile, so the drain yields itself."""

    async def main() -> None:
        request = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        connection, peer = _filled(request + b"1\r\nx\r\n" * 2000 + b"0\r\n\r\n")
        with peer, contextlib.closing(connection):
            reader = EventReader(connection, RequestParser(codec_named("llhttp")), read_timeout=5)
            head = await reader.next(math.inf)
            assert isinstance(head, RequestHead)
            assert (head.method, head.chunked) == (b"POST", True)
            kept, turns = await _turns_while(lambda: _drain(reader))
            assert kept is True
            assert turns >= 1000

    trio.run(main)
