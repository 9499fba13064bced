"""Server side of the HTTP/1.1 codec: requests in, events out, over both implementations.

Every test is parametrized over ``h11`` and ``llhttp`` (the ``codec`` fixture), so each
behaviour is pinned for both; the differential property test checks agreement at large.
"""

from __future__ import annotations

import pytest

from coxswain.http1 import (
    CODEC_NAMES,
    CONNECTION_CLOSED,
    NEED_DATA,
    PAUSED,
    Data,
    EndOfMessage,
    Event,
    HeadCodec,
    Limits,
    ProtocolError,
    RequestHead,
    RequestParser,
    codec_named,
)


@pytest.fixture(params=CODEC_NAMES)
def codec(request: pytest.FixtureRequest) -> HeadCodec:
    return codec_named(request.param)


def drain(parser: RequestParser) -> list[Event]:
    """Events until NEED_DATA or a terminal event, adjacent Data merged."""
    out: list[Event] = []
    while True:
        event = parser.next_event()
        if event is NEED_DATA:
            break
        if out and isinstance(event, Data) and isinstance(out[-1], Data):
            out[-1] = Data(out[-1].data + event.data)
        else:
            out.append(event)
        if event is PAUSED or event is CONNECTION_CLOSED or isinstance(event, ProtocolError):
            break
    return out


def parse(codec: HeadCodec, data: bytes, *, eof: bool = False, **limits: int) -> list[Event]:
    parser = RequestParser(codec, limits=Limits(**limits))
    parser.receive_data(data)
    if eof:
        parser.receive_data(b"")
    return drain(parser)


def request_head(
    method: bytes = b"GET",
    target: bytes = b"/",
    *headers: tuple[bytes, bytes],
    connection: tuple[bytes, ...] = (),
    content_length: int | None = None,
    chunked: bool = False,
    expect_continue: bool = False,
    upgrade: bytes | None = None,
) -> RequestHead:
    """The head expected of a keep-alive HTTP/1.1 request with ``Host: x`` and ``headers``
    after it; the keywords are what those headers imply."""
    return RequestHead(
        method=method,
        target=target,
        http_version=b"1.1",
        headers=((b"host", b"x"), *headers),
        host=b"x",
        connection=connection,
        keep_alive=True,
        content_length=content_length,
        chunked=chunked,
        expect_continue=expect_continue,
        upgrade=upgrade,
    )


def verdict(codec: HeadCodec, data: bytes, **limits: int) -> int | None:
    """The error status, or None when every message parses."""
    last = parse(codec, data, eof=True, **limits)[-1]
    return last.status if isinstance(last, ProtocolError) else None


def test_head_fields_when_request_is_simple(codec: HeadCodec) -> None:
    [head, end] = parse(codec, b"GET /a?b=c HTTP/1.1\r\nHost: x.test\r\nX-Y:  v w \t\r\n\r\n")
    assert head == RequestHead(
        method=b"GET",
        target=b"/a?b=c",
        http_version=b"1.1",
        headers=((b"host", b"x.test"), (b"x-y", b"v w")),
        host=b"x.test",
        connection=(),
        keep_alive=True,
        content_length=None,
        chunked=False,
        expect_continue=False,
        upgrade=None,
    )
    assert end == EndOfMessage()


def test_need_data_when_head_is_split_at_every_byte(codec: HeadCodec) -> None:
    data = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"
    parser = RequestParser(codec)
    events: list[Event] = []
    for i in range(len(data)):
        parser.receive_data(data[i : i + 1])
        events.extend(drain(parser))
    assert events[0] == request_head(b"POST", b"/", (b"content-length", b"4"), content_length=4)
    assert b"".join(e.data for e in events if isinstance(e, Data)) == b"body"
    assert events[-1] == EndOfMessage()


def test_body_streams_in_pieces_when_content_length(codec: HeadCodec) -> None:
    parser = RequestParser(codec)
    parser.receive_data(b"PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
    assert parser.next_event() == request_head(
        b"PUT", b"/f", (b"content-length", b"10"), content_length=10
    )
    assert parser.next_event() == Data(b"12345")
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"67890GET")
    assert parser.next_event() == Data(b"67890")
    assert parser.next_event() == EndOfMessage()
    assert parser.next_event() is NEED_DATA


