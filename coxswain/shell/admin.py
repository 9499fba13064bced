"""The admin port: liveness and readiness for Kubernetes probes (ARCHITECTURE §6).

``/healthz`` answers 200 while the process serves at all. ``/readyz`` answers 200 only when a
snapshot is applied and every listener it needs is bound (ARCHITECTURE §7), else 503. Both read
flags the proxy keeps; they never probe; ``/readyz`` is 503 again once draining starts.
``/metrics`` is the proxy's own registry in Prometheus text (:mod:`.metrics`). Any other path is
404. Requests are parsed with the
same codec as traffic, and answered with ``Connection: close``: probes open a connection each.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from coxswain.shell.http1 import RequestHead, RequestParser
from coxswain.shell.metrics import CONTENT_TYPE
from coxswain.shell.wire import EventReader, own_answer
from coxswain.shell.workers import open_reuseport_listeners

if TYPE_CHECKING:
    from coxswain.shell.proxy import Proxy

__all__ = ["serve_admin"]

log = logging.getLogger("coxswain.admin")

_TIMEOUT = 10.0


async def serve_admin(
    proxy: Proxy,
    *,
    bind: str,
    port: int,
    reuse_port: bool = False,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the admin port; never returns. ``task_status.started`` gets the bound port.
    With ``reuse_port`` every worker process binds it (SO_REUSEPORT, see :mod:`.workers`)."""
    listeners: list[trio.SocketListener] = (
        await open_reuseport_listeners(port, host=bind)
        if reuse_port
        else await trio.open_tcp_listeners(port, host=bind)
    )
    task_status.started(listeners[0].socket.getsockname()[1])

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            with trio.move_on_after(_TIMEOUT):
                try:
                    await _answer(proxy, stream)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                except Exception:  # a probe's bug must not stop the proxy
                    log.exception("admin request failed")

    await trio.serve_listeners(handle, listeners)


async def _answer(proxy: Proxy, stream: trio.SocketStream) -> None:
    event = await EventReader(stream, RequestParser(proxy.codec)).next()
    if type(event) is not RequestHead:
        return
    path = event.target.split(b"?", 1)[0]
    head_only = event.method == b"HEAD"
    if path == b"/healthz":
        reply = own_answer(200, "alive", close=True, head_only=head_only)
    elif path == b"/readyz":
        ready = proxy.ready()
        reply = own_answer(
            200 if ready else 503,
            "ready" if ready else "no snapshot applied or a listener is not bound",
            close=True,
            head_only=head_only,
        )
    elif path == b"/metrics":
        body = proxy.metrics.exposition()
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
