"""An HTTP/2 connection on the ``h2`` protocol machine (RFC 9113): its one sender, and the
flow-control windows its streams wait for. A backend's connection (:mod:`.h2_upstream`) is one;
a client's (:mod:`.h2_connection`) runs on the proxy's own :mod:`coxswain.http2.server` instead,
by the same rules:

- ``h2``'s header validation is off: every field is checked once, by the proxy's own rules
  (:mod:`coxswain.http2.fields`), since a field may be relayed to an HTTP/1.1 peer;
- frames go out through :meth:`H2Peer.flush`, one sender at a time, in the order ``h2`` made
  them;
- body bytes taken by the relay give their window back (:meth:`H2Peer.acknowledge`): a peer
  sends as fast as the other side reads, never faster (RFC 9113 §5.2);
- a stream waiting for the peer to open a window waits on :meth:`H2Peer.window`, woken by the
  connection's reader (:meth:`H2Peer.open_window`) (:mod:`.h2_sender`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, ClassVar, Final

import trio
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.exceptions import H2Error

from coxswain.shell.dataplane.h2_sender import H2Sender

if TYPE_CHECKING:
    from h2.settings import SettingCodes

if TYPE_CHECKING:
    from coxswain.shell.dataplane.pool import Upstream

__all__ = ["H2Peer"]

_DEFAULT_WINDOW: Final = 65535  # every window's size until SETTINGS say otherwise (§6.9.2)


class H2Peer(H2Sender):
    """One HTTP/2 connection over ``stream``; ``client_side`` when the proxy opens its
    streams (towards a backend)."""

    RESET: ClassVar[ErrorCodes] = ErrorCodes.INTERNAL_ERROR
    """The code :meth:`reset` gives by default."""

    conn: H2Connection
    stream: trio.abc.Stream | Upstream

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
