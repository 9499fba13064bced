"""The server side of an HTTP/2 connection (coxswain/http2/server.py, coxswain/http2/frames.py):
exchanges with the ``h2`` library as the client, and malformed frames answered with the error
RFC 9113 names."""

from __future__ import annotations

import h2.config
import h2.connection
import h2.events
import pytest

from coxswain.http2 import frames
from coxswain.http2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    GoAwayReceived,
    PingAcked,
    PingReceived,
    RequestReceived,
    SettingsReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from coxswain.http2.server import ServerConnection

REQUEST = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "a")]
SETTINGS = frames.settings([])


def server(**kwargs: int) -> ServerConnection:
    values = {
        "max_concurrent_streams": 4,
        "initial_window": 65536,
        "connection_window": 1 << 20,
        "max_header_list_size": 8192,
    }
    values.update(kwargs)
    connection = ServerConnection(**values)
    connection.initiate()
    return connection


def client() -> h2.connection.H2Connection:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    return conn


def exchange(proxy: ServerConnection, peer: h2.connection.H2Connection) -> list[Event]:
    """Both ways once: what the peer made to the proxy, and the proxy's answer back."""
    events = proxy.receive_data(peer.data_to_send())
    peer.receive_data(proxy.data_to_send())
    return events


def raw(*frames_: bytes) -> tuple[ServerConnection, list[Event]]:
    """A server fed the preface, an empty SETTINGS, then ``frames_``."""
    proxy = server()
    events = proxy.receive_data(frames.PREFACE + SETTINGS + b"".join(frames_))
    return proxy, events


def kinds(events: list[Event]) -> list[str]:
    return [type(event).__name__ for event in events]


def test_frames_round_trip_through_the_reference_parser() -> None:
    from hyperframe.frame import Frame

    made = [
        frames.settings([(frames.SETTINGS_INITIAL_WINDOW_SIZE, 5)]),
        frames.ping(b"12345678", ack=True),
        frames.rst_stream(3, frames.CANCEL),
        frames.goaway(7, frames.ENHANCE_YOUR_CALM),
        frames.window_update(1, 1000),
        frames.frame(frames.DATA, frames.END_STREAM, 5, b"body"),
    ]
    parsed = []
    for data in made:
        frame, length = Frame.parse_frame_header(memoryview(data[:9]))
        frame.parse_body(memoryview(data[9 : 9 + length]))
        parsed.append(frame)
    assert parsed[0].settings == {frames.SETTINGS_INITIAL_WINDOW_SIZE: 5}
    assert parsed[1].flags == {"ACK"}
    assert parsed[1].opaque_data == b"12345678"
    assert (parsed[2].stream_id, parsed[2].error_code) == (3, frames.CANCEL)
    assert (parsed[3].last_stream_id, parsed[3].error_code) == (7, frames.ENHANCE_YOUR_CALM)
    assert (parsed[4].stream_id, parsed[4].window_increment) == (1, 1000)
    assert (parsed[5].data, parsed[5].flags) == (b"body", {"END_STREAM"})
    assert frames.settings_fields(made[0][9:]) == [(frames.SETTINGS_INITIAL_WINDOW_SIZE, 5)]
    assert frames.goaway_fields(made[3][9:]) == (7, frames.ENHANCE_YOUR_CALM)
    assert frames.unpadded(b"\x02ab\x00\x00", frames.PADDED) == b"ab"
    assert frames.unpadded(b"\x05ab\x00\x00", frames.PADDED) is None


def test_a_request_with_a_body_and_its_response() -> None:
    proxy, peer = server(), client()
    peer.send_headers(1, REQUEST)
    peer.send_data(1, b"x" * 100)
    peer.send_headers(1, [("x-trailer", "t")], end_stream=True)
    events = exchange(proxy, peer)
    assert kinds(events) == [
        "SettingsReceived",
        "RequestReceived",
        "DataReceived",
        "TrailersReceived",
    ]
    request = events[1]
    assert isinstance(request, RequestReceived)
    assert request.headers == [(name.encode(), value.encode()) for name, value in REQUEST]
    assert not request.ended
    data = events[2]
    assert isinstance(data, DataReceived)
    assert (data.data, data.flow) == (b"x" * 100, 100)
    trailers = events[3]
    assert isinstance(trailers, TrailersReceived)
    assert trailers.headers == [(b"x-trailer", b"t")]
    proxy.send_headers(1, [(b":status", b"200"), (b"server", b"s")])
    proxy.send_data(1, b"y" * 40000)  # more than a frame: split
    proxy.end_stream(1)
    answers = peer.receive_data(proxy.data_to_send())
    assert [type(answer).__name__ for answer in answers] == [
        "ResponseReceived",
        "DataReceived",
        "DataReceived",
        "DataReceived",
        "DataReceived",  # the empty one that ends the stream
        "StreamEnded",
    ]
    assert proxy.open_streams == 0
    proxy.send_data(1, b"late")  # the stream ended: nothing is sent
    assert proxy.data_to_send() == b""


