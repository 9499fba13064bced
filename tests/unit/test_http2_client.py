"""The client side of an HTTP/2 connection (coxswain/http2/client.py): exchanges with the ``h2``
library as the backend, and malformed frames from a backend answered with the error RFC 9113
names, affecting only the stream or the connection they concern."""

from __future__ import annotations

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest

from coxswain.http2 import frames
from coxswain.http2.client import ClientConnection, ResponseReceived
from coxswain.http2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    GoAwayReceived,
    PingAcked,
    SettingsReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from coxswain.http2.hpack import encode

REQUEST = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/"), (b":authority", b"a")]
SETTINGS = frames.settings([])


def client(**kwargs: int) -> ClientConnection:
    values = {"initial_window": 65536, "connection_window": 1 << 20, "max_header_list_size": 8192}
    values.update(kwargs)
    connection = ClientConnection(**values)
    connection.initiate()
    return connection


def backend() -> h2.connection.H2Connection:
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=False, header_encoding=None)
    )
    conn.initiate_connection()
    return conn


def exchange(proxy: ClientConnection, peer: h2.connection.H2Connection) -> list[h2.events.Event]:
    """What the proxy made, to the peer; the peer's events."""
    return peer.receive_data(proxy.data_to_send())


def answer(proxy: ClientConnection, peer: h2.connection.H2Connection) -> list[Event]:
    """What the peer made, to the proxy; the proxy's events."""
    return proxy.receive_data(peer.data_to_send())


def raw(*frames_: bytes, **kwargs: int) -> tuple[ClientConnection, int, list[Event]]:
    """A client with one open stream (a request without a body), fed an empty SETTINGS then
    ``frames_``."""
    proxy = client(**kwargs)
    stream_id = proxy.send_request(REQUEST, end_stream=True)
    proxy.data_to_send()
    events = proxy.receive_data(SETTINGS + b"".join(frames_))
    return proxy, stream_id, events


def head(stream_id: int, fields: list[tuple[bytes, bytes]], flags: int = 0) -> bytes:
    return frames.frame(frames.HEADERS, flags | frames.END_HEADERS, stream_id, encode(fields))


def kinds(events: list[Event]) -> list[str]:
    return [type(event).__name__ for event in events]


def sent(proxy: ClientConnection) -> list[tuple[int, int, int, bytes]]:
    """The frames the proxy made: type, flags, stream, payload."""
    data = proxy.data_to_send()
    if data.startswith(frames.PREFACE):
        data = data[len(frames.PREFACE) :]
    out = []
    while data:
        length = int.from_bytes(data[:3], "big")
        out.append((data[3], data[4], frames.u31(data, 5), data[9 : 9 + length]))
        data = data[9 + length :]
    return out


def test_a_call_with_body_and_trailers_both_ways() -> None:
    proxy, peer = client(), backend()
    stream_id = proxy.send_request(REQUEST, end_stream=False)
    proxy.send_data(stream_id, b"hello")
    proxy.send_headers(stream_id, [(b"x-end", b"1")], end_stream=True)
    got = exchange(proxy, peer)
    assert [type(e).__name__ for e in got] == [
        "RemoteSettingsChanged",
        "WindowUpdated",
        "RequestReceived",
        "DataReceived",
        "TrailersReceived",
        "StreamEnded",
    ]
    assert isinstance(got[2], h2.events.RequestReceived)
    assert list(got[2].headers) == REQUEST
    peer.send_headers(stream_id, [(b":status", b"200"), (b"content-type", b"application/grpc")])
    peer.send_data(stream_id, b"world")
    peer.send_headers(stream_id, [(b"grpc-status", b"0")], end_stream=True)
    events = answer(proxy, peer)
    assert kinds(events) == [
        "SettingsReceived",
        "ResponseReceived",
        "DataReceived",
        "TrailersReceived",
    ]
    response = events[1]
    assert isinstance(response, ResponseReceived)
    assert response.headers[0] == (b":status", b"200")
    assert not response.ended
    data = events[2]
    assert isinstance(data, DataReceived)
    assert data.data == b"world"
    trailers = events[3]
    assert isinstance(trailers, TrailersReceived)
    assert trailers.headers == [(b"grpc-status", b"0")]
    assert proxy.open_streams == 0


