"""The accept loop's errors (coxswain/shell/dataplane/streams/sockets.py): an error about the
one connection being accepted, or the process out of descriptors, is waited out and the next
connection taken; any other error is raised."""

from __future__ import annotations

import errno
import socket
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from coxswain.shell.dataplane.streams.sockets import accept

if TYPE_CHECKING:
    from typing import Any


class _Listening:
    """A listening socket whose accept() fails with ``errors`` first."""

    def __init__(self, conn: socket.socket, *errors: int) -> None:
        self.conn = conn
        self.errors = list(errors)

    def accept(self) -> tuple[socket.socket, Any]:
        if self.errors:
            number = self.errors.pop(0)
            raise OSError(number, errno.errorcode[number])
        return self.conn, ("127.0.0.1", 1)


@pytest.mark.parametrize("number", [errno.ECONNABORTED, errno.EPROTO, errno.EMFILE])
def test_accept_waits_out_a_lost_connection_or_a_full_table(number: int) -> None:
    mine, other = socket.socketpair()
    with mine, other:
        listening = _Listening(mine, number)

        async def main() -> socket.socket:
            return await accept(listening)  # type: ignore[arg-type]

        got = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        assert got is mine
        assert not got.getblocking()
        assert listening.errors == []


def test_accept_raises_any_other_error() -> None:
    mine, other = socket.socketpair()
    with mine, other:
        listening = _Listening(mine, errno.EBADF)

        async def main() -> socket.socket:
            return await accept(listening)  # type: ignore[arg-type]

        with pytest.raises(OSError, match="EBADF"):
            trio.run(main)
