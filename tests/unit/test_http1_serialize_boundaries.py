"""Boundaries of HTTP/1.1 serialization (coxswain.http1.serialize; RFC 9112 §3, §4, §7.1).

The status code range, the default field check of each writer, and the request framer's
promise to write fields unchecked, with the exact bytes or error each gives.
"""

from __future__ import annotations

import pytest

from coxswain.http1.serialize import (
    RequestFramer,
    frame_last_chunk,
    frame_request_head,
    frame_response_head,
)

_BAD_FIELD = [(b"a b", b"x")]


@pytest.mark.parametrize(
    ("status", "line"),
    [(100, b"HTTP/1.1 100 Continue\r\n"), (999, b"HTTP/1.1 999 \r\n")],
)
def test_status_range_ends(status: int, line: bytes) -> None:
    assert frame_response_head(status=status, headers=[]) == line + b"\r\n"


@pytest.mark.parametrize("status", [99, 1000])
def test_status_outside_the_range(status: int) -> None:
    with pytest.raises(ValueError, match=rf"^invalid status {status}$"):
        frame_response_head(status=status, headers=[])


def test_invalid_reason_phrase() -> None:
    with pytest.raises(ValueError, match=r"^invalid reason phrase b'O\\rK'$"):
        frame_response_head(status=200, headers=[], reason=b"O\rK")


def test_request_head_checks_fields_by_default() -> None:
    with pytest.raises(ValueError, match=r"^invalid header field b'a b': b'x'$"):
        frame_request_head(method=b"GET", target=b"/", headers=_BAD_FIELD)


def test_last_chunk_checks_trailer_fields() -> None:
    with pytest.raises(ValueError, match=r"^invalid header field b'a b': b'x'$"):
        frame_last_chunk(_BAD_FIELD)


def test_request_framer_writes_fields_unchecked() -> None:
    framer = RequestFramer()
    assert framer.frame(b"GET", b"/", [(b"a b", b"x")]) == b"GET / HTTP/1.1\r\na b: x\r\n\r\n"


def test_request_framer_checks_the_request_line_on_first_use() -> None:
    with pytest.raises(ValueError, match=r"^invalid request line b'' b''$"):
        RequestFramer().frame(b"", b"", [])
