"""Differential test: the h11 and llhttp HTTP/1.1 codecs must agree on every input.

The same bytes, split at the same random boundaries, go through a parser on each
implementation; after normalising (adjacent Data pieces merged, a ProtocolError reduced to its
status, since reasons name the library) the event sequences must be equal. That covers the
verdict too: both accept, or both answer the same status.

Inputs:

- valid requests and responses from hypothesis: methods, origin/absolute/asterisk targets,
  header names and values (including obs-text and OWS), Content-Length, chunked bodies with
  extensions and trailers, pipelined messages, Upgrade and Expect, HEAD/1xx/204/304 responses;
- hostile variants: byte-level mutations of those messages (insert CR, LF, NUL, SP, HTAB,
  comma, colon, DEL, obs-text; delete, duplicate or swap bytes; change case);
- :data:`SMUGGLING_CORPUS`: hand-written request-smuggling shapes (CL.TE, TE.CL, TE.TE
  obfuscations, double CL, negative and huge CL, LF-only lines, ...), each with the status we
  require, not just agreement.
"""

from __future__ import annotations

from typing import Final

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from coxswain.http1 import (
    CODEC_NAMES,
    CONNECTION_CLOSED,
    NEED_DATA,
    PAUSED,
    Data,
    Event,
    Limits,
    ProtocolError,
    RequestParser,
    ResponseParser,
    codec_named,
    frame_chunk,
    frame_last_chunk,
)

pytestmark = pytest.mark.property

CODECS: Final = tuple(codec_named(name) for name in CODEC_NAMES)
LIMITS: Final = Limits(max_head_bytes=2048, max_body_bytes=4096)

Normalised = tuple[object, ...]


def _normalise(event: Event) -> object:
    if isinstance(event, ProtocolError):
        return ("error", event.status)
    return event


def _drain(parser: RequestParser | ResponseParser, out: list[object]) -> bool:
    """Append events until NEED_DATA; True when a terminal event ended the stream."""
    while True:
        event = parser.next_event()
        if event is NEED_DATA:
            return False
        if out and isinstance(event, Data) and isinstance(out[-1], Data):
            out[-1] = Data(out[-1].data + event.data)
        else:
            out.append(_normalise(event))
        if event is PAUSED or event is CONNECTION_CLOSED or isinstance(event, ProtocolError):
            return True


def run(pieces: list[bytes], *, methods: list[bytes] | None = None) -> list[Normalised]:
    """Feed ``pieces`` then EOF to a parser per codec; one normalised trace per codec."""
    traces: list[Normalised] = []
    for codec in CODECS:
        parser: RequestParser | ResponseParser
        if methods is None:
            parser = RequestParser(codec, limits=LIMITS)
        else:
            parser = ResponseParser(codec, limits=LIMITS)
            for method in methods:
                parser.expect_response(method)
        out: list[object] = []
        done = False
        for piece in [*pieces, b""]:
            parser.receive_data(piece)
            done = _drain(parser, out)
            if done:
                break
        traces.append(tuple(out))
    return traces


def assert_agree(pieces: list[bytes], *, methods: list[bytes] | None = None) -> Normalised:
    h11_trace, llhttp_trace = run(pieces, methods=methods)
    assert h11_trace == llhttp_trace
    return h11_trace


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


# -- strategies ---------------------------------------------------------------------------------

TCHAR: Final = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
tokens = st.text(TCHAR, min_size=1, max_size=12).map(str.encode)
values = st.binary(max_size=24).map(
    lambda b: bytes(c for c in b if c == 9 or 32 <= c <= 126 or c >= 128)
)
path_chars = st.text("abc/%?=&~-_.:@!$'()*+,;0123456789", max_size=16).map(str.encode)
targets = st.one_of(
    path_chars.map(lambda p: b"/" + p),
    path_chars.map(lambda p: b"http://x.test/" + p),
    st.just(b"*"),
)
methods = st.sampled_from([b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"PATCH"])
extra_headers = st.lists(
    st.tuples(
        st.one_of(tokens, st.sampled_from([b"Connection", b"Expect", b"Upgrade", b"X-Forwarded"])),
        st.one_of(values, st.sampled_from([b"close", b"keep-alive", b"100-continue", b"upgrade"])),
    ),
    max_size=4,
).map(lambda hs: [(n, v) for n, v in hs if n.lower() not in FRAMING_NAMES])
FRAMING_NAMES: Final = {b"content-length", b"transfer-encoding", b"host"}
chunk_exts = st.lists(
    st.tuples(tokens, st.one_of(st.just(b""), tokens.map(lambda t: b"=" + t))), max_size=2
).map(lambda es: b"".join(b";" + n + v for n, v in es))


