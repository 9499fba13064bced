"""Internal port allocation for shared Gateways (docs/architecture.md, "Deployment models").

Each (Gateway, listener port) pair served by the shared pool gets its own internal port from
30000–32767, so that two Gateways listening on ``*.example.com:443`` stay apart by port.

Rules:
1. The only memory is what the caller passes as ``existing`` (the VIP Services' targetPorts):
   an in-band, unshared assignment is kept as it is.
2. Ports in ``reserved`` (still held by Services of departing Gateways) are not handed out.
3. New pairs take the lowest free port, in sorted (``ns/name``, port) order.
4. When the band is exhausted a pair gets None; its listeners report it.
5. A namespace gets at most ``share`` ports (``CompileConfig.shared_ports_per_namespace``), so
   that one tenant cannot take the band from the others: its pairs that already hold an
   in-band port count first, then the rest in sorted order; the pairs past the share get None
   (``outside_share``), whatever room the band has left.
Adding or removing a Gateway therefore never moves another Gateway's port, and the result
depends only on the sets given, not on their order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["PORT_BAND", "allocate_ports", "outside_share"]

PORT_BAND: Final = range(30000, 32768)

PortPair = tuple[str, int]


def outside_share(
    pairs: Iterable[PortPair], existing: Mapping[PortPair, int], share: int
) -> frozenset[PortPair]:
    """The pairs past their namespace's ``share`` of the band (rule 5); a share of the whole
    band limits nothing (rule 4 then speaks). Pure."""
    if share >= len(PORT_BAND):
        return frozenset()
    by_namespace: dict[str, list[PortPair]] = {}
    for pair in set(pairs):
        by_namespace.setdefault(pair[0].partition("/")[0], []).append(pair)
    refused: set[PortPair] = set()
    for found in by_namespace.values():
        # ``None in range`` scans the whole band: test for None first.
        found.sort(key=lambda pair: (not _in_band(existing.get(pair)), pair))
        refused.update(found[max(share, 0) :])
    return frozenset(refused)


def _in_band(port: int | None) -> bool:
    return port is not None and port in PORT_BAND


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
