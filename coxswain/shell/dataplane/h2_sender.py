"""What both kinds of the proxy's HTTP/2 connections share (RFC 9113): a client's
(:mod:`.h2_connection`, on the proxy's own :mod:`coxswain.http2.server`) and a backend's
(:mod:`.h2_upstream`, on :mod:`coxswain.http2.client`). Both protocol machines make frames into
a buffer (``data_to_send``):

- frames go out through :meth:`H2Sender.flush`, one sender at a time, in the order they were
  made, and a flush with nothing made returns at once: a relay waits or sends right after
  each flush (a client's connection overrides it: its frames go out through its one writer,
  :mod:`.h2_writer`);
- a stream that may not send waits on :meth:`H2Sender.window`; the connection's reader wakes it
  when the peer opens a window (:meth:`H2Sender.open_window`, RFC 9113 §5.2).
"""

from __future__ import annotations

from typing import Protocol

import trio

__all__ = ["H2Sender"]


class _Frames(Protocol):
    @property
    def has_data_to_send(self) -> bool: ...

    def data_to_send(self) -> bytes: ...


class _Sink(Protocol):
    async def send_all(self, data: bytes) -> None: ...


class H2Sender:
    """The sender and the window waits of one connection; a base of the connection classes,
    which set the attributes."""

    conn: _Frames
    stream: _Sink
    _sending: trio.Lock
    _windows: dict[int, trio.Event]

    async def flush(self) -> None:
        """Send the frames made so far, in order. With none made, return at once; with the
        sender free, take it without the lock's own trip through the scheduler (the send
        yields, :mod:`.connection`), so that a flush costs one turn, not two."""
        if not self.conn.has_data_to_send:
            return
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled flush sends nothing
        sending = self._sending
        try:
            sending.acquire_nowait()
        except trio.WouldBlock:
            await sending.acquire()
        try:
            data = self.conn.data_to_send()
            if data:
                await self.stream.send_all(data)
        finally:
            sending.release()

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
