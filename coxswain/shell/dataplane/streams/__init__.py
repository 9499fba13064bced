"""The layer-4 data plane: TLS (Passthrough and Terminate), TCP and UDP listeners (Gateway API
v1 TLSRoute, TCPRoute, UDPRoute); docs/architecture.md, "Layer 4".

- :mod:`.served`: what one snapshot gives the stream listeners (ports, route indexes, TLS
  contexts), swapped whole on each apply;
- :mod:`.server`: the listeners, each connection's routing and life, the drain of routes a
  snapshot removed;
- :mod:`.splice`: both directions of a connection with backpressure, half-close and an idle
  timeout;
- :mod:`.udp`: datagram sessions keyed by the client's address;
- :mod:`.metrics`: connections, bytes and sessions by listener and route.
"""

from coxswain.shell.dataplane.streams.server import StreamServer, StreamSettings

__all__ = ["StreamServer", "StreamSettings"]
