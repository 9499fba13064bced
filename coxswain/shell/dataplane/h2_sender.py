"""What both kinds of the proxy's HTTP/2 connections share (RFC 9113): a client's
(:mod:`.h2_connection`, on the proxy's own :mod:`coxswain.http2.server`) and a backend's
(:mod:`.h2_upstream`, on :mod:`coxswain.http2.client`). Both protocol machines make frames into
a buffer (``data_to_send``):

- frames go out through the connection's one writer (:mod:`.h2_writer`): a stream hands its
  frames over (:meth:`H2Sender.send_soon`), or hands them over and waits while the writer is
  inside a send (:meth:`H2Sender.flush`), so that the frames many streams make in one turn of
  the scheduler leave in one send, in the order they were made;
- a stream that may not send waits on :meth:`H2Sender.window`; the connection's reader wakes it
  when the peer opens a window (:meth:`H2Sender.open_window`, RFC 9113 §5.2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from coxswain.shell.dataplane.h2_writer import FrameWriter

__all__ = ["H2Sender"]


class H2Sender:
    """The writer and the window waits of one connection; a base of the connection classes,
    which set the attributes."""

    writer: FrameWriter
    _windows: dict[int, trio.Event]

    async def flush(self) -> None:
        """Hand the frames made so far to the writer (:meth:`.FrameWriter.flush`)."""
        await self.writer.flush()

    def send_soon(self) -> None:
        """Have the frames made so far sent, without waiting (:meth:`.FrameWriter.send_soon`)."""
        self.writer.send_soon()

    async def window(self, stream_id: int) -> None:
        """Wait for the peer to open the stream's or the connection's window."""
        event = self._windows.get(stream_id)
        if event is None:
            event = self._windows[stream_id] = trio.Event()
        await event.wait()

    def open_window(self, stream_id: int) -> None:
        """The peer opened the stream's window (``0``: the connection's, or every stream's
        initial window): wake who waits for it."""
        if stream_id:
            event = self._windows.pop(stream_id, None)
            if event is not None:
                event.set()
            return
        for event in self._windows.values():
            event.set()
        self._windows.clear()
