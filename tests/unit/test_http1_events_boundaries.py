"""The singleton events print as their names (coxswain.http1.events): logs and test failures
show them that way."""

from __future__ import annotations

from coxswain.http1.events import CONNECTION_CLOSED, NEED_DATA, PAUSED


def test_singleton_reprs() -> None:
    assert [repr(NEED_DATA), repr(PAUSED), repr(CONNECTION_CLOSED)] == [
        "NEED_DATA",
        "PAUSED",
        "CONNECTION_CLOSED",
    ]