def test_the_preface_says_no_push_no_streams_and_the_windows() -> None:
    proxy = client(initial_window=70000, connection_window=1 << 20)
    assert proxy.data_to_send().startswith(frames.PREFACE)
    peer = backend()
    proxy2 = client(initial_window=70000, connection_window=1 << 20)
    events = exchange(proxy2, peer)
    changed = events[0]
    assert isinstance(changed, h2.events.RemoteSettingsChanged)
    values = {code: setting.new_value for code, setting in changed.changed_settings.items()}
    assert values[h2.settings.SettingCodes.ENABLE_PUSH] == 0
    assert values[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] == 0
    assert values[h2.settings.SettingCodes.INITIAL_WINDOW_SIZE] == 70000
    assert peer.outbound_flow_control_window == 1 << 20


def test_a_trailers_only_answer_ends_the_stream_with_its_head() -> None:
    proxy, stream_id, events = raw(head(1, [(b":status", b"200"), (b"grpc-status", b"14")], 1))
    assert stream_id == 1
    assert kinds(events) == ["SettingsReceived", "ResponseReceived"]
    response = events[1]
    assert isinstance(response, ResponseReceived)
    assert response.ended
    assert proxy.open_streams == 0


def test_interim_heads_are_dropped() -> None:
    _, _, events = raw(head(1, [(b":status", b"103")]), head(1, [(b":status", b"204")], 1))
    assert kinds(events) == ["SettingsReceived", "ResponseReceived"]
    response = events[1]
    assert isinstance(response, ResponseReceived)
    assert response.headers == [(b":status", b"204")]


def test_streams_are_odd_and_rise_and_the_backends_limit_holds() -> None:
    proxy = client()
    proxy.receive_data(frames.settings([(frames.SETTINGS_MAX_CONCURRENT_STREAMS, 2)]))
    assert proxy.peer_max_concurrent_streams == 2
    assert proxy.send_request(REQUEST, end_stream=True) == 1
    assert proxy.send_request(REQUEST, end_stream=True) == 3
    assert proxy.send_request(REQUEST, end_stream=True) == 0
    proxy.reset_stream(1, frames.CANCEL)
    assert proxy.send_request(REQUEST, end_stream=True) == 5


def test_a_late_answer_on_a_reset_stream_is_decoded_and_dropped() -> None:
    proxy = client()
    proxy.receive_data(SETTINGS)
    first = proxy.send_request(REQUEST, end_stream=True)
    second = proxy.send_request(REQUEST, end_stream=True)
    proxy.reset_stream(first, frames.CANCEL)
    indexed = frames.frame(  # a literal with incremental indexing: enters the dynamic table
        frames.HEADERS,
        frames.END_HEADERS,
        first,
        b"\x40\x01x\x01y" + encode([(b":status", b"200")]),
    )
    reuse = frames.frame(  # the dynamic table's first entry, x: y
        frames.HEADERS, frames.END_HEADERS | frames.END_STREAM, second, b"\x88\xbe"
    )
    events = proxy.receive_data(indexed + reuse)
    assert kinds(events) == ["ResponseReceived"]
    response = events[0]
    assert isinstance(response, ResponseReceived)
    assert response.headers == [(b":status", b"200"), (b"x", b"y")]


def test_goaway_forgets_the_streams_above_its_last_and_refuses_new_ones() -> None:
    proxy = client()
    proxy.receive_data(SETTINGS)
    first = proxy.send_request(REQUEST, end_stream=True)
    second = proxy.send_request(REQUEST, end_stream=True)
    events = proxy.receive_data(frames.goaway(first, frames.NO_ERROR))
    assert kinds(events) == ["GoAwayReceived"]
    goaway = events[0]
    assert isinstance(goaway, GoAwayReceived)
    assert goaway.last_stream_id == first
    assert proxy.is_open(first)
    assert not proxy.is_open(second)
    assert proxy.send_request(REQUEST, end_stream=True) == 0
    events = proxy.receive_data(head(first, [(b":status", b"200")], frames.END_STREAM))
    assert kinds(events) == ["ResponseReceived"]


