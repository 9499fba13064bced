"""The accept loop (coxswain/shell/dataplane/streams/sockets.py): the connections waiting are
taken in a batch of at most its bound; an error about the one connection being accepted, or
the process out of descriptors, is waited out and the next connection taken (a batch already
holding some ends with them instead); any other error is raised."""

from __future__ import annotations

import errno
import socket
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from coxswain.shell.dataplane.streams.sockets import accept, listening

if TYPE_CHECKING:
    from typing import Any


class _Listening:
    """A listening socket whose accept() gives ``script`` in turn: a socket, or an error
    number raised; then ``BlockingIOError`` (nothing waiting) once the script is done."""

    def __init__(self, *script: socket.socket | int) -> None:
        self.script = list(script)

    def accept(self) -> tuple[socket.socket, Any]:
        if not self.script:
            raise BlockingIOError
        step = self.script.pop(0)
        if isinstance(step, int):
            raise OSError(step, errno.errorcode[step])
        return step, ("127.0.0.1", 1)


@pytest.mark.parametrize("number", [errno.ECONNABORTED, errno.EPROTO, errno.EMFILE])
def test_accept_waits_out_a_lost_connection_or_a_full_table(number: int) -> None:
    mine, other = socket.socketpair()
    with mine, other:
        listening = _Listening(number, mine)

        async def main() -> list[socket.socket]:
            return await accept(listening)  # type: ignore[arg-type]

        got = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        assert got == [mine]
        assert not mine.getblocking()
        assert listening.script == []


def test_accept_raises_any_other_error() -> None:
    mine, other = socket.socketpair()
    with mine, other:
        listening = _Listening(errno.EBADF, mine)

        async def main() -> socket.socket:
            return await accept(listening)  # type: ignore[arg-type]

        with pytest.raises(OSError, match="EBADF"):
            trio.run(main)


def test_accept_takes_the_waiting_connections_up_to_its_bound_in_one_yield() -> None:
    with listening(socket.create_server(("127.0.0.1", 0))) as server:
        clients = [socket.create_connection(server.getsockname()) for _ in range(5)]

        async def main() -> tuple[list[socket.socket], list[socket.socket], int]:
            first = await accept(server, 3)
            second = await accept(server, 3)  # the two left: no wait for a third
            return first, second, len(first) + len(second)

        first, second, total = trio.run(main)
        try:
            assert (len(first), len(second), total) == (3, 2, 5)
            for conn in first + second:
                assert not conn.getblocking()
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)  # inherited
        finally:
            for sock in clients + first + second:
                sock.close()


def test_an_error_within_a_batch_ends_it_with_what_it_holds() -> None:
    one, other = socket.socketpair()
    two, third = socket.socketpair()
    with one, other, two, third:
        listening = _Listening(one, errno.EMFILE, two)

        async def main() -> tuple[list[socket.socket], list[socket.socket]]:
            batch = await accept(listening, 16)  # type: ignore[arg-type]
            return batch, await accept(listening, 16)  # type: ignore[arg-type]

        first, second = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        assert (first, second) == ([one], [two])
