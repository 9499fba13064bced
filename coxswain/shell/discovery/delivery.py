"""Delivery of snapshots and deltas to the streams of one scope: the versions a scope keeps,
each stream's progress, and which message brings a stream's client to the current version.

Incremental delivery (``shell.discovery.resources``; for latency at 10,000 routes and 100
subscribers): a stream whose Subscribe set ``accept_deltas`` gets, after its first full
Snapshot, a Delta against the version it last Acked, as long as the server still holds that
version (the current one, the Acked bases of open streams, at most ``_RETAINED`` of them);
otherwise, and after a Nacked Delta, a full Snapshot. Each message is serialised once per
(base, version) and the same bytes are written to every stream that needs them: the server's
``Stream`` is registered with a pass-through response serializer. Encoding happens in
:meth:`.server.DiscoveryServer.publish`, on the publisher's thread and only for changed
resources, so the loop only splices and writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import asyncio

    from coxswain.compile.scope import Scope
    from coxswain.shell.discovery.fleet import NodeKey
    from coxswain.shell.discovery.resources import EncodedVersion

__all__ = ["ScopeSlot", "StreamState", "settle"]

# POLICY: how many versions a scope keeps as delta bases (each is one dict of parts; the
# encoded resources themselves are shared between versions). A stream further behind gets a
# full Snapshot.
_RETAINED: Final = 8


class ScopeSlot:
    """The latest encoded version of one scope, the versions kept as delta bases, and the
    streams waiting for a newer one."""

    def __init__(self) -> None:
        self.current: EncodedVersion | None = None
        self.bases: dict[str, EncodedVersion] = {}  # oldest first; includes current
        self.streams: set[StreamState] = set()
        self.waiters: set[asyncio.Event] = set()

    def put(self, encoded: EncodedVersion) -> None:
        """Make ``encoded`` current; keep as bases only the versions some stream has Acked or
        has in flight (its Ack is on the way), and the current one, at most ``_RETAINED``:
        memory stays bounded."""
        self.current = encoded
        self.bases.pop(encoded.version, None)
        self.bases[encoded.version] = encoded
        needed = {s.base for s in self.streams} | {s.sent for s in self.streams}
        needed.add(encoded.version)
        kept = [v for v in self.bases.values() if v.version in needed][-_RETAINED:]
        self.bases = {v.version: v for v in kept}
        for waiter in self.waiters:
            waiter.set()

    def message_for(self, state: StreamState) -> tuple[EncodedVersion, bytes, bool]:
        """The current version and the message that brings ``state``'s client to it: a
        Delta from its Acked base when it takes deltas and the base is kept, else full."""
        current = self.current
        assert current is not None
        base = self.bases.get(state.base) if state.deltas and state.base is not None else None
        if base is None:
            return current, current.full_message(), False
        return current, current.delta_message(base), True


@dataclass(slots=True, eq=False)
class StreamState:
    """One stream's progress; touched only by its two tasks on the loop thread."""

    key: NodeKey  # its fleet entry
    scope: Scope
    label: str  # for logs: identity, node id and the stream's number
    deltas: bool  # the client set Subscribe.accept_deltas
    sent: str | None = None  # the version last written
    sent_delta: bool = False  # ... as a Delta
    sent_ports: frozenset[int] = frozenset()  # ... its listener ports
    base: str | None = None  # the version last Acked on this stream: the next Delta's base
    base_ports: frozenset[int] = frozenset()  # ... its listener ports
    in_flight: bool = False  # written and neither Acked nor Nacked yet
    claimed: frozenset[int] = frozenset()  # the ports of the client's last NodeStatus
    closed: bool = False  # the client half-closed or the call ended


def settle(state: StreamState, *, acked: bool) -> None:
    """The client answered the message in flight. An Ack makes its version the next Delta's
    base; a Nacked Delta is followed by the same version in full (forgetting ``sent`` makes it
    due again, forgetting ``base`` makes it full), so a client that could not apply the Delta
    recovers at once; a Nacked full Snapshot waits for a newer version, as before deltas."""
    state.in_flight = False
    if acked:
        state.base, state.base_ports = state.sent, state.sent_ports
    elif state.sent_delta:
        state.sent = state.base = None