def test_flow_control_both_ways() -> None:
    proxy, peer = client(initial_window=16, connection_window=65535), backend()
    stream_id = proxy.send_request(REQUEST, end_stream=False)
    exchange(proxy, peer)
    peer.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 10})
    answer(proxy, peer)
    assert proxy.local_flow_control_window(stream_id) == 10
    proxy.send_data(stream_id, b"0123456789")
    assert proxy.local_flow_control_window(stream_id) == 0
    exchange(proxy, peer)
    peer.increment_flow_control_window(5, stream_id)
    events = answer(proxy, peer)
    assert kinds(events) == ["WindowUpdated"]
    assert proxy.local_flow_control_window(stream_id) == 5
    peer.send_headers(stream_id, [(b":status", b"200")])
    peer.send_data(stream_id, b"x" * 16)
    events = answer(proxy, peer)
    assert kinds(events) == ["ResponseReceived", "DataReceived"]
    assert not sent(proxy)  # nothing read yet: no window given back
    proxy.acknowledge_received_data(16, stream_id)
    updates = sent(proxy)
    assert (frames.WINDOW_UPDATE, 0, stream_id, (16).to_bytes(4, "big")) in updates


def test_data_beyond_the_streams_window_ends_the_connection() -> None:
    data = frames.frame(frames.DATA, 0, 1, b"x" * 17)
    proxy, _, events = raw(head(1, [(b":status", b"200")]), data, initial_window=16)
    assert kinds(events)[-1] == "ConnectionTerminated"
    assert sent(proxy)[-1][0] == frames.GOAWAY


def test_ping_and_settings_are_answered() -> None:
    proxy, _, events = raw(frames.ping(b"12345678", ack=False), frames.ping(b"abcdefgh", ack=True))
    assert kinds(events) == ["SettingsReceived", "PingReceived", "PingAcked"]
    acked = events[2]
    assert isinstance(acked, PingAcked)
    assert acked.opaque == b"abcdefgh"
    answers = sent(proxy)
    assert (frames.SETTINGS, frames.ACK, 0, b"") in answers
    assert (frames.PING, frames.ACK, 0, b"12345678") in answers


def test_a_backend_reset_fails_its_stream_alone() -> None:
    proxy, stream_id, events = raw(frames.rst_stream(1, frames.REFUSED_STREAM))
    reset = events[-1]
    assert isinstance(reset, StreamReset)
    assert (reset.stream_id, reset.error_code, reset.remote) == (1, frames.REFUSED_STREAM, True)
    assert not proxy.terminated
    assert proxy.send_request(REQUEST, end_stream=True) == stream_id + 2


def test_a_body_after_trailers_or_before_the_head_resets_the_stream() -> None:
    proxy, _, events = raw(frames.frame(frames.DATA, 0, 1, b"early"))
    assert kinds(events) == ["SettingsReceived", "StreamReset"]
    assert not proxy.terminated
    body = frames.frame(frames.DATA, 0, 1, b"body")
    more = head(1, [(b"x", b"y")])  # a second block that does not end the stream
    proxy, _, events = raw(head(1, [(b":status", b"200")]), body, more)
    assert kinds(events) == ["SettingsReceived", "ResponseReceived", "DataReceived", "StreamReset"]
    reset = events[-1]
    assert isinstance(reset, StreamReset)
    assert reset.error_code == frames.PROTOCOL_ERROR


def test_the_end_of_a_response_is_told_once() -> None:
    ended = frames.frame(frames.DATA, frames.END_STREAM, 1, b"")
    proxy, _, events = raw(head(1, [(b":status", b"200")]), ended)
    assert kinds(events) == ["SettingsReceived", "ResponseReceived", "StreamEnded"]
    ending = events[-1]
    assert isinstance(ending, StreamEnded)
    assert proxy.open_streams == 0


