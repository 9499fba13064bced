"""The admin port: liveness and readiness for Kubernetes probes (docs/contracts.md, "Ports").

``/healthz`` answers 200 while the process serves at all. ``/readyz`` answers 200 only when a
snapshot is applied and every listener it needs is bound (docs/contracts.md), else 503; it is 503
again once draining starts. ``/metrics`` is Prometheus text. Any other path is 404. Requests
are parsed with the traffic codec, and answered with ``Connection: close``: probes open a
connection each.

The admin port keeps answering when the traffic ports are full: it has places of its own,
:data:`.connection_limits.ADMIN_MAX_CONNECTIONS` connections of at most
:data:`.connection_limits.ADMIN_TIMEOUT` seconds each (:class:`.capacity.Capacity`), and the
traffic ports' limit leaves descriptors for them (:data:`.connection_limits.FD_RESERVE`). A
connection that has not sent its request head gives way to a newcomer at that limit, so a
client that opens connections and sends nothing cannot keep the probes out.

What the answers say comes from an :class:`AdminSource`:
:class:`coxswain.shell.proxy.ProxyAdmin` reads the flags and registry of the proxy in this
process; the supervisor of ``--workers N`` asks its workers (:mod:`.workers`).
"""

from __future__ import annotations

import logging
from typing import Protocol

import trio

from coxswain.http1 import DEFAULT_CODEC, RequestHead, RequestParser, codec_named
from coxswain.shell.dataplane import capacity
from coxswain.shell.dataplane.connection_limits import ADMIN_MAX_CONNECTIONS, ADMIN_TIMEOUT
from coxswain.shell.dataplane.metrics import CONTENT_TYPE
from coxswain.shell.dataplane.wire import EventReader, own_answer

__all__ = ["AdminSource", "serve_admin"]

log = logging.getLogger("coxswain.admin")


class AdminSource(Protocol):
    """What the admin port reports."""

    async def ready(self) -> bool: ...

    async def exposition(self) -> bytes: ...


async def serve_admin(
    source: AdminSource,
    *,
    bind: str,
    port: int,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the admin port; never returns. ``task_status.started`` gets the bound port."""
    listeners = await trio.open_tcp_listeners(port, host=bind)
    task_status.started(listeners[0].socket.getsockname()[1])
    codec = codec_named(DEFAULT_CODEC)
    room = capacity.Capacity(ADMIN_MAX_CONNECTIONS)

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            with trio.move_on_after(ADMIN_TIMEOUT) as scope:
                try:
                    room.waiting(scope)  # until its head is read, it gives way to a newcomer
                    head = await EventReader(stream, RequestParser(codec)).next()
                    room.working(scope)
                    if type(head) is RequestHead:
                        await _answer(source, stream, head)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                except Exception:  # a probe's bug must not stop the proxy
                    log.exception("admin request failed")
                finally:
                    room.working(scope)

    async with trio.open_nursery() as nursery:
        await capacity.serve(handle, listeners, room, nursery)


async def _answer(source: AdminSource, stream: trio.SocketStream, event: RequestHead) -> None:
    path = event.target.split(b"?", 1)[0]
    head_only = event.method == b"HEAD"
    if path == b"/healthz":
        reply = own_answer(200, "alive", close=True, head_only=head_only)
    elif path == b"/readyz":
        ready = await source.ready()
        reply = own_answer(
            200 if ready else 503,
            "ready" if ready else "no snapshot applied or a listener is not bound",
            close=True,
            head_only=head_only,
        )
    elif path == b"/metrics":
        body = await source.exposition()
        reply = (
            b"HTTP/1.1 200 OK\r\ncontent-type: "
            + CONTENT_TYPE.encode("latin-1")
            + b"\r\ncontent-length: "
            + str(len(body)).encode("ascii")
            + b"\r\nconnection: close\r\n\r\n"
            + (b"" if head_only else body)
        )
    else:
        reply = own_answer(404, "the admin port serves /healthz, /readyz and /metrics", close=True)
    await stream.send_all(reply)