def test_flow_control_both_ways() -> None:
    proxy, peer = server(initial_window=1000, connection_window=65535), client()
    exchange(proxy, peer)  # the settings first, then the stream with its windows
    peer.send_headers(1, REQUEST)
    exchange(proxy, peer)
    assert proxy.local_flow_control_window(1) == 65535
    proxy.send_headers(1, [(b":status", b"200")])
    proxy.send_data(1, b"z" * 65535)
    assert proxy.local_flow_control_window(1) == 0
    peer.receive_data(proxy.data_to_send())
    peer.acknowledge_received_data(65535, 1)
    events = exchange(proxy, peer)
    assert {type(event) for event in events} == {WindowUpdated}
    assert proxy.local_flow_control_window(1) > 0
    # towards the proxy: the window given, then opened by what was read
    peer.send_data(1, b"a" * 1000)
    assert kinds(exchange(proxy, peer)) == ["DataReceived"]
    proxy.acknowledge_received_data(1000, 1)
    updates = peer.receive_data(proxy.data_to_send())
    assert [(update.stream_id, update.delta) for update in updates] == [(1, 1000)]
    # a client that sends beyond the window breaks the connection
    too_much = frames.frame(frames.DATA, 0, 1, b"b" * 1001)
    events = proxy.receive_data(too_much)
    assert isinstance(events[-1], ConnectionTerminated)
    assert events[-1].error_code == frames.FLOW_CONTROL_ERROR
    assert proxy.receive_data(too_much) == []  # nothing more is read


def test_the_client_settings_change_the_windows_and_frames_it_takes() -> None:
    proxy, peer = server(), client()
    peer.send_headers(1, REQUEST)
    exchange(proxy, peer)
    peer.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 10,
                          h2.settings.SettingCodes.MAX_FRAME_SIZE: 20000})  # fmt: skip
    events = exchange(proxy, peer)
    assert kinds(events) == ["SettingsReceived"]
    assert proxy.local_flow_control_window(1) == 10
    assert proxy.max_outbound_frame_size == 20000


def test_a_ping_is_answered_and_ours_acknowledged() -> None:
    proxy, events = raw(frames.ping(b"abcdefgh", ack=False), frames.ping(b"12345678", ack=True))
    assert kinds(events) == ["SettingsReceived", "PingReceived", "PingAcked"]
    acked = events[2]
    assert isinstance(acked, PingAcked)
    assert acked.opaque == b"12345678"
    assert frames.ping(b"abcdefgh", ack=True) in proxy.data_to_send()


def test_it_tells_whether_frames_wait_to_be_sent() -> None:
    proxy, _ = raw()
    assert proxy.has_data_to_send  # its preface, the acknowledgement of the client's SETTINGS
    proxy.data_to_send()
    assert not proxy.has_data_to_send
    proxy.ping(b"abcdefgh")
    assert proxy.has_data_to_send
    proxy.data_to_send()
    proxy.receive_data(frames.window_update(0, 1))  # asks for no answer
    assert not proxy.has_data_to_send


def test_more_streams_than_allowed_are_refused() -> None:
    proxy, peer = server(max_concurrent_streams=2), client()
    for stream_id in (1, 3, 5):
        peer.send_headers(stream_id, REQUEST, end_stream=True)
    proxy.receive_data(peer.data_to_send())
    assert proxy.open_streams == 2
    assert frames.rst_stream(5, frames.REFUSED_STREAM) in proxy.data_to_send()


