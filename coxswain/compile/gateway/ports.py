"""Internal port allocation for shared Gateways (docs/architecture.md, "Deployment models").

Each (Gateway, listener port) pair served by the shared pool gets its own internal port from
30000–32767, so that two Gateways listening on ``*.example.com:443`` stay apart by port.

Rules:
1. The only memory is what the caller passes as ``existing`` (the VIP Services' targetPorts):
   an in-band, unshared assignment is kept as it is.
2. Ports in ``reserved`` (still held by Services of departing Gateways) are not handed out.
3. New pairs take the lowest free port, in sorted (``ns/name``, port) order.
4. When the band is exhausted a pair gets None; its listeners report it.
Adding or removing a Gateway therefore never moves another Gateway's port.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["PORT_BAND", "allocate_ports"]

PORT_BAND: Final = range(30000, 32768)

PortPair = tuple[str, int]


def allocate_ports(
    pairs: Iterable[PortPair],
    existing: Mapping[PortPair, int],
    reserved: Iterable[int] = (),
) -> dict[PortPair, int | None]:
    """Assign an internal port to every (``ns/name``, listener port) pair. Pure."""
    wanted = sorted(set(pairs))
    taken: set[int] = set(reserved)
    assigned: dict[PortPair, int | None] = {}
    for pair in wanted:
        port = existing.get(pair)
        if port is not None and port in PORT_BAND and port not in taken:
            assigned[pair] = port
            taken.add(port)
    free = (p for p in PORT_BAND if p not in taken)
    for pair in wanted:
        if pair not in assigned:
            assigned[pair] = next(free, None)
    return assigned