def test_chunked_body_and_trailers_when_chunked(codec: HeadCodec) -> None:
    data = (
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"
        b'5;name=value;q="a \\"b\\""\r\nhello\r\nA\r\n0123456789\r\n0\r\nDigest: abc \r\n\r\n'
    )
    [head, body, end] = parse(codec, data)
    # the coding is case-insensitive (RFC 9112 §7): its value is handed on lower-cased
    assert head == request_head(b"POST", b"/", (b"transfer-encoding", b"chunked"), chunked=True)
    assert body == Data(b"hello0123456789")
    assert end == EndOfMessage(((b"digest", b"abc"),))


def test_pipelined_requests_when_keep_alive(codec: HeadCodec) -> None:
    one = b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
    two = b"POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok"
    events = parse(codec, one + two + one, eof=True)
    assert [e for e in events if isinstance(e, RequestHead)] == [
        request_head(b"GET", b"/1"),
        request_head(b"POST", b"/2", (b"content-length", b"2"), content_length=2),
        request_head(b"GET", b"/1"),
    ]
    assert events[-1] is CONNECTION_CLOSED


def test_leading_empty_lines_ignored_when_between_requests(codec: HeadCodec) -> None:
    events = parse(codec, b"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert events == [request_head(), EndOfMessage()]


def test_empty_lines_count_against_the_head_limit_even_when_they_come_in_pieces(
    codec: HeadCodec,
) -> None:
    """An endless stream of CRLFs must end: it is skipped, but counted like head bytes."""
    parser = RequestParser(codec, limits=Limits(max_head_bytes=1024))
    for _ in range(5):  # 5 × 200 bytes of empty lines: fine, under the 1 KiB limit
        parser.receive_data(b"\r\n" * 100)
        assert parser.next_event() is NEED_DATA
    parser.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert parser.next_event() == request_head()
    flood = RequestParser(codec, limits=Limits(max_head_bytes=1024))
    events: list[Event] = []
    for _ in range(6):  # 1,200 bytes of them before any start line
        flood.receive_data(b"\r\n" * 100)
        events.append(flood.next_event())
    assert events == [NEED_DATA] * 5 + [
        ProtocolError(400, "empty lines before the start line over the head limit")
    ]


@pytest.mark.parametrize(
    ("request_bytes", "keep_alive"),
    [
        (b"GET / HTTP/1.0\r\n\r\n", False),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", True),
        (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", False),
        (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, Close\r\n\r\n", False),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", True),
    ],
)
def test_keep_alive_when_version_and_connection_vary(
    codec: HeadCodec, request_bytes: bytes, keep_alive: bool
) -> None:
    events = parse(codec, request_bytes + b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
    head = events[0]
    assert isinstance(head, RequestHead)
    assert (head.method, head.target, head.keep_alive) == (b"GET", b"/", keep_alive)
    if keep_alive:
        assert events[2] == request_head(b"GET", b"/next")
    else:
        assert events[2] is CONNECTION_CLOSED


def test_expect_continue_visible_when_client_waits(codec: HeadCodec) -> None:
    data = b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n"
    parser = RequestParser(codec)
    parser.receive_data(data)
    assert parser.next_event() == request_head(
        b"POST",
        b"/",
        (b"expect", b"100-Continue"),
        (b"content-length", b"3"),
        content_length=3,
        expect_continue=True,
    )
    assert parser.next_event() is NEED_DATA  # the body waits for the proxy's 100


def test_paused_and_raw_bytes_handed_back_when_upgrade(codec: HeadCodec) -> None:
    data = (
        b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
        b"\x81\x05hello"
    )
    parser = RequestParser(codec)
    parser.receive_data(data)
    head, end, paused = drain(parser)
    assert head == request_head(
        b"GET",
        b"/ws",
        (b"connection", b"Upgrade"),
        (b"upgrade", b"websocket"),
        connection=(b"upgrade",),
        upgrade=b"websocket",
    )
    assert end == EndOfMessage()
    assert paused is PAUSED
    assert parser.detach() == b"\x81\x05hello"
    assert parser.next_event() is CONNECTION_CLOSED


def test_http_continues_when_upgrade_refused(codec: HeadCodec) -> None:
    parser = RequestParser(codec)
    parser.receive_data(
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n"
        b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert drain(parser)[-1] is PAUSED
    parser.resume()
    assert parser.next_event() == request_head(b"GET", b"/next")


def test_no_upgrade_when_connection_lacks_upgrade_token(codec: HeadCodec) -> None:
    [head, _] = parse(codec, b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n")
    assert head == request_head(b"GET", b"/", (b"upgrade", b"websocket"), upgrade=None)


@pytest.mark.parametrize(
    "target",
    [b"/", b"/a/b?c=d&e", b"http://x.test/a", b"HTTPS://x.test:8443", b"/%7E?q=%20"],
)
def test_target_accepted_when_origin_or_absolute_form(codec: HeadCodec, target: bytes) -> None:
    assert verdict(codec, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n") is None


def test_asterisk_form_accepted_when_options(codec: HeadCodec) -> None:
    assert verdict(codec, b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n") is None


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET x.test:80 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET a/b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET /#frag HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET /\x80 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"CONNECT x.test:443 HTTP/1.1\r\nHost: x.test:443\r\n\r\n", 501),
        (b"BREW / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        (b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
    ],
)
def test_error_status_when_request_line_or_host_is_bad(
    codec: HeadCodec, request_bytes: bytes, status: int
) -> None:
    assert verdict(codec, request_bytes) == status


H = b"POST / HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize(
    "request_bytes",
    [
        H + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        H + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
        H + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        H + b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
        H + b"Content-Length: 3, 3\r\n\r\nabc",
        H + b"Content-Length: -1\r\n\r\n",
        H + b"Content-Length: +3\r\n\r\nabc",
        H + b"Content-Length: 0x10\r\n\r\n",
        H + b"Content-Length: 1234567890123456789\r\n\r\n",
        H + b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
        H + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        H + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        H + b"Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n0",
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        H + b"X: a\r\n b\r\n\r\n",
        H + b"X: a\rb\r\n\r\n",
        H + b"X: a\x00b\r\n\r\n",
        H + b"X: a\x7fb\r\n\r\n",
        H + b"X\x01: a\r\n\r\n",
        H + b"X Y: a\r\n\r\n",
        H + b": a\r\n\r\n",
        H + b"NoColon\r\n\r\n",
        b"GET / HTTP/1.1\nHost: x\n\n",
        b"GET / HTTP/1.1\r\nHost: x\n\r\n",
        b"GET / HTTP/1.1\rHost: x\r\n\r\n",
    ],
    # printable ids: pytest finds an id holding a backslash in its first session only, and
    # `make mutate` runs a second one in each forked worker
    ids=lambda b: "".join(
        c if " " <= c <= "~" and c != "\\" else f"%{ord(c):02x}" for c in b[26:60].decode("latin-1")
    ),
)
def test_400_when_head_is_smuggling_shaped(codec: HeadCodec, request_bytes: bytes) -> None:
    assert verdict(codec, request_bytes) == 400


def test_tab_before_value_accepted_when_ows(codec: HeadCodec) -> None:
    events = parse(codec, H + b"Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n")
    assert events[-1] == EndOfMessage()


C = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    "body",
    [
        b"g\r\nx\r\n0\r\n\r\n",
        b"-1\r\nx\r\n0\r\n\r\n",
        b"\r\n0\r\n\r\n",
        b"1 \r\nx\r\n0\r\n\r\n",
        b" 1\r\nx\r\n0\r\n\r\n",
        b"10000000000000000\r\n",
        b"ffffffffffffffffff\r\n",
        b"1;\r\nx\r\n0\r\n\r\n",
        b"1;a b\r\nx\r\n0\r\n\r\n",
        b"1 ;a=b\r\nx\r\n0\r\n\r\n",
        b'1;a="b\r\nx\r\n0\r\n\r\n',
        b"1;a=\x01\r\nx\r\n0\r\n\r\n",
        b"1\nx\r\n0\r\n\r\n",
        b"1\r\nxy0\r\n\r\n",
        b"1\r\nx\n0\r\n\r\n",
        b"1\r\nx\r\n0\r\nT : v\r\n\r\n",
        b"1\r\nx\r\n0\r\nT: v\n\r\n",
        b"1\r\nx\r\n0\r\n\n",
    ],
)
def test_400_when_chunk_framing_is_bad(codec: HeadCodec, body: bytes) -> None:
    assert verdict(codec, C + body) == 400


def test_16_hex_digit_chunk_size_accepted_when_within_64_bits(codec: HeadCodec) -> None:
    parser = RequestParser(codec)
    parser.receive_data(C + b"000000000000000A\r\n0123456789\r\n0\r\n\r\n")
    assert drain(parser)[-1] == EndOfMessage()


def test_400_when_eof_inside_body(codec: HeadCodec) -> None:
    assert verdict(codec, H + b"Content-Length: 5\r\n\r\nabc") == 400
    assert verdict(codec, C + b"5\r\nab") == 400
    assert verdict(codec, b"GET / HTTP/1.1\r\nHost") == 400


def test_431_when_head_over_limit(codec: HeadCodec) -> None:
    big = b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 2000 + b"\r\n\r\n"
    assert verdict(codec, big, max_head_bytes=1024) == 431
    assert verdict(codec, big[:1500], max_head_bytes=1024) == 431  # before the head ends
    assert verdict(codec, big, max_head_bytes=4096) is None


def test_431_when_trailers_over_limit(codec: HeadCodec) -> None:
    data = C + b"0\r\nT: " + b"a" * 600 + b"\r\n\r\n"
    assert verdict(codec, data, max_head_bytes=512) == 431


def test_413_when_declared_or_streamed_body_over_limit(codec: HeadCodec) -> None:
    assert verdict(codec, H + b"Content-Length: 11\r\n\r\n", max_body_bytes=10) == 413
    assert verdict(codec, H + b"Content-Length: 10\r\n\r\n0123456789", max_body_bytes=10) is None
    chunked = C + b"6\r\n012345\r\n6\r\n012345\r\n0\r\n\r\n"
    assert verdict(codec, chunked, max_body_bytes=10) == 413


def test_a_chunked_body_limit_lowered_after_the_head_holds_and_a_lower_limit_stays(
    codec: HeadCodec,
) -> None:
    def limited(connection: int | None, route: int, body: bytes) -> Event:
        parser = RequestParser(codec, limits=Limits(max_body_bytes=connection))
        parser.receive_data(C + body)
        assert isinstance(parser.next_event(), RequestHead)
        parser.limit_body(route)
        return drain(parser)[-1]

    body = b"6\r\n012345\r\n6\r\n012345\r\n0\r\n\r\n"
    assert limited(None, 12, body) == EndOfMessage()
    over = limited(None, 11, body)
    assert isinstance(over, ProtocolError)
    assert over.status == 413
    assert isinstance(limited(8, 100, body), ProtocolError)  # the connection's stays


def test_error_repeats_and_later_bytes_ignored_when_failed(codec: HeadCodec) -> None:
    parser = RequestParser(codec)
    parser.receive_data(b"GET / HTTP/1.1\r\n\r\n")
    error = parser.next_event()
    assert isinstance(error, ProtocolError)
    assert error.status == 400
    assert "Host" in error.reason  # each codec words it its own way
    parser.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert parser.next_event() is error


def test_connection_closed_when_eof_between_messages(codec: HeadCodec) -> None:
    assert parse(codec, b"", eof=True) == [CONNECTION_CLOSED]


def test_runtime_error_when_data_after_eof(codec: HeadCodec) -> None:
    parser = RequestParser(codec)
    parser.receive_data(b"")
    with pytest.raises(RuntimeError):
        parser.receive_data(b"x")


def test_value_error_when_codec_name_unknown() -> None:
    with pytest.raises(ValueError, match="unknown"):
        codec_named("nginx")  # type: ignore[arg-type]


def test_llhttp_is_the_default() -> None:
    assert codec_named().name == "llhttp"
