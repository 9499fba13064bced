"""TLS passthrough on the Ingress HTTPS port (ingress-nginx's ``ssl-passthrough``; the
compiled side: ``VirtualHost.passthrough``, docs/migrating-from-ingress-nginx.md, "Backends").

Rules, as ingress-nginx's ``--enable-ssl-passthrough`` behaves:
1. Only while some Ingress host asks for it does the HTTPS port read each ClientHello before
   the handshake (:func:`.streams.peek.read_client_hello`: 16 KiB at most, within the handshake
   timeout); without one the port handshakes at once, as it always did.
2. A ClientHello whose server name is a passed-through host (exactly, or under a ``*.``
   host) is not answered: its bytes go first to the backend of that host's ``/`` path, which
   completes the handshake with its own certificate, and both directions are spliced
   (:mod:`.streams.splice`: backpressure, half-close, the tunnel idle timeout).
3. Any other ClientHello — another name, or none — is handshaken by the proxy as usual, the
   bytes read given back to the TLS layer (:class:`.streams.peek.Replay`).
4. An invalid backend, one without ready endpoints, or one none of whose endpoints accepts
   within the connect timeout closes the connection, as a layer-4 proxy can only do.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from coxswain.shell.dataplane.streams.peek import connect_first
from coxswain.shell.dataplane.streams.splice import splice

if TYPE_CHECKING:
    import random
    from collections.abc import Mapping, Sequence

    from coxswain.compile.snapshot import Endpoint, PathRule

__all__ = ["pass_through", "passed_rule"]

log = logging.getLogger(__name__)


def passed_rule(passing: Mapping[str, PathRule], sni: str | None) -> PathRule | None:
    """The rule whose host ``sni`` names, exactly or under a ``*.`` host (rule 2)."""
    if sni is None:
        return None
    found = passing.get(sni)
    if found is None and "." in sni:
        found = passing.get("*." + sni.partition(".")[2])
    return found


async def pass_through(
    client: trio.abc.Stream,
    first: bytes,
    rule: PathRule,
    endpoints: Mapping[str, Sequence[Endpoint]],
    rng: random.Random,
    *,
    connect_within: float,
    idle_timeout: float,
) -> None:
    """Send ``first`` and then everything ``client`` sends to the backend of ``rule``, and
    back (rules 2 and 4). The caller closes ``client``."""
    backend = rule.backend
    found = endpoints.get(backend.endpoints_key, ()) if backend.valid else ()
    if not found:
        log.info("passthrough to %s: no ready endpoint", backend.endpoints_key)
        return
    start = rng.randrange(len(found))
    connected = await connect_first([*found[start:], *found[:start]], connect_within)
    if connected is None:
        return
    upstream = trio.SocketStream(trio.socket.from_stdlib_socket(connected))
    try:
        await upstream.send_all(first)
        await splice(client, upstream, idle_timeout=idle_timeout)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await trio.aclose_forcefully(upstream)
