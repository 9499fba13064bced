"""The PROXY protocol version 2 header a backend may ask for (haproxy's "The PROXY protocol",
section 2.2), so that it learns the client's address through a layer-4 proxy. Pure.

A Service asks for it with the annotation ``coxswain-labs.dev/proxy-protocol: v2``
(docs/architecture.md, "Layer 4"); the proxy then sends this header before the first byte of
every TLS or TCP connection it forwards to that Service's endpoints. The header is binary: the
12-byte signature, version 2 and command PROXY, the address family and transport (TCP over
IPv4 or IPv6), then the source (the client) and destination (the proxy's listening address)
addresses and ports. Addresses of different families, or that are not IP addresses, give the
LOCAL command, which carries none (the backend then uses the connection's own addresses).
"""

from __future__ import annotations

import ipaddress
from typing import Final

__all__ = ["SIGNATURE", "proxy_header"]

SIGNATURE: Final = b"\r\n\r\n\x00\r\nQUIT\n"
_PROXY: Final = 0x21  # version 2, command PROXY
_LOCAL: Final = 0x20  # version 2, command LOCAL
_TCP4: Final = 0x11
_TCP6: Final = 0x21


def proxy_header(source: tuple[str, int], destination: tuple[str, int]) -> bytes:
    """The header for a TCP connection from ``source`` to ``destination`` (address, port)."""
    try:
        client = ipaddress.ip_address(source[0].partition("%")[0])
        local = ipaddress.ip_address(destination[0].partition("%")[0])
    except ValueError:
        return SIGNATURE + bytes([_LOCAL, 0, 0, 0])
    if client.version != local.version:
        return SIGNATURE + bytes([_LOCAL, 0, 0, 0])
    family = _TCP4 if client.version == 4 else _TCP6
    body = (
        client.packed
        + local.packed
        + source[1].to_bytes(2, "big")
        + destination[1].to_bytes(2, "big")
    )
    return SIGNATURE + bytes([_PROXY, family]) + len(body).to_bytes(2, "big") + body
