"""Running a timing script in a subprocess of its own, with a deadline: input that sends code
into super-linear time must fail the test, not hang the suite (tests/hostile)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def run_script(script: str, arguments: Any, *, deadline: float, what: str) -> Any:
    """``python -c script`` fed ``arguments`` as JSON on standard input; its standard output,
    read as JSON. Fails the test, saying ``what`` did not end, past ``deadline`` seconds."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(arguments),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=deadline,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} did not end within {deadline:.0f} s")
    return json.loads(done.stdout)
