"""``shell.offload``: the programs whose loop runs beside worker threads ask for the interpreter
lock back within ``SWITCH_INTERVAL``, set before their loop starts."""

from __future__ import annotations

import sys

import pytest

import coxswain.cli.controller
import coxswain.cli.proxy
import coxswain.cli.serve
from coxswain.cli import main
from coxswain.shell.offload import SWITCH_INTERVAL


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--manifests", "m"],
        ["controller"],
        ["proxy", "--shared", "--snapshot", "s", "--workers", "1"],
    ],
)
def test_the_programs_that_offload_set_the_switch_interval_before_their_loop(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[float] = []

    def run_until_done(*_: object) -> int:
        seen.append(sys.getswitchinterval())
        return 0

    for module in (coxswain.cli.serve, coxswain.cli.controller, coxswain.cli.proxy):
        monkeypatch.setattr(module, "run_until_done", run_until_done)
    monkeypatch.setattr("coxswain.shell.logs.install_logging", lambda **_: lambda: None)
    monkeypatch.setattr("coxswain.shell.control.kube.connect", lambda _: object())
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # the interpreter's default, whatever ran before
    try:
        assert main(argv) == 0
    finally:
        sys.setswitchinterval(before)
    assert seen == [SWITCH_INTERVAL]
