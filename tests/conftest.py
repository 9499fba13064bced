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
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

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
        from coxswain.shell.http1 import codec_build

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