@st.composite
def bodies(draw: st.DrawFn) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """(framing headers, encoded body) for a sized, chunked or absent body."""
    kind = draw(st.sampled_from(["none", "sized", "chunked"]))
    payload = draw(st.binary(max_size=64))
    if kind == "none":
        return [], b""
    if kind == "sized":
        return [(b"Content-Length", b"%d" % len(payload))], payload
    cuts = draw(st.lists(st.integers(0, 64), max_size=4))
    encoded = b"".join(
        frame_chunk(piece)[:-2].replace(b"\r\n", draw(chunk_exts) + b"\r\n", 1) + b"\r\n"
        for piece in split(payload, cuts)
        if piece
    )
    trailers = draw(st.lists(st.tuples(tokens, values), max_size=2))
    return [(b"Transfer-Encoding", b"chunked")], encoded + frame_last_chunk(tuple(trailers))


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    method = draw(methods)
    target = draw(targets)
    if target == b"*":
        method = b"OPTIONS"
    version = draw(st.sampled_from([b"1.1", b"1.1", b"1.0"]))
    framing, body = draw(bodies())
    if framing[:1] == [(b"Transfer-Encoding", b"chunked")]:
        version = b"1.1"  # chunked in HTTP/1.0 is refused (RFC 9112 §6.1)
    headers = [(b"Host", b"x.test"), *draw(extra_headers), *framing]
    headers = draw(st.permutations(headers))
    lines = b"".join(
        b"%s:%s%s\r\n" % (n, draw(st.sampled_from([b"", b" ", b"\t"])), v) for n, v in headers
    )
    return b"%s %s HTTP/%s\r\n%s\r\n%s" % (method, target, version, lines, body)


@st.composite
def responses(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """(response bytes, the method of the request it answers; None for a 1xx)."""
    status = draw(st.sampled_from([100, 103, 200, 201, 204, 206, 301, 304, 404, 500, 503]))
    method = draw(st.sampled_from([b"GET", b"HEAD", b"POST"]))
    version = draw(st.sampled_from([b"1", b"1", b"0"]))
    framing, body = draw(bodies())
    if status < 200 or status in (204, 304) or method == b"HEAD":
        framing, body = [], b""
    elif not framing:
        framing = [(b"Content-Length", b"0")]
    elif framing[0][0] == b"Transfer-Encoding":
        version = b"1"
    headers = draw(st.permutations([*draw(extra_headers), *framing]))
    reason = draw(st.sampled_from([b" OK", b" ", b"", b" Some Reason"]))
    lines = b"".join(b"%s: %s\r\n" % (n, v) for n, v in headers)
    head = b"HTTP/1.%s %d%s\r\n%s\r\n" % (version, status, reason, lines)
    return head + body, (None if status < 200 else method)


INTERESTING: Final = [
    b"\r",
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"\x00",
    b",",
    b":",
    b"\x7f",
    b"\x80",
    b"0",
    b"-",
    b";",
    b"chunked",
    b"\r\n\r\n",
]


@st.composite
def mutated(draw: st.DrawFn, messages: st.SearchStrategy[bytes]) -> bytes:
    data = draw(messages)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "swapcase"]))
        if op == "insert":
            data = data[:at] + draw(st.sampled_from(INTERESTING)) + data[at:]
        elif op == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 3)) :]
        elif op == "replace":
            data = data[:at] + draw(st.sampled_from(INTERESTING)) + data[at + 1 :]
        elif op == "duplicate":
            end = data.find(b"\r\n", at)
            data = data[:end] + data[at:end] + data[end:] if end >= 0 else data
        else:
            data = data[:at] + data[at : at + 8].swapcase() + data[at + 8 :]
    return data


cut_lists = st.lists(st.integers(0, 600), max_size=6)


# -- properties ---------------------------------------------------------------------------------


@given(st.lists(requests(), min_size=1, max_size=3), cut_lists)
def test_codecs_agree_when_requests_are_valid(messages: list[bytes], cuts: list[int]) -> None:
    trace = assert_agree(split(b"".join(messages), cuts))
    assert not any(isinstance(e, tuple) and e[:1] == ("error",) for e in trace), trace


@given(st.lists(responses(), min_size=1, max_size=3), cut_lists)
def test_codecs_agree_when_responses_are_valid(
    messages: list[tuple[bytes, bytes | None]], cuts: list[int]
) -> None:
    data = b"".join(m for m, _ in messages)
    pending = [m for _, m in messages if m is not None] + [b"GET"]  # one still outstanding
    trace = assert_agree(split(data, cuts), methods=pending)
    assert not any(isinstance(e, tuple) and e[:1] == ("error",) for e in trace), trace


