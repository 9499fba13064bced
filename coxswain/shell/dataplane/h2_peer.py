"""What both kinds of the proxy's HTTP/2 connections share (RFC 9113): the ``h2`` protocol
machine, its one sender, and the flow-control windows their streams wait for.

A client's connection (:mod:`.h2_connection`) and a backend's (:mod:`.h2_upstream`) differ in
who opens streams; alike in both:

- ``h2``'s header validation is off: every field is checked once, by the proxy's own rules
  (:mod:`coxswain.http2.fields`), since a field may be relayed to an HTTP/1.1 peer;
- frames go out through :meth:`H2Peer.flush`, one sender at a time, in the order ``h2`` made
  them;
- body bytes taken by the relay give their window back (:meth:`H2Peer.acknowledge`): a peer
  sends as fast as the other side reads, never faster (RFC 9113 §5.2);
- a stream waiting for the peer to open a window waits on :meth:`H2Peer.window`, woken by the
  connection's reader (:meth:`H2Peer.open_window`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, ClassVar, Final

import trio
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.exceptions import H2Error

if TYPE_CHECKING:
    from h2.settings import SettingCodes

if TYPE_CHECKING:
    from coxswain.shell.dataplane.pool import Upstream

__all__ = ["H2Peer"]

_DEFAULT_WINDOW: Final = 65535  # every window's size until SETTINGS say otherwise (§6.9.2)


class H2Peer:
    """One HTTP/2 connection over ``stream``; ``client_side`` when the proxy opens its
    streams (towards a backend)."""

    RESET: ClassVar[ErrorCodes] = ErrorCodes.INTERNAL_ERROR
    """The code :meth:`reset` gives by default."""

    def __init__(self, stream: trio.abc.Stream | Upstream, *, client_side: bool) -> None:
        self.stream = stream
        self.conn = H2Connection(
            H2Configuration(
                client_side=client_side,
                header_encoding=None,
                validate_inbound_headers=False,  # coxswain.http2 checks every field
                normalize_inbound_headers=False,
                validate_outbound_headers=False,
                normalize_outbound_headers=False,
            )
        )
        self._sending = trio.Lock()
        self._windows: dict[int, trio.Event] = {}

    def start(self, settings: dict[SettingCodes | int, int], window: int) -> None:
        """Make the connection preface with the proxy's ``settings`` and a connection window
        of ``window`` bytes. ``h2`` writes the settings in force into the preface's SETTINGS
        frame, not updated ones: the proxy's go in a SETTINGS frame of their own, applied by
        ``h2`` once the peer acknowledges them (RFC 9113 §6.5.3)."""
        conn = self.conn
        conn.initiate_connection()
        conn.update_settings(settings)
        conn.increment_flow_control_window(window - _DEFAULT_WINDOW)

    async def flush(self) -> None:
        """Send what ``h2`` has made, in order."""
        async with self._sending:
            data = self.conn.data_to_send()
            if data:
                await self.stream.send_all(data)

    def acknowledge(self, stream_id: int, flow: int) -> None:
        """Body bytes were taken: open the peer's windows again by as much."""
        if flow:
            with contextlib.suppress(H2Error):  # the stream is gone: the connection's only
                self.conn.acknowledge_received_data(flow, stream_id)
                return
            self.conn.increment_flow_control_window(flow)

    def reset(self, stream_id: int, code: ErrorCodes | None = None) -> None:
        """Reset the stream (with :attr:`RESET` unless ``code``); a closed one stays closed."""
        with contextlib.suppress(H2Error):
            self.conn.reset_stream(stream_id, self.RESET if code is None else code)

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