def test_a_reset_stream_is_told_and_its_late_frames_dropped() -> None:
    proxy, peer = server(), client()
    peer.send_headers(1, REQUEST)
    peer.reset_stream(1)
    events = exchange(proxy, peer)
    reset = events[-1]
    assert isinstance(reset, StreamReset)
    assert reset.remote
    late = frames.frame(frames.DATA, 0, 1, b"late") + frames.window_update(1, 5)
    assert proxy.receive_data(late) == []
    assert proxy.open_streams == 0


def test_trailers_without_end_stream_reset_the_stream() -> None:
    proxy, peer = server(), client()
    peer.send_headers(1, REQUEST)
    proxy.receive_data(peer.data_to_send())
    second = frames.header_frames(1, b"\x82", end_stream=False, max_size=16384)
    events = proxy.receive_data(second)
    assert isinstance(events[0], StreamReset)
    assert not events[0].remote
    assert events[0].error_code == frames.PROTOCOL_ERROR


def test_a_header_block_in_continuation_frames() -> None:
    block = frames.header_frames(1, bytes.fromhex("82868441") + b"\x01a", end_stream=True,
                                 max_size=2)  # fmt: skip
    proxy, events = raw(block)
    assert kinds(events) == ["SettingsReceived", "RequestReceived"]
    assert proxy.open_streams == 1


def test_goaway_names_the_last_stream_and_ignores_later_ones() -> None:
    proxy, peer = server(), client()
    peer.send_headers(1, REQUEST, end_stream=True)
    exchange(proxy, peer)
    proxy.close_connection(frames.NO_ERROR, frames.MAX_WINDOW)
    proxy.close_connection(frames.NO_ERROR)
    answer = proxy.data_to_send()
    assert frames.goaway(frames.MAX_WINDOW, 0) + frames.goaway(1, 0) == answer
    peer.send_headers(3, REQUEST, end_stream=True)
    assert proxy.receive_data(peer.data_to_send()) == []  # above the last one: ignored
    events = proxy.receive_data(frames.goaway(0, frames.NO_ERROR))
    assert isinstance(events[0], GoAwayReceived)


ONE = frames.header_frames(1, b"\x82\x86\x84", end_stream=False, max_size=16384)


@pytest.mark.parametrize(
    ("attack", "code"),
    [
        (frames.frame(frames.PING, 0, 0, b"short"), frames.FRAME_SIZE_ERROR),
        (frames.frame(frames.PING, 0, 1, b"12345678"), frames.PROTOCOL_ERROR),
        (frames.frame(frames.SETTINGS, 0, 0, b"12345"), frames.FRAME_SIZE_ERROR),
        (frames.frame(frames.SETTINGS, frames.ACK, 0, b"123456"), frames.FRAME_SIZE_ERROR),
        (frames.settings([(frames.SETTINGS_ENABLE_PUSH, 2)]), frames.PROTOCOL_ERROR),
        (frames.settings([(frames.SETTINGS_MAX_FRAME_SIZE, 100)]), frames.PROTOCOL_ERROR),
        (frames.settings([(frames.SETTINGS_INITIAL_WINDOW_SIZE, 2**31)]),
         frames.FLOW_CONTROL_ERROR),
        (frames.frame(frames.DATA, 0, 1, b"x"), frames.PROTOCOL_ERROR),  # an idle stream
        (frames.frame(frames.DATA, 0, 0, b"x"), frames.PROTOCOL_ERROR),
        (frames.frame(frames.HEADERS, frames.END_HEADERS, 2, b"\x82"), frames.PROTOCOL_ERROR),
        (frames.frame(frames.HEADERS, frames.END_HEADERS, 1, b"\x80"), frames.COMPRESSION_ERROR),
        (frames.frame(frames.HEADERS, frames.END_HEADERS | frames.PADDED, 1, b"\x05"),
         frames.PROTOCOL_ERROR),
        (frames.frame(frames.HEADERS, 0, 1, b"\x82") + frames.ping(b"12345678", ack=False),
         frames.PROTOCOL_ERROR),  # a header block interrupted
        (frames.frame(frames.HEADERS, 0, 1, b"\x82")
         + frames.frame(frames.CONTINUATION, 0, 1) * 65, frames.PROTOCOL_ERROR),
        (frames.frame(frames.CONTINUATION, frames.END_HEADERS, 1, b"\x82"),
         frames.PROTOCOL_ERROR),
        (frames.frame(frames.PUSH_PROMISE, 0, 1, b"\x00\x00\x00\x02"), frames.PROTOCOL_ERROR),
        (frames.rst_stream(1, 0), frames.PROTOCOL_ERROR),  # an idle stream
        (ONE + frames.frame(frames.RST_STREAM, 0, 1, b"\x00"), frames.FRAME_SIZE_ERROR),
        (frames.window_update(0, 0), frames.PROTOCOL_ERROR),
        (frames.window_update(0, 2**31 - 1), frames.FLOW_CONTROL_ERROR),
        (frames.frame(frames.WINDOW_UPDATE, 0, 0, b"\x00"), frames.FRAME_SIZE_ERROR),
        (frames.frame(frames.GOAWAY, 0, 0, b"\x00"), frames.FRAME_SIZE_ERROR),
        (frames.frame(frames.DATA, 0, 1, b"x" * 16385), frames.FRAME_SIZE_ERROR),
        (frames.frame(frames.PRIORITY, 0, 0, b"12345"), frames.PROTOCOL_ERROR),
    ],
)  # fmt: skip
def test_malformed_frames_are_connection_errors(attack: bytes, code: int) -> None:
    proxy, events = raw(attack)
    last = events[-1]
    assert isinstance(last, ConnectionTerminated), kinds(events)
    assert last.error_code == code
    assert proxy.data_to_send().endswith(frames.goaway(proxy.highest_stream_id, code))