@given(mutated(requests()), cut_lists)
@example(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nabcde", [])
@example(b"GET /\x80 HTTP/1.1\r\nHost: x\r\n\r\n", [])
def test_codecs_agree_when_requests_are_mutated(data: bytes, cuts: list[int]) -> None:
    assert_agree(split(data, cuts))


@given(mutated(responses().map(lambda r: r[0])), cut_lists)
def test_codecs_agree_when_responses_are_mutated(data: bytes, cuts: list[int]) -> None:
    assert_agree(split(data, cuts), methods=[b"GET", b"GET", b"GET"])


P: Final = b"POST / HTTP/1.1\r\nHost: x\r\n"
SMUGGLING_CORPUS: Final[list[tuple[str, bytes, int]]] = [
    ("cl-te", P + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", 400),
    (
        "te-cl",
        P + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n",
        400,
    ),
    ("te-xchunked", P + b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 400),
    ("te-space-before-colon", P + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),
    ("te-chunked-identity", P + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 400),
    ("te-identity-chunked", P + b"Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", 400),
    ("te-twice", P + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n", 400),
    ("te-obs-fold", P + b"Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", 400),
    ("te-vertical-tab", P + b"Transfer-Encoding:\x0bchunked\r\n\r\n0\r\n\r\n", 400),
    ("te-quoted", P + b'Transfer-Encoding: "chunked"\r\n\r\n0\r\n\r\n', 400),
    ("te-nul", P + b"Transfer-Encoding: chunked\x00\r\n\r\n0\r\n\r\n", 400),
    ("te-lf-only-header", P + b"Transfer-Encoding: chunked\n\r\n0\r\n\r\n", 400),
    ("te-in-http10", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("te-name-underscore", P + b"Transfer_Encoding: chunked\r\nContent-Length: 1\r\n\r\nx", None),
    ("cl-double-differ", P + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
    ("cl-double-same", P + b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("cl-list", P + b"Content-Length: 3,4\r\n\r\nabcd", 400),
    ("cl-negative", P + b"Content-Length: -1\r\n\r\n", 400),
    ("cl-plus", P + b"Content-Length: +1\r\n\r\nx", 400),
    ("cl-huge", P + b"Content-Length: 99999999999999999999999\r\n\r\n", 400),
    ("cl-over-limit", P + b"Content-Length: 4097\r\n\r\n", 413),
    ("cl-space-inside", P + b"Content-Length: 1 2\r\n\r\n", 400),
    ("cl-space-before-colon", P + b"Content-Length : 1\r\n\r\nx", 400),
    ("lf-only", b"GET / HTTP/1.1\nHost: x\n\n", 400),
    ("cr-only", b"GET / HTTP/1.1\rHost: x\r\r", 400),
    ("lf-only-end", b"GET / HTTP/1.1\r\nHost: x\r\n\n", 400),
    ("bare-cr-in-value", P + b"X: a\rContent-Length: 1\r\n\r\n", 400),
    (
        "chunk-size-overflow",
        P + b"Transfer-Encoding: chunked\r\n\r\n10000000000000001\r\nx\r\n",
        400,
    ),
    ("chunk-size-hex-prefix", P + b"Transfer-Encoding: chunked\r\n\r\n0x1\r\nx\r\n0\r\n\r\n", 400),
    ("chunk-size-negative", P + b"Transfer-Encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n", 400),
    ("chunk-ext-bare-cr", P + b"Transfer-Encoding: chunked\r\n\r\n1;a\rb\r\nx\r\n0\r\n\r\n", 400),
    ("chunk-ext-lf", P + b"Transfer-Encoding: chunked\r\n\r\n1;a\nb\r\nx\r\n0\r\n\r\n", 400),
    ("chunk-missing-crlf", P + b"Transfer-Encoding: chunked\r\n\r\n1\r\nxx\r\n0\r\n\r\n", 400),
    ("chunk-lf-only", P + b"Transfer-Encoding: chunked\r\n\r\n1\nx\n0\n\n", 400),
    ("chunk-size-space", P + b"Transfer-Encoding: chunked\r\n\r\n1 \r\nx\r\n0\r\n\r\n", 400),
    ("last-chunk-no-crlf", P + b"Transfer-Encoding: chunked\r\n\r\n0\r\n", 400),
    ("host-missing", b"GET / HTTP/1.1\r\n\r\n", 400),
    ("host-twice", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("host-space-name", b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
    ("method-lowercase-unknown", b"get / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
    ("method-invalid-token", b"GE(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("connect", b"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", 501),
    ("target-authority-form", b"GET x:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("target-asterisk-get", b"GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("version-09-style", b"GET /\r\n\r\n", 400),
    ("double-space", b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("nul-in-target", b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("header-del", P + b"X: \x7f\r\n\r\n", 400),
    ("pipelined-smuggle", P + b"Content-Length: 0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n", 400),
]


@pytest.mark.parametrize(
    ("data", "status"),
    [(d, s) for _, d, s in SMUGGLING_CORPUS],
    ids=[n for n, _, _ in SMUGGLING_CORPUS],
)
def test_codecs_agree_on_status_when_smuggling_corpus(data: bytes, status: int | None) -> None:
    trace = assert_agree([data])
    verdict = trace[-1][1] if isinstance(trace[-1], tuple) else None
    assert verdict == status, trace


@given(st.sampled_from(SMUGGLING_CORPUS), cut_lists)
def test_codecs_agree_when_smuggling_corpus_is_split(
    case: tuple[str, bytes, int | None], cuts: list[int]
) -> None:
    assert_agree(split(case[1], cuts))
