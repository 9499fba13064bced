"""The HeadCodec interface itself, per implementation: normalised output, HeadRejected.

These pin the translation layer of each library (h11_codec, llhttp_codec) below the shared
rules: what each returns for the same head must already be equal, and garbage must raise
HeadRejected rather than a library exception.
"""

from __future__ import annotations

import pytest

from coxswain.http1 import CODEC_NAMES, HeadCodec, HeadRejected, codec_named


@pytest.fixture(params=CODEC_NAMES)
def codec(request: pytest.FixtureRequest) -> HeadCodec:
    return codec_named(request.param)


def test_names_lowered_and_values_stripped_when_parsing_request(codec: HeadCodec) -> None:
    head = b"POST /x?y HTTP/1.0\r\nHOST: a\r\nX-Pad:\t v \t\r\nEmpty:\r\n\r\n"
    assert codec.parse_request_head(head) == (
        b"POST",
        b"/x?y",
        b"1.0",
        ((b"host", b"a"), (b"x-pad", b"v"), (b"empty", b"")),
    )


def test_status_reason_version_when_parsing_response(codec: HeadCodec) -> None:
    head = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\n\r\n"
    assert codec.parse_response_head(head) == (
        503,
        b"Service Unavailable",
        b"1.1",
        ((b"retry-after", b"5"),),
    )


def test_upgrade_head_complete_when_library_pauses(codec: HeadCodec) -> None:
    head = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
    assert codec.parse_request_head(head)[0] == b"GET"
    assert (
        codec.parse_response_head(b"HTTP/1.1 101 Switching\r\nUpgrade: websocket\r\n\r\n")[0] == 101
    )


@pytest.mark.parametrize(
    "head",
    [
        b"\x00\x01\x02\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nX: \x00\r\n\r\n",
        b"GET / HTTP/1.1\r\n",
    ],
)
def test_head_rejected_when_garbage(codec: HeadCodec, head: bytes) -> None:
    with pytest.raises(HeadRejected):
        codec.parse_request_head(head)
    with pytest.raises(HeadRejected):
        codec.parse_response_head(head)