@pytest.mark.parametrize(
    ("attack", "code"),
    [
        (ONE + frames.window_update(1, 0), frames.PROTOCOL_ERROR),
        (ONE + frames.window_update(1, 2**31 - 1), frames.FLOW_CONTROL_ERROR),
        (ONE + frames.frame(frames.PRIORITY, 0, 1, b"1234"), frames.FRAME_SIZE_ERROR),
        (frames.header_frames(1, b"\x82", end_stream=True, max_size=99)
         + frames.frame(frames.DATA, 0, 1, b"x"), frames.STREAM_CLOSED),
    ],
)  # fmt: skip
def test_stream_errors_reset_only_their_stream(attack: bytes, code: int) -> None:
    proxy, events = raw(attack)
    assert not any(isinstance(event, ConnectionTerminated) for event in events)
    assert isinstance(events[-1], StreamReset)
    assert events[-1].error_code == code
    assert proxy.data_to_send().endswith(frames.rst_stream(1, code))


def test_a_bad_preface_or_a_first_frame_other_than_settings() -> None:
    proxy = server()
    assert proxy.receive_data(frames.PREFACE[:10]) == []
    events = proxy.receive_data(b"GET / HTTP/1.1\r\n\r\n")
    assert isinstance(events[0], ConnectionTerminated)
    other = server()
    events = other.receive_data(frames.PREFACE + frames.ping(b"12345678", ack=False))
    assert isinstance(events[0], ConnectionTerminated)
    assert events[0].error_code == frames.PROTOCOL_ERROR


def test_events_carry_their_stream() -> None:
    proxy, peer = server(), client()
    peer.send_headers(1, REQUEST)
    peer.send_data(1, b"", end_stream=True)
    events = exchange(proxy, peer)
    assert isinstance(events[0], SettingsReceived)
    ended = events[-1]
    assert isinstance(ended, StreamEnded)
    assert ended.stream_id == 1
    assert not isinstance(ended, PingReceived)


def test_an_initial_window_repeated_in_one_settings_frame_counts_once() -> None:
    repeated = [(frames.SETTINGS_INITIAL_WINDOW_SIZE, size) for size in range(1, 2001)]
    proxy, events = raw(ONE, frames.settings(repeated))
    assert kinds(events) == ["SettingsReceived", "RequestReceived", "SettingsReceived"]
    assert proxy.local_flow_control_window(1) == 2000
    grown = proxy.receive_data(
        frames.window_update(1, frames.MAX_WINDOW - 2000)
        + frames.settings([(frames.SETTINGS_INITIAL_WINDOW_SIZE, 2001)])
    )
    assert isinstance(grown[-1], ConnectionTerminated)
    assert grown[-1].error_code == frames.FLOW_CONTROL_ERROR