def test_settings_open_every_streams_window() -> None:
    proxy = client()
    stream_id = proxy.send_request(REQUEST, end_stream=False)
    proxy.receive_data(SETTINGS)
    events = proxy.receive_data(frames.settings([(frames.SETTINGS_INITIAL_WINDOW_SIZE, 70000)]))
    assert kinds(events) == ["SettingsReceived"]
    assert isinstance(events[0], SettingsReceived)
    assert proxy.local_flow_control_window(stream_id) == 65535  # the connection's still
    proxy.receive_data(frames.window_update(0, 10000))
    assert proxy.local_flow_control_window(stream_id) == 70000
    events = proxy.receive_data(frames.window_update(0, 1))
    assert isinstance(events[0], WindowUpdated)


HEADER = frames.frame(frames.HEADERS, 0, 1, b"")
CONTINUED = frames.frame(frames.CONTINUATION, 0, 1, b"")


@pytest.mark.parametrize(
    ("frames_", "code"),
    [
        pytest.param((frames.frame(frames.DATA, 0, 3, b"x"),), frames.PROTOCOL_ERROR, id="idle"),
        pytest.param((head(2, [(b":status", b"200")]),), frames.PROTOCOL_ERROR, id="even"),
        pytest.param((frames.frame(frames.PUSH_PROMISE, 4, 1, b"\0\0\0\2"),), 1, id="push"),
        pytest.param((HEADER, frames.ping(b"12345678", ack=False)), 1, id="interrupted"),
        pytest.param((HEADER, *[CONTINUED] * 65), frames.PROTOCOL_ERROR, id="continuations"),
        pytest.param((b"\0\x40\x01" + bytes(6),), frames.FRAME_SIZE_ERROR, id="oversized"),
        pytest.param((frames.frame(frames.HEADERS, 4, 1, b"\xff"),), 9, id="hpack"),
        pytest.param((frames.window_update(0, frames.MAX_WINDOW),), 3, id="window"),
        pytest.param((frames.frame(frames.GOAWAY, 0, 1, bytes(8)),), 1, id="goaway-stream"),
        pytest.param((frames.settings([(frames.SETTINGS_MAX_FRAME_SIZE, 5)]),), 1, id="frame"),
    ],
)
def test_a_broken_rule_of_the_connection_ends_it(frames_: tuple[bytes, ...], code: int) -> None:
    proxy, _, events = raw(*frames_)
    terminated = events[-1]
    assert isinstance(terminated, ConnectionTerminated)
    assert terminated.error_code == code
    assert proxy.terminated
    assert sent(proxy)[-1] == (frames.GOAWAY, 0, 0, bytes(4) + code.to_bytes(4, "big"))
    assert proxy.receive_data(frames.ping(b"12345678", ack=False)) == []
    assert proxy.send_request(REQUEST, end_stream=True) == 0


def test_the_first_frame_must_be_settings() -> None:
    proxy = client()
    events = proxy.receive_data(frames.ping(b"12345678", ack=False))
    assert kinds(events) == ["ConnectionTerminated"]


def test_an_hpack_bomb_stops_at_the_header_list_bound() -> None:
    big = [(b"x-big", b"v" * 200)] * 50
    _, _, events = raw(head(1, [(b":status", b"200"), *big]), max_header_list_size=4096)
    terminated = events[-1]
    assert isinstance(terminated, ConnectionTerminated)
    assert terminated.error_code == frames.ENHANCE_YOUR_CALM


def test_frames_split_anywhere_decode_alike() -> None:
    stream = (
        SETTINGS
        + head(1, [(b":status", b"200")])
        + frames.frame(frames.DATA, frames.END_STREAM, 1, b"body")
    )
    whole = client()
    whole.send_request(REQUEST, end_stream=True)
    expected = kinds(whole.receive_data(stream))
    for cut in range(1, len(stream)):
        proxy = client()
        proxy.send_request(REQUEST, end_stream=True)
        events = proxy.receive_data(stream[:cut]) + proxy.receive_data(stream[cut:])
        assert kinds(events) == expected
