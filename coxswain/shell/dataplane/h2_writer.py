"""The one writer of an HTTP/2 connection (RFC 9113), a client's or a backend's: every frame the
connection's streams and its reader make goes out through it, those of many streams in one
send.

Why: the streams of one connection share its socket, and only one task may send on a socket at
a time. A lock around each stream's send costs every response a wait for the lock and a send
of its own; with one writer, a stream puts its frames in the protocol machine's buffer
(:meth:`~coxswain.http2.server.ServerConnection.data_to_send`) and wakes the writer
(:meth:`FrameWriter.send_soon`), which sends whatever the streams of a scheduler turn made in
one ``send_all``, in the order they were made.

Backpressure stays: a stream relaying a body calls :meth:`FrameWriter.flush` after each piece,
which waits while the writer is inside a send (the peer's socket buffer full), so what waits
for the kernel is at most one piece per stream besides the send in progress; the reader waits
the same way before it reads more (:mod:`.h2_connection`). A send that takes no byte for the
connection's send timeout closes the connection (:meth:`.Connection.bound_sends`); the writer
then stops, and every stream's next :meth:`FrameWriter.flush` raises
``trio.BrokenResourceError``, as a send of its own did.
"""

from __future__ import annotations

from typing import Protocol

import trio

__all__ = ["FrameWriter"]


class _Frames(Protocol):
    @property
    def has_data_to_send(self) -> bool: ...

    def data_to_send(self) -> bytes: ...


class FrameWriter:
    """The writer of one connection: :meth:`run` in the connection's nursery until
    :meth:`close`."""

    __slots__ = ("_closing", "_frames", "_sink", "_wanted", "_writing", "_written", "broken")

    def __init__(self, frames: _Frames, sink: trio.abc.SendStream) -> None:
        self._frames = frames
        self._sink = sink
        self._wanted: trio.Event | None = None  # set to wake the writer, while it waits
        self._writing = False  # inside a send
        self._written: trio.Event | None = None  # set when that send ends
        self.broken = False
        """The connection broke or was closed: nothing more is sent (set by the writer only;
        an attribute, not a property: every stream's open and flush reads it)."""
        self._closing = False

    def send_soon(self) -> None:
        """Have the frames made so far sent (by the writer, at its next turn); never waits."""
        wanted = self._wanted
        if wanted is not None and (self._closing or self._frames.has_data_to_send):
            self._wanted = None
            wanted.set()

    async def flush(self) -> None:
        """Hand the frames made so far to the writer, then wait while it is inside a send, or
        else yield once: a loop that makes frames yields here on every turn.

        Raises:
            trio.BrokenResourceError: the connection broke or was closed; nothing more is sent.
        """
        if self.broken:
            raise trio.BrokenResourceError("the connection is closed")
        self.send_soon()
        if self._writing:
            written = self._written
            if written is None:
                written = self._written = trio.Event()
            await written.wait()
            if self.broken:
                raise trio.BrokenResourceError("the connection is closed")
        else:
            await trio.lowlevel.checkpoint()

    def close(self) -> None:
        """Send what is left, then stop (:meth:`run` returns)."""
        self._closing = True
        self.send_soon()

    async def run(self) -> None:
        """Send the frames as they are made, until :meth:`close` (what is left sent first) or
        the connection breaks."""
        frames = self._frames
        sink = self._sink
        try:
            while True:
                data = frames.data_to_send()
                if data:
                    self._writing = True
                    try:
                        await sink.send_all(data)
                    finally:
                        self._writing = False
                        written = self._written
                        if written is not None:
                            self._written = None
                            written.set()
                    continue
                if self._closing:
                    return
                wanted = self._wanted = trio.Event()
                await wanted.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.broken = True
