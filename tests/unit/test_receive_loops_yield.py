"""Every loop in the shell that receives also yields to the other tasks, or says why not.

``shell/dataplane/connection.py``: a receive that finds bytes returns them without a yield of
its own, and ``send_all`` always yields. Fairness between connections rests on that: a loop that
receives must send, or yield itself (trio.lowlevel.checkpoint), or a connection whose bytes
are always there keeps the worker to itself. Each loop that does so has a behaviour test
(tests/unit/test_proxy_units.py, test_connection.py); this test finds the loops, so that a new
one cannot forget the rule unnoticed: it must await a send or a checkpoint in the loop, or be
listed in ``ELSEWHERE`` with the reason it may not.
"""

from __future__ import annotations

import ast
from pathlib import Path

SHELL = Path(__file__).resolve().parents[2] / "coxswain" / "shell"
RECEIVES = frozenset({"receive_some", "next"})  # Stream.receive_some, EventReader.next
YIELDS = frozenset({"send_all", "checkpoint", "cancel_shielded_checkpoint", "sleep"})

# (module, function) → why its receiving loop need not yield itself
ELSEWHERE = {
    ("proxy.py", "_until_supervisor_gone"): (
        "stdin is a trio FdStream, whose receive_some always yields"
    ),
    ("dataplane/tunnel.py", "tunnel"): (
        "the loop over the 101's events ends after at most two (its end, then the pause); "
        "the relay after it sends"
    ),
    (
        "dataplane/workers.py",
        "_get",
    ): "a trio SocketStream to a worker's admin port: its receive yields",
    ("dataplane/workers.py", "_read_report"): "a trio process pipe: its receive yields",
    ("dataplane/server.py", "_first_bytes"): (
        "it loops only while the bytes are a strict prefix of the 24-byte HTTP/2 preface: each "
        "pass brings one byte or more of it"
    ),
    ("dataplane/h2_stream.py", "respond"): (
        "each piece of the body goes out through send_data, which sends (H2Session.flush) "
        "at least once, or yields for an empty piece; the end ends the loop"
    ),
    ("dataplane/h2_upstream.py", "_receive"): (
        "it loops only after its idle deadline passed as a stream opened (a cancellation, "
        "which yields); its caller, run, yields after every batch of frames"
    ),
    ("dataplane/relay_h2.py", "_send"): (
        "each piece of the body goes out through send_data, which sends (H2Upstream.flush) at "
        "least once, or yields for an empty piece; the end ends the loop"
    ),
}


def _awaited(node: ast.AST) -> set[str]:
    """The method names awaited anywhere in ``node`` (``await x.name(...)``)."""
    return {
        n.value.func.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Await)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Attribute)
    }


def _receiving_loops() -> dict[tuple[str, str], list[tuple[int, set[str]]]]:
    """(module, async function) → each loop in it that awaits a receive: line, awaited names."""
    found: dict[tuple[str, str], list[tuple[int, set[str]]]] = {}
    for path in sorted(SHELL.rglob("*.py")):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.AsyncFunctionDef):
                continue
            for loop in ast.walk(function):
                if isinstance(loop, ast.While | ast.For | ast.AsyncFor):
                    names = _awaited(loop)
                    if names & RECEIVES:
                        key = (str(path.relative_to(SHELL)), function.name)
                        found.setdefault(key, []).append((loop.lineno, names))
    return found


def test_every_receiving_loop_sends_or_yields_or_says_why_not() -> None:
    loops = _receiving_loops()
    assert ("dataplane/wire.py", "next") in loops, "the scan finds EventReader.next's loop"
    silent = [
        f"{module}:{line} in {function}()"
        for (module, function), found in loops.items()
        for line, names in found
        if not names & YIELDS and (module, function) not in ELSEWHERE
    ]
    assert not silent, f"receiving loops that never yield: {silent}"


def test_every_exception_is_still_a_receiving_loop_without_a_yield() -> None:
    loops = _receiving_loops()
    for key in ELSEWHERE:
        assert key in loops, f"{key} no longer has a receiving loop: drop it from ELSEWHERE"
        assert any(not names & YIELDS for _, names in loops[key]), f"{key} yields now"
