"""``shell.dataplane.connection.Connection``: the trio stream contract on a bare socket, over real
loopback TCP connections."""

from __future__ import annotations

import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest
import trio

from coxswain.shell.dataplane.connection import Connection, SendBatch
from tests.unit.turns import turn_counter

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@asynccontextmanager
async def connected() -> AsyncIterator[tuple[Connection, socket.socket]]:
    """Our Connection (a connected client socket) and the plain socket of its peer."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = await trio.open_tcp_stream("127.0.0.1", server.getsockname()[1])
        peer, _ = server.accept()
        connection = Connection.take(client)
        try:
            yield connection, peer
        finally:
            connection.close()
            peer.close()


def test_bytes_go_both_ways_and_the_peer_closing_is_the_end_of_the_stream() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            await connection.send_all(b"ping")
            assert peer.recv(16) == b"ping"
            peer.sendall(b"pong")
            assert await connection.receive_some() == b"pong"
            peer.shutdown(socket.SHUT_WR)
            assert await connection.receive_some() == b""

    trio.run(main)


def test_a_receive_waits_for_bytes_and_a_large_send_waits_for_the_reader() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            peer.setblocking(False)
            big = bytes(range(256)) * 40_000  # 10 MB: more than the kernel's buffers hold
            received = bytearray()

            async def drain() -> None:
                while len(received) < len(big):
                    await trio.lowlevel.wait_readable(peer)
                    received.extend(peer.recv(1 << 20))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain)
                await connection.send_all(big)
            assert bytes(received) == big

            async def answer_later() -> None:
                await trio.sleep(0.05)
                peer.send(b"late")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer_later)
                assert await connection.receive_some(2) == b"la"
            assert await connection.receive_some() == b"te"

    trio.run(main)


def test_after_our_own_close_every_call_is_closed_resource() -> None:
    async def main() -> None:
        async with connected() as (connection, _):
            await connection.aclose()
            await connection.aclose()  # closing twice is allowed
            with pytest.raises(trio.ClosedResourceError):
                await connection.send_all(b"x")
            with pytest.raises(trio.ClosedResourceError):
                await connection.receive_some()
            with pytest.raises(trio.ClosedResourceError):
                await connection.send_eof()
            with pytest.raises(trio.ClosedResourceError):
                await connection.wait_send_all_might_not_block()

    trio.run(main)


def test_closing_wakes_a_task_waiting_to_receive() -> None:
    async def main() -> None:
        async with connected() as (connection, _):

            async def close_soon() -> None:
                await trio.sleep(0.05)
                connection.close()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(close_soon)
                with pytest.raises(trio.ClosedResourceError):
                    await connection.receive_some()

    trio.run(main)


def test_a_reset_by_the_peer_is_broken_resource() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            # SO_LINGER 0: the peer's close sends RST instead of FIN
            peer.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            peer.close()
            await trio.sleep(0.05)
            with pytest.raises(trio.BrokenResourceError):
                await connection.receive_some()

    trio.run(main)


def test_send_eof_lets_the_peer_read_the_end_while_we_still_receive() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            await connection.send_all(b"last")
            await connection.send_eof()
            assert peer.recv(16) == b"last"
            assert peer.recv(16) == b""
            peer.sendall(b"reply")
            assert await connection.receive_some() == b"reply"

    trio.run(main)


def test_a_waiting_receive_is_cancelled_like_any_trio_wait() -> None:
    async def main() -> None:
        async with connected() as (connection, _):
            with trio.move_on_after(0.05) as scope:
                await connection.receive_some()
            assert scope.cancelled_caught

    trio.run(main)


def test_a_relay_whose_bytes_are_always_there_still_lets_other_tasks_run() -> None:
    """A receive that finds bytes does not yield; the send after it does, so a loop that
    relays (every receiving loop of the proxy also sends, or is bounded) lets the others run."""

    async def main() -> None:
        async with connected() as (source, feeder), connected() as (sink, drain):
            feeder.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            drain.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            payload = b"x" * (1 << 20)
            feeder.sendall(payload)  # all of it waits in the kernel: no receive below waits
            await trio.sleep(0.05)
            async with turn_counter() as turns:
                before = turns()
                assert await source.receive_some(16 * 1024)
                assert turns() == before  # the bytes were there: no yield
                relayed = 16 * 1024
                while relayed < len(payload):
                    data = await source.receive_some(16 * 1024)
                    await sink.send_all(data)
                    relayed += len(data)
                moved = turns() - before
            # 1 MB in 16 KiB pieces: a yield at each of the 63 sends
            assert moved >= 32

    trio.run(main)


class _RecordingSocket(socket.socket):
    """A socket that notes, for each ``send``, whether a task made it or trio's scheduler
    between two turns (the send batch)."""

    from_task: list[bool]

    def send(self, data: object, flags: int = 0) -> int:  # type: ignore[override]
        try:
            trio.lowlevel.current_task()
            self.from_task.append(True)
        except RuntimeError:
            self.from_task.append(False)
        return super().send(data, flags)  # type: ignore[arg-type]


def test_the_sends_of_one_turn_go_out_together_after_it_and_each_arrives_whole() -> None:
    async def main() -> None:
        async with connected() as (a, peer_a), connected() as (b, peer_b):
            from_task: list[bool] = []
            for connection in (a, b):
                recording = _RecordingSocket(fileno=connection.socket.detach())
                recording.from_task = from_task
                connection.socket = recording
            async with trio.open_nursery() as nursery:
                nursery.start_soon(a.send_all, b"to a")
                nursery.start_soon(b.send_all, b"to b")
            assert from_task == [False, False]  # both sent by the batch, outside any task
            assert peer_a.recv(16) == b"to a"
            assert peer_b.recv(16) == b"to b"

    trio.run(main)


def test_a_connection_closed_while_its_bytes_wait_for_the_batch_is_closed_resource() -> None:
    class CloseFirst(trio.abc.Instrument):
        """Runs before the send batch (installed before the first connection): closes."""

        connection: Connection | None = None

        def before_io_wait(self, timeout: float) -> None:
            if self.connection is not None:
                self.connection.close()

    async def main() -> None:
        closer = CloseFirst()
        trio.lowlevel.add_instrument(closer)
        async with connected() as (connection, peer):
            closer.connection = connection
            with pytest.raises(trio.ClosedResourceError):
                await connection.send_all(b"never")
            peer.settimeout(1)
            assert peer.recv(16) == b""  # the peer sees the end, not the bytes

    trio.run(main)


def test_a_send_the_batch_fails_is_broken_resource_and_the_next_send_too() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            peer.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            peer.close()  # RST: the batch's send fails with ECONNRESET or EPIPE
            await trio.sleep(0.05)
            with pytest.raises(trio.BrokenResourceError):
                await connection.send_all(b"x")
            with pytest.raises(trio.BrokenResourceError):
                await connection.send_all(b"y")

    trio.run(main)


def test_bytes_the_batch_did_not_send_before_the_task_ran_again_are_sent_by_the_task() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            connection._batch = SendBatch()  # a batch trio never calls: the task sends itself
            peer.settimeout(1)
            await connection.send_all(b"still sent")
            assert peer.recv(16) == b"still sent"

    trio.run(main)


def test_a_second_task_sending_at_the_same_time_is_busy_and_nothing_interleaves() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            failures: list[BaseException] = []

            async def send(message: bytes) -> None:
                try:
                    await connection.send_all(message)
                except trio.BusyResourceError as err:
                    failures.append(err)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(send, b"AAAA")
                nursery.start_soon(send, b"BBBB")
            assert len(failures) == 1  # whichever started second
            peer.settimeout(1)
            assert peer.recv(16) in (b"AAAA", b"BBBB")
            await connection.send_all(b"next")  # the connection is usable again
            assert peer.recv(16) == b"next"

    trio.run(main)


def test_a_bad_argument_is_raised_in_the_caller_and_batching_goes_on() -> None:
    async def main() -> None:
        async with connected() as (connection, peer):
            with pytest.raises(TypeError):
                await connection.send_all("text, not bytes")  # type: ignore[arg-type]
            batch = connection._batch
            for _ in range(50):
                await connection.send_all(b"x")
            assert batch.queued == []  # still flushed by trio: the instrument was kept
            peer.settimeout(1)
            received = b""
            while len(received) < 50:
                received += peer.recv(64)
            assert received == b"x" * 50

    trio.run(main)


def test_a_send_cut_by_a_close_keeps_nothing_of_the_callers_buffer() -> None:
    class CloseAfterBatch(trio.abc.Instrument):
        """Runs after the send batch (installed after the first connection): closes the
        connection once the batch left part of the bytes unsent."""

        connection: Connection | None = None

        def before_io_wait(self, timeout: float) -> None:
            if self.connection is not None and self.connection._rest is not None:
                self.connection.close()
                self.connection = None

    async def main() -> None:
        async with connected() as (connection, _):
            connection.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            closer = CloseAfterBatch()
            trio.lowlevel.add_instrument(closer)
            closer.connection = connection
            buffer = bytearray(1_000_000)  # more than the kernel takes at once
            with pytest.raises(trio.ClosedResourceError):
                await connection.send_all(buffer)
            buffer.clear()  # BufferError if a view of it were still held

    trio.run(main)
