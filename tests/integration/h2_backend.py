"""A small HTTP/2 backend (prior knowledge) on the ``h2`` library, for what a gRPC server does
not let a test choose: its ``SETTINGS_MAX_CONCURRENT_STREAMS``, a GOAWAY after some streams,
and a record of its connections and of how each ended.

Each request is answered after ``delay`` seconds with ``200`` and the body
``connection <n> stream <id>``; after ``goaway_after`` answers on a connection, the backend
sends GOAWAY naming the last stream it answered, and closes that connection once its streams
are done (RFC 9113 §6.8). With ``goaway_at``, the request that makes that many on a connection
gets a GOAWAY naming the stream before it as the last, while the earlier ones are still being
answered: they finish, that one is never answered (``h2``'s state machine is kept open for it,
as it closes on its own GOAWAY). Its first ``refuse_first`` streams are reset with
``REFUSED_STREAM`` instead (RFC 9113 §8.7). With ``late_answer``, the first request is not
answered until the proxy resets it; then its response HEADERS go out anyway, as when an
answer and a reset cross on the wire (``late_sent`` is set). And its first
``unavailable_first`` answers are ``503`` (a status a route's retry may retry). Each
request's header fields are recorded in ``heads`` as they arrive, and each request it read
whole in ``requests``, with its body.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hyperframe.frame
import trio

__all__ = ["H2Backend"]


@dataclass
class H2Backend:
    """Serve with :meth:`serve` (``nursery.start``: the port); read what happened after."""

    max_streams: int = 100
    initial_window: int = 65535  # each stream's window for the proxy's request body
    goaway_after: int | None = None
    goaway_at: int | None = None
    delay: float = 0.0
    refuse_first: int = 0  # streams reset with REFUSED_STREAM before any is answered
    unavailable_first: int = 0  # answers 503 before the others are 200
    late_answer: bool = False
    push_first: bool = False  # the first request answered with a PUSH_PROMISE (refused push)
    late_sent: trio.Event = field(default_factory=trio.Event)
    connections: int = 0
    peak_streams: int = 0
    goaways_received: int = 0
    closed: list[int] = field(default_factory=list)  # connection numbers the proxy closed
    closed_one: trio.Event = field(default_factory=trio.Event)
    heads: list[dict[bytes, bytes]] = field(default_factory=list)
    requests: list[tuple[dict[bytes, bytes], bytes]] = field(default_factory=list)

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        number = self.connections
        conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding=None)
        )
        conn.initiate_connection()
        conn.update_settings(
            {
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.max_streams,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: self.initial_window,
            }
        )
        sending = trio.Lock()
        answered = 0
        open_streams: set[int] = set()
        going_away = False
        reading: dict[int, tuple[dict[bytes, bytes], bytearray]] = {}
        received = 0
        last_id = 0

        async def flush() -> None:
            async with sending:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await stream.send_all(conn.data_to_send())

        async def answer(stream_id: int) -> None:
            nonlocal answered, going_away
            await trio.sleep(self.delay)
            body = f"connection {number} stream {stream_id}".encode()
            status = b"503" if self.unavailable_first else b"200"
            self.unavailable_first = max(self.unavailable_first - 1, 0)
            with contextlib.suppress(h2.exceptions.H2Error):
                conn.send_headers(stream_id, [(b":status", status)])
                conn.send_data(stream_id, body, end_stream=True)
            open_streams.discard(stream_id)
            answered += 1
            if self.goaway_after is not None and answered >= self.goaway_after and not going_away:
                going_away = True
                conn.close_connection(last_stream_id=stream_id)
            await flush()
            if going_away and not open_streams:
                await flush()  # another stream's answer made while this flush waited
                await stream.aclose()

        await flush()
        async with trio.open_nursery() as nursery:
            while True:
                try:
                    data = await stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    break
                if not data:
                    self.closed.append(number)
                    self.closed_one.set()
                    break
                try:
                    events = conn.receive_data(data)
                except h2.exceptions.ProtocolError:  # frames after its own GOAWAY: done
                    break
                for event in events:
                    if isinstance(event, h2.events.RequestReceived):
                        self.heads.append(dict(event.headers or ()))
                        reading[event.stream_id] = (self.heads[-1], bytearray())
                    elif isinstance(event, h2.events.DataReceived) and event.stream_id in reading:
                        reading[event.stream_id][1].extend(event.data or b"")
                        with contextlib.suppress(h2.exceptions.H2Error):
                            conn.acknowledge_received_data(
                                event.flow_controlled_length or 0, event.stream_id
                            )
                    elif isinstance(event, h2.events.StreamEnded) and event.stream_id in reading:
                        fields, body = reading.pop(event.stream_id)
                        self.requests.append((fields, bytes(body)))
                    if isinstance(event, h2.events.RequestReceived):
                        received += 1
                        if received == self.goaway_at and not going_away:
                            going_away = True
                            conn.close_connection(last_stream_id=last_id)
                            conn.state_machine.state = h2.connection.ConnectionState.SERVER_OPEN
                        last_id = event.stream_id
                    if isinstance(event, h2.events.StreamReset) and self.late_answer:
                        self.late_answer = False
                        late = hyperframe.frame.HeadersFrame(event.stream_id)
                        late.data = conn.encoder.encode([(b":status", b"200")])
                        late.flags.add("END_HEADERS")
                        late.flags.add("END_STREAM")
                        async with sending:
                            await stream.send_all(conn.data_to_send() + late.serialize())
                        self.late_sent.set()
                    elif isinstance(event, h2.events.RequestReceived) and self.late_answer:
                        pass  # answered only once reset
                    elif isinstance(event, h2.events.RequestReceived) and self.push_first:
                        self.push_first = False
                        promise = hyperframe.frame.PushPromiseFrame(event.stream_id)
                        promise.promised_stream_id = 2
                        promise.data = conn.encoder.encode([(b":method", b"GET")])
                        promise.flags.add("END_HEADERS")
                        async with sending:
                            await stream.send_all(conn.data_to_send() + promise.serialize())
                    elif isinstance(event, h2.events.RequestReceived) and self.refuse_first:
                        self.refuse_first -= 1
                        conn.reset_stream(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                    elif isinstance(event, h2.events.RequestReceived) and not going_away:
                        open_streams.add(event.stream_id)
                        self.peak_streams = max(self.peak_streams, len(open_streams))
                        nursery.start_soon(answer, event.stream_id)
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        self.goaways_received += 1
                await flush()
            nursery.cancel_scope.cancel()
