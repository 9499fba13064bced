"""Suite-wide settings: hypothesis profiles and the golden-file regeneration switch.

- ``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) runs more examples without deadlines; the
  default ``dev`` profile keeps local runs quick; ``mutate`` (set by ``make mutate``) runs few,
  fixed examples and skips shrinking: a mutation run needs the same verdict on every run, and
  only whether a test fails, not the smallest example.
- ``pytest --update-goldens`` (or ``make goldens``) rewrites the expected files under
  ``tests/golden/cases``; review the diff before committing.
- ``COXSWAIN_EXPECT_CODEC_BUILD=compiled`` (set by tests/compiled.py) stops the run at once
  unless the imported codec is that build: a run meant for the compiled codec must not pass
  on the interpreted one.
- Tests marked ``fixed_ports`` bind ports they cannot choose (the demo's, the shared pool's
  internal ports that the compiler assigns from 30000): each holds a lock that every test run on
  the machine shares, so two suites run side by side take turns there instead of failing with
  "Address already in use".
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, Phase, settings

if TYPE_CHECKING:
    from collections.abc import Iterator

FIXED_PORTS_LOCK = Path(tempfile.gettempdir()) / "coxswain-tests-fixed-ports.lock"
FIXED_PORTS_WAIT = 600.0  # seconds: longer than any one test that holds the lock

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "mutate",
    max_examples=10,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_sessionstart(session: pytest.Session) -> None:
    expected = os.environ.get("COXSWAIN_EXPECT_CODEC_BUILD")
    if expected:
        from coxswain.http1 import codec_build

        if codec_build() != expected:
            pytest.exit(f"the codec imported is {codec_build()}, not {expected}", returncode=3)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden expected files from the current compiler output",
    )


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    """Whether golden tests should rewrite their expectations instead of comparing."""
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture(autouse=True)
def _fixed_ports_taken_in_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """The machine-wide lock of a ``fixed_ports`` test, held while it runs (module docstring)."""
    if request.node.get_closest_marker("fixed_ports") is None:
        yield
        return
    with FIXED_PORTS_LOCK.open("a") as lock:
        deadline = time.monotonic() + FIXED_PORTS_WAIT
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(f"{FIXED_PORTS_LOCK} held by another test run for too long")
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
