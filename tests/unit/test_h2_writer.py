"""``shell.dataplane.h2_writer.FrameWriter``: the one writer of a client's HTTP/2 connection,
over real loopback TCP connections: the frames of many streams in one send, a stream's flush
held while a send waits for the client, what is left sent on close, a broken connection told."""

from __future__ import annotations

import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from coxswain.shell.dataplane.connection import Connection
from coxswain.shell.dataplane.h2_writer import FrameWriter

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Frames:
    """A protocol machine's buffer of frames to send, as the writer sees it."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    @property
    def has_data_to_send(self) -> bool:
        return bool(self.out)

    def data_to_send(self) -> bytes:
        data = b"".join(self.out)
        self.out.clear()
        return data


class Counted(Connection):
    """A connection that counts its sends."""

    sends = 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        type(self).sends += 1
        await super().send_all(data)


@asynccontextmanager
async def writing() -> AsyncIterator[tuple[Frames, FrameWriter, socket.socket, trio.Nursery]]:
    """A writer running over a connected socket, the peer's plain socket, and a nursery."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = await trio.open_tcp_stream("127.0.0.1", server.getsockname()[1])
        peer, _ = server.accept()
        connection = Counted(socket.socket(fileno=client.socket.detach()))
        Counted.sends = 0
        frames = Frames()
        writer = FrameWriter(frames, connection)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer.run)
                yield frames, writer, peer, nursery
                writer.close()
        finally:
            connection.close()
            peer.close()


def received(peer: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        piece = peer.recv(size - len(data))
        assert piece
        data += piece
    return data


def test_the_frames_of_many_streams_made_in_one_turn_go_out_in_one_send() -> None:
    async def main() -> None:
        async with writing() as (frames, writer, peer, nursery):

            async def stream(number: int) -> None:
                frames.out.append(b"%02d" % number)
                writer.send_soon()

            await trio.testing.wait_all_tasks_blocked()
            for number in range(10):
                nursery.start_soon(stream, number)
            await trio.testing.wait_all_tasks_blocked()
            data = received(peer, 20)  # trio runs the tasks of a turn in any order
            assert sorted(data[at : at + 2] for at in range(0, 20, 2)) == [
                b"%02d" % n for n in range(10)
            ]
            assert Counted.sends == 1

    trio.run(main)


def test_a_flush_waits_while_the_writer_waits_for_the_client() -> None:
    async def main() -> None:
        async with writing() as (frames, writer, peer, nursery):
            big = b"b" * 20_000_000  # more than the kernel's buffers hold
            frames.out.append(big)
            writer.send_soon()
            await trio.testing.wait_all_tasks_blocked()  # the writer waits for the peer
            flushed = trio.Event()

            async def stream() -> None:
                frames.out.append(b"after")
                await writer.flush()
                flushed.set()

            nursery.start_soon(stream)
            await trio.testing.wait_all_tasks_blocked()
            assert not flushed.is_set()
            peer.setblocking(False)
            data = bytearray()
            while len(data) < len(big) + 5:
                await trio.lowlevel.wait_readable(peer)
                data += peer.recv(1 << 20)
            await flushed.wait()
            assert bytes(data[-5:]) == b"after"

    trio.run(main)


def test_a_flush_yields_when_the_writer_is_idle() -> None:
    async def main() -> None:
        async with writing() as (frames, writer, peer, _):
            await trio.testing.wait_all_tasks_blocked()
            frames.out.append(b"one")
            with trio.CancelScope() as scope:
                scope.cancel()
                await writer.flush()  # a checkpoint: the cancelled scope ends here
            assert scope.cancelled_caught
            assert received(peer, 3) == b"one"

    trio.run(main)


def test_close_sends_what_is_left_then_the_writer_stops() -> None:
    async def main() -> None:
        async with writing() as (frames, writer, peer, nursery):
            await trio.testing.wait_all_tasks_blocked()
            frames.out.append(b"goaway")
            writer.close()
            await trio.testing.wait_all_tasks_blocked()
            assert not nursery.child_tasks  # run returned
            assert received(peer, 6) == b"goaway"

    trio.run(main)


def test_a_broken_connection_stops_the_writer_and_every_flush_raises() -> None:
    async def main() -> None:
        async with writing() as (frames, writer, peer, _):
            peer.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            peer.close()  # a reset: the next sends fail
            while not writer.broken:
                frames.out.append(b"x" * 1000)
                writer.send_soon()
                await trio.sleep(0.01)
            with pytest.raises(trio.BrokenResourceError):
                await writer.flush()

    trio.run(main)
