"""Boundaries of the two head implementations (coxswain.http1.h11_codec, .llhttp_codec).

The shared parser only hands a codec complete heads, but a codec is a public
:class:`~coxswain.http1.interface.HeadCodec`: each refuses an unfinished head with the same
sentence, however long the head (h11 must not answer "buffer too long" instead), and passes
the library's own reason through. The parsers are checked for using the codec's own
Content-Length handling: llhttp refuses duplicates itself, so its reason is the one answered.
"""

from __future__ import annotations

import pytest

from coxswain.http1 import (
    HeadCodec,
    HeadRejected,
    ProtocolError,
    RequestParser,
    ResponseParser,
    codec_named,
)
from coxswain.http1.h11_codec import H11Codec
from coxswain.http1.llhttp_codec import LlhttpCodec

_LONG = b"a" * 17_000  # past h11's default limit of an incomplete event (16 KiB)


@pytest.mark.parametrize("codec", [H11Codec(), LlhttpCodec()], ids=["h11", "llhttp"])
@pytest.mark.parametrize("value", [b"a", _LONG])
def test_unfinished_head_is_refused_as_incomplete(codec: HeadCodec, value: bytes) -> None:
    with pytest.raises(HeadRejected) as request:
        codec.parse_request_head(b"GET / HTTP/1.1\r\nHost: " + value + b"\r\n")
    assert str(request.value) == "incomplete request head"
    with pytest.raises(HeadRejected) as response:
        codec.parse_response_head(b"HTTP/1.1 200 OK\r\nA: " + value + b"\r\n")
    assert str(response.value) == "incomplete response head"


def test_h11_reason_is_passed_through() -> None:
    with pytest.raises(HeadRejected) as error:
        H11Codec().parse_response_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
        )
    assert str(error.value) == "conflicting Content-Length headers"


def test_llhttp_reason_is_passed_through() -> None:
    with pytest.raises(HeadRejected) as error:
        LlhttpCodec().parse_request_head(b"BREW / HTTP/1.1\r\nHost: a\r\n\r\n")
    assert str(error.value) == "Invalid method encountered"


def test_llhttp_values_are_trimmed_of_ows_only() -> None:
    _, _, _, headers = LlhttpCodec().parse_request_head(
        b"GET / HTTP/1.1\r\nHost: a\r\nX-A:\t XvX \t\r\n\r\n"
    )
    assert headers == ((b"host", b"a"), (b"x-a", b"XvX"))


_TWO_LENGTHS = b"Content-Length: 1\r\nContent-Length: 1\r\n\r\n"


def test_request_parser_leaves_duplicate_lengths_to_llhttp() -> None:
    parser = RequestParser(codec_named("llhttp"))
    parser.receive_data(b"POST / HTTP/1.1\r\nHost: a\r\n" + _TWO_LENGTHS)
    assert parser.next_event() == ProtocolError(400, "llhttp: Duplicate Content-Length")


def test_response_parser_leaves_duplicate_lengths_to_llhttp() -> None:
    parser = ResponseParser(codec_named("llhttp"))
    parser.expect_response(b"GET")
    parser.receive_data(b"HTTP/1.1 200 OK\r\n" + _TWO_LENGTHS)
    assert parser.next_event() == ProtocolError(502, "upstream: llhttp: Duplicate Content-Length")
