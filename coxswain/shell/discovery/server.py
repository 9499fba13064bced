"""The discovery transport's server, trio-facing (docs/contracts.md); the client is
:mod:`.client`, the wire constants both share are :mod:`.wire`.

Design (the trio ↔ asyncio bridge itself is :mod:`.aio_bridge`):
- ``grpc.aio`` rather than the threaded ``grpc.server``: a stream needs to wait on two things at
  once (the client's next Ack and the registry's next snapshot); in asyncio that is two tasks on
  one loop, where the threaded server would need two threads per stream.
- State crossing threads is immutable and replaced by reference: the fleet observation is a
  ``PMap`` rebuilt on the loop thread and read from trio; snapshots are frozen values.

Stream rules (server): a stream past a cap on open streams, of its identity (the client
certificate's URI SAN) or of the server, is RESOURCE_EXHAUSTED at once, before its first
message (:mod:`.limits`; each stream holds tasks, buffers and a fleet entry, and the caps bound
them whatever a certificate holder does); the first message must be Subscribe; a wrong
``wire_version`` is FAILED_PRECONDITION; no scope means SharedPool; a scope with no kind is
INVALID_ARGUMENT; the peer identity must be allowed the scope by the policy, else
PERMISSION_DENIED; a node id over ``MAX_NODE_ID`` is INVALID_ARGUMENT. Each refusal is counted
in ``coxswain_discovery_refused_streams_total`` by reason. Every warning about a client (a
refusal, an ignored report, a Nack, a grant change) is logged at most once per identity, kind
and ``LOG_INTERVAL`` (the rest are summed in the next line), with the client's text cut. An
unknown scope waits for its first snapshot. Then one snapshot is in flight per stream; newer
ones are coalesced until the Ack or Nack. A Nack keeps the stream. The policy is asked again
before each version is sent and at least every ``REVOKED_GRACE``: a stream whose identity lost
the scope's grant gets nothing newer, and is ended with PERMISSION_DENIED once the grant has
stayed away ``REVOKED_GRACE`` (grants flicker during a change).

Reports are bound to the stream that sends them: an Ack or Nack counts only for the version that
stream was sent last, a NodeStatus only for the ports of the stream's scope (the listener ports
of the versions it was sent and of the scope's current one; a claim of more than ``_CLAIMED``
ports is ignored whole); anything else is ignored, logged and counted in ``ignored_reports``,
and the stream stays (a stale Ack is a normal race, and a proxy
that reconnects still has the previous version's ports bound until the new one is applied). The
fleet is keyed by (identity, node id), so one identity cannot write another's entry, and an
entry is removed when its last stream ends: the fleet holds at most one entry per open stream.

Delivery of versions to streams (full Snapshots, Deltas, one message in flight per stream) is
:mod:`.delivery`; the wire version and message limits both ends share are :mod:`.wire`; the
fleet's entries are :mod:`.fleet`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, NoReturn, Protocol

import grpc
import trio
from prometheus_client import CollectorRegistry, Counter
from pyrsistent import pmap

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.scope import Scope, SharedPool
from coxswain.shell.discovery.aio_bridge import AsyncioThread
from coxswain.shell.discovery.delivery import ScopeSlot, StreamState, settle
from coxswain.shell.discovery.fleet import NodeKey, NodeObservation
from coxswain.shell.discovery.limits import (
    IDENTITY_STREAMS,
    SERVER_STREAMS,
    Bounds,
    LogBudget,
    StreamCounts,
    cut,
)
from coxswain.shell.discovery.policy import ScopePolicy, granted_by, still_allowed
from coxswain.shell.discovery.resources import ResourceCache, RuleBodies
from coxswain.shell.discovery.snapshot_decode import decode_scope
from coxswain.shell.discovery.tls import peer_identity, server_credentials
from coxswain.shell.discovery.wire import SERVER_GRPC_OPTIONS, WIRE_VERSION

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from pyrsistent.typing import PMap

    from coxswain.compile.snapshot import Snapshot
    from coxswain.shell.discovery.ca import ProxyIdentity
    from coxswain.shell.discovery.tls import (
        ServerCertificate,
        ServerCredentials,
    )

__all__ = [
    "LOG_INTERVAL",
    "MAX_NODE_ID",
    "MAX_STREAMS",
    "REFUSAL_REASONS",
    "REVOKED_GRACE",
    "STREAMS_PER_IDENTITY",
    "DiscoveryServer",
    "ScopePolicy",
    "granted_by",
    "open_discovery_server",
]

_log = logging.getLogger("coxswain.shell.discovery")

# POLICY: how long a stream whose identity lost the scope's grant is kept (getting nothing
# newer) before it is ended with PERMISSION_DENIED. Grants flicker while a Gateway changes
# (docs/contracts.md); a grant that stays away this long is gone. The grant is asked at least
# this often, so such a stream ends between one and two of these after the grant went.
REVOKED_GRACE: Final = 30.0
# POLICY: how many streams one identity may have open. Every worker of every proxy pod holds a
# stream of its own (coxswain/shell/dataplane/workers.py) and the shared pool's pods share one
# identity: 1,024 fits 100 pods of 8 workers through a rolling update's 25% surge (1,000
# streams). The same for every identity: a dedicated proxy's Deployment may scale as far.
STREAMS_PER_IDENTITY: Final = 1024
# POLICY: how many streams the server holds in all, whatever the number of identities (tenants
# make one with each dedicated Gateway). An idle stream costs the server about 30 KiB: 8,192
# of them about 240 MiB, within the chart's 512 MiB for the controller.
MAX_STREAMS: Final = 8192
# POLICY: how often one identity may make the server log a warning of one kind (a refused
# subscription); the warnings in between are counted in the next line (:class:`.LogBudget`).
LOG_INTERVAL: Final = 60.0
_NOT_GRANTED: Final = "not_granted"  # PERMISSION_DENIED: the policy does not grant the scope
_BAD_SUBSCRIBE: Final = "bad_subscribe"  # INVALID_ARGUMENT or FAILED_PRECONDITION
REFUSAL_REASONS: Final = (IDENTITY_STREAMS, SERVER_STREAMS, _NOT_GRANTED, _BAD_SUBSCRIBE)
"""The ``reason`` label of ``coxswain_discovery_refused_streams_total``: a fixed set, never
the identity (identities are not bounded)."""
# POLICY: how long fleet changes are gathered before trio hears of them: its readers (listeners'
# Programmed conditions) are not latency critical, and each wake has them read the whole fleet.
_FLEET_SIGNAL: Final = 0.01
# Bounds on what one stream's reports make the server hold (each times the streams open):
# a node id is a pod name (at most 253 characters) and its worker's slot; a Nack's detail is
# an error message, kept and logged cut to _DETAIL characters; a NodeStatus claims at most
# _CLAIMED ports, more than any scope has (the shared pool's internal band is 2,768 ports, plus
# its two Ingress ports; a Gateway has at most 64 listeners), else it is ignored whole.
MAX_NODE_ID: Final = 512
_DETAIL: Final = 1024
_CLAIMED: Final = 4096

# --- the server -----------------------------------------------------------------------------------


class _Aborts(Protocol):
    """What a refusal needs of a ``grpc.aio`` servicer context."""

    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn: ...


class DiscoveryServer:
    """A per-scope registry of the latest snapshot, served over gRPC. Build it with
    :func:`open_discovery_server`; :meth:`publish` and :attr:`fleet` are for trio code."""

    def __init__(
        self,
        bridge: AsyncioThread,
        policy: ScopePolicy | None,
        bounds: Bounds,
        registry: CollectorRegistry,
    ) -> None:
        self._bridge = bridge
        self._policy = policy
        self._revoked_grace = bounds.revoked_grace
        self._streams = StreamCounts(
            per_identity=bounds.streams_per_identity, total=bounds.max_streams
        )
        self._warnings = LogBudget(_log, bounds.log_interval)  # loop thread only
        self._slots: dict[Scope, ScopeSlot] = {}  # loop thread only
        self._caches: dict[Scope, ResourceCache] = {}  # one publish() at a time
        self._fleet: PMap[NodeKey, NodeObservation] = pmap()
        self._fleet_changed = trio.Event()
        self._signal_due = False  # loop thread only: a fleet signal to trio is scheduled
        self.port = 0
        # Counters, written on the loop thread and read anywhere:
        self.refused = Counter(
            "coxswain_discovery_refused_streams",
            "Discovery streams refused before their first snapshot, by reason: a cap on open "
            "streams (identity_streams, server_streams), no grant of the scope (not_granted), "
            "a Subscribe not understood (bad_subscribe)",
            ["reason"],
            registry=registry,
        )
        for reason in REFUSAL_REASONS:
            self.refused.labels(reason=reason)
        self.ignored_reports = 0  # Acks, Nacks and NodeStatus ports not bound to their stream
        self.revoked = 0  # streams ended because their grant stayed revoked

    # trio side

    def publish(self, scope: Scope, snapshot: Snapshot, rules: RuleBodies | None = None) -> None:
        """Make ``snapshot`` the latest for ``scope``; streams get it after their next Ack.

        The resources that changed since the scope's previous publish are encoded here, on the
        caller's thread: that costs what the change costs (all of it only at the first
        publish), and it keeps the server's loop, which every stream's Acks go through, free.
        A caller runs it in a worker thread (``shell.offload``), one call at a time. ``rules``:
        route rules encoded already by the same round (``resources.RuleBodies``).
        """
        cache = self._caches.setdefault(scope, ResourceCache())
        if cache.version == snapshot.version:
            return
        encoded = cache.encode(snapshot, rules)
        if encoded.sequence == 1:  # every stream takes the scope's first version in full
            encoded.full_message()  # spliced here once, not on the loop every stream shares
        self._bridge.call_soon(lambda: self._slot(scope).put(encoded))

    def publish_many(self, snapshots: Mapping[Scope, Snapshot]) -> None:
        """:meth:`publish` each scope's snapshot, in order (a round's, in one worker thread); a
        route rule that several scopes serve is encoded once."""
        rules: RuleBodies = {}
        for scope, snapshot in snapshots.items():
            self.publish(scope, snapshot, rules)

    @property
    def fleet(self) -> PMap[NodeKey, NodeObservation]:
        """Per (identity, node id) of an open stream: scope, acked version and bound ports
        (an immutable view)."""
        return self._fleet

    async def wait_fleet(
        self, predicate: Callable[[PMap[NodeKey, NodeObservation]], bool]
    ) -> PMap[NodeKey, NodeObservation]:
        """Wait until ``predicate(fleet)`` holds; returns that fleet."""
        while not predicate(fleet := self._fleet):
            await self._fleet_changed.wait()
        return fleet

    def _signal_fleet(self) -> None:
        self._fleet_changed.set()
        self._fleet_changed = trio.Event()

    # loop side

    def _slot(self, scope: Scope) -> ScopeSlot:
        slot = self._slots.get(scope)  # asked at every write: no ScopeSlot built to be dropped
        if slot is None:
            slot = self._slots[scope] = ScopeSlot()
        return slot

    def _set_fleet(self, fleet: PMap[NodeKey, NodeObservation]) -> None:
        """Replace the fleet; trio hears of it within ``_FLEET_SIGNAL``, once for all changes
        made meanwhile (a version reaching 1,000 streams brings 1,000 Acks)."""
        self._fleet = fleet
        if not self._signal_due:
            self._signal_due = True
            asyncio.get_running_loop().call_later(_FLEET_SIGNAL, self._send_fleet_signal)

    def _send_fleet_signal(self) -> None:
        self._signal_due = False
        with contextlib.suppress(trio.RunFinishedError):
            self._bridge.to_trio(self._signal_fleet)

    def _observe(self, key: NodeKey, **changes: Any) -> None:
        self._set_fleet(self._fleet.set(key, replace(self._fleet[key], **changes)))

    def _ignore(self, state: StreamState, what: str) -> None:
        """A report not bound to its stream: counted, and logged within its identity's budget
        (a client that sends such reports in a loop, on one stream or many, cannot flood the
        log)."""
        self.ignored_reports += 1
        self._warnings.warning(
            state.key[0], "ignored reports", f"discovery: {state.label}: ignored {what}"
        )

    async def Stream(self, request_iterator: AsyncIterator[pb.ClientMessage], context: Any) -> None:
        identity = peer_identity(context)
        who = identity.uri if identity is not None else "an insecure client"
        if (cap := self._streams.open(identity)) is not None:
            detail = (
                f"{who} has {self._streams.per_identity} discovery streams open, "
                "the most one identity may"
                if cap == IDENTITY_STREAMS
                else f"{who}: the server has {self._streams.total} discovery streams open, "
                "the most it holds"
            )
            await self._refuse(context, identity, cap, grpc.StatusCode.RESOURCE_EXHAUSTED, detail)
        key: NodeKey | None = None
        try:  # every end of the stream passes here: a refusal, an error, a cancelled call
            subscribe, scope = await self._subscription(context, identity, who)
            key = (identity, subscribe.node_id)
            known = self._fleet.get(key)
            if known is None:
                known = NodeObservation(node_id=subscribe.node_id, scope=scope, identity=identity)
            known = replace(known, scope=scope, live=known.live + 1, streams=known.streams + 1)
            self._set_fleet(self._fleet.set(key, known))
            label = f"{who} node {subscribe.node_id!r} stream {known.streams} of {scope}"
            state = StreamState(key=key, scope=scope, label=label, deltas=subscribe.accept_deltas)
            allowed = still_allowed(self._policy, self._warnings, identity, scope)
            await self._serve_stream(context, self._slot(scope), state, allowed)
        finally:  # on the server's one asyncio thread: no other stream changes these meanwhile
            self._streams.close(identity)
            if key is not None:
                live = self._fleet[key].live - 1
                if live:
                    self._observe(key, live=live)
                else:
                    self._set_fleet(self._fleet.discard(key))

    async def _subscription(
        self, context: Any, identity: ProxyIdentity | None, who: str
    ) -> tuple[pb.Subscribe, Scope]:
        """The stream's Subscribe and scope, once checked; else the stream is refused."""
        first = await context.read()
        if first is grpc.aio.EOF or first.WhichOneof("message") != "subscribe":
            await self._refuse(
                context,
                identity,
                _BAD_SUBSCRIBE,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{who}: expected Subscribe first",
            )
        subscribe: pb.Subscribe = first.subscribe
        if subscribe.wire_version != WIRE_VERSION:
            await self._refuse(
                context,
                identity,
                _BAD_SUBSCRIBE,
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{who}: wire_version {subscribe.wire_version} != {WIRE_VERSION}",
            )
        scope: Scope | None = SharedPool()
        if subscribe.HasField("scope"):
            scope = decode_scope(subscribe.scope)
        if scope is None:
            await self._refuse(
                context,
                identity,
                _BAD_SUBSCRIBE,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{who}: scope has no kind",
            )
        if len(subscribe.node_id) > MAX_NODE_ID:
            await self._refuse(
                context,
                identity,
                _BAD_SUBSCRIBE,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{who}: node_id of {len(subscribe.node_id)} characters, more than {MAX_NODE_ID}",
            )
        if self._policy is not None and (identity is None or not self._policy(identity, scope)):
            await self._refuse(
                context,
                identity,
                _NOT_GRANTED,
                grpc.StatusCode.PERMISSION_DENIED,
                f"{who} may not subscribe to {cut(str(scope))}",
            )
        return subscribe, scope

    async def _refuse(
        self,
        context: _Aborts,
        identity: ProxyIdentity | None,
        reason: str,
        code: grpc.StatusCode,
        detail: str,
    ) -> NoReturn:
        """End the stream with ``code``: counted by ``reason``, logged within the identity's
        budget (a certificate holder that is refused in a loop cannot flood the log)."""
        self.refused.labels(reason=reason).inc()
        self._warnings.warning(
            identity, "refused subscriptions", f"discovery: refused ({code.name}): {detail}"
        )
        await context.abort(code, detail)

    def _report(self, state: StreamState, kind: str, message: pb.ClientMessage) -> None:
        """Apply one Ack, Nack or NodeStatus of the stream, if it is bound to the stream."""
        if kind in ("ack", "nack"):
            body = getattr(message, kind)
            if body.version != state.sent:
                version = cut(repr(body.version))
                self._ignore(state, f"{kind} of {version}, not the version it was sent")
                return
            if state.in_flight:
                settle(state, acked=kind == "ack")
            if kind == "ack":
                self._observe(state.key, acked_version=body.version)
            else:
                detail = cut(body.detail, _DETAIL)
                self._warnings.warning(
                    state.key[0], "Nacks", f"discovery: {state.label} nacked {detail}"
                )
                self._observe(state.key, last_nack=f"{body.version}: {detail}")
        elif kind == "node_status":
            claimed = message.node_status.bound_ports
            if len(claimed) > _CLAIMED:
                self._ignore(state, f"a NodeStatus of {len(claimed)} ports, more than {_CLAIMED}")
                return
            state.claimed = frozenset(claimed)
            self._bind_ports(state, log=True)

    def _bind_ports(self, state: StreamState, *, log: bool) -> None:
        """The entry's bound ports: those the client claims that its scope has (the ports of
        the versions sent on the stream and of the scope's current one). Asked again at each
        version sent, so that a claim that came first (a proxy reports its ports as soon as it
        reconnects) counts once the version shows them; before any version it is not logged."""
        current = self._fleet[state.key]
        ports = state.claimed
        if not ports <= state.sent_ports:  # else all are the sent version's (the usual case,
            # cheaper than the union: the shared pool's versions have thousands of ports, and
            # this runs for every stream a version reaches)
            slot = self._slot(state.scope)
            scope_ports = state.sent_ports | state.base_ports
            if slot.current is not None:
                scope_ports |= slot.current.ports
            ports = ports & scope_ports
        if log and ports != state.claimed and state.sent is not None:
            outside = sorted(state.claimed - ports)
            shown = ", ".join(map(str, outside[:8])) + (", ..." if len(outside) > 8 else "")
            self._ignore(state, f"{len(outside)} ports outside its scope: {shown}")
        if ports != current.bound_ports:
            self._observe(state.key, bound_ports=ports)

    async def _serve_stream(
        self,
        context: Any,
        slot: ScopeSlot,
        state: StreamState,
        allowed: Callable[[], bool],
    ) -> None:
        wake = asyncio.Event()
        wake.set()

        async def read() -> None:
            try:
                while (message := await context.read()) is not grpc.aio.EOF:
                    kind = message.WhichOneof("message")
                    if kind in ("ack", "nack", "node_status"):
                        self._report(state, kind, message)
                    current = slot.current
                    # The writer wakes only when a version is due: most Acks are of the
                    # current one, and a wake per Ack is a loop turn per stream per version.
                    if (
                        not state.in_flight
                        and current is not None
                        and current.version != state.sent
                    ):
                        wake.set()
            finally:
                state.closed = True
                wake.set()

        loop = asyncio.get_running_loop()
        grace = self._revoked_grace
        # The grant is asked at least every ``grace``: a timer wakes the stream, re-armed when
        # it has rung (one timer per grace, not one per wait: a version reaching 1,000 streams
        # is 1,000 waits).
        rung = [False]

        def ring() -> None:
            rung[0] = True
            wake.set()

        timer = loop.call_later(grace, ring)
        slot.waiters.add(wake)
        slot.streams.add(state)
        reader = loop.create_task(read())
        revoked = False  # the grant was found missing, and the timer then set to ``grace``
        try:
            while True:
                await wake.wait()
                wake.clear()
                if state.closed:
                    return
                expired, rung[0] = rung[0], False
                if not allowed():
                    if revoked and expired:
                        self.revoked += 1
                        await context.abort(
                            grpc.StatusCode.PERMISSION_DENIED,
                            f"{state.label}: the grant stayed revoked",
                        )
                    if not revoked or expired:
                        revoked = True
                        timer.cancel()
                        timer = loop.call_later(grace, ring)
                    continue  # a new publish or the grace's end wakes the stream
                revoked = False
                if expired:
                    timer = loop.call_later(grace, ring)
                current = slot.current
                if state.in_flight or current is None or current.version == state.sent:
                    continue
                version, message, delta = slot.message_for(state)
                state.sent, state.sent_delta, state.in_flight = version.version, delta, True
                state.sent_ports = version.ports
                self._bind_ports(state, log=False)
                await context.write(message)
        finally:
            timer.cancel()
            slot.waiters.discard(wake)
            slot.streams.discard(state)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.RpcError):
                await reader


@contextlib.asynccontextmanager
async def open_discovery_server(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    credentials: ServerCredentials | ServerCertificate | None,
    policy: ScopePolicy | None,
    insecure: bool = False,
    revoked_grace: float = REVOKED_GRACE,
    streams_per_identity: int = STREAMS_PER_IDENTITY,
    max_streams: int = MAX_STREAMS,
    log_interval: float = LOG_INTERVAL,
    registry: CollectorRegistry | None = None,
) -> AsyncIterator[DiscoveryServer]:
    """Serve discovery until the block exits; the server's bound port is ``server.port``.

    Args:
        host: the address to bind.
        port: the port to bind; 0 picks a free one.
        credentials: mutual TLS material, renewed while the server runs when it is a
            :class:`~.discovery.tls.ServerCertificate`; required unless ``insecure``.
        policy: ``(identity, scope) -> bool``; required unless ``insecure``.
        insecure: plaintext, every subscription allowed. Only when explicitly asked.
        revoked_grace: seconds a stream whose grant was revoked is kept; ``REVOKED_GRACE``
            everywhere but in tests.
        streams_per_identity: streams one identity may have open; past it a new one is
            RESOURCE_EXHAUSTED (without TLS every client is the same, absent, identity).
        max_streams: streams the server holds in all; past it a new one is RESOURCE_EXHAUSTED.
        log_interval: seconds between two warnings of one kind about one identity;
            ``LOG_INTERVAL`` everywhere but in tests.
        registry: where ``coxswain_discovery_refused_streams_total`` is registered (the
            controller's, which its health port exposes); None keeps it to the server.
    """
    if not insecure and (credentials is None or policy is None):
        raise ValueError("mutual TLS needs credentials and a policy (or insecure=True)")
    bridge = AsyncioThread("coxswain-discovery-server")
    bounds = Bounds(
        revoked_grace=revoked_grace,
        streams_per_identity=streams_per_identity,
        max_streams=max_streams,
        log_interval=log_interval,
    )
    server = DiscoveryServer(
        bridge,
        None if insecure else policy,
        bounds,
        CollectorRegistry() if registry is None else registry,
    )
    bridge.start()
    try:
        grpc_server = await bridge.call(lambda: _start_server(server, host, port, credentials))
        try:
            yield server
        finally:
            with trio.CancelScope(shield=True):
                await bridge.call(lambda: grpc_server.stop(grace=None))
    finally:
        await bridge.stop()


async def _start_server(
    server: DiscoveryServer,
    host: str,
    port: int,
    credentials: ServerCredentials | ServerCertificate | None,
) -> Any:
    grpc_server = grpc.aio.server(options=SERVER_GRPC_OPTIONS)
    # Not the generated add_DiscoveryServicer_to_server: Stream writes ServerMessages already
    # serialised (once per version and base, shared by every stream), so the response
    # serializer passes the bytes through.
    handler = grpc.stream_stream_rpc_method_handler(
        server.Stream,
        request_deserializer=pb.ClientMessage.FromString,
        response_serializer=_as_is,
    )
    service = pb.DESCRIPTOR.services_by_name["Discovery"].full_name
    grpc_server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service, {"Stream": handler}),)
    )
    address = f"{host}:{port}"
    if credentials is None:
        server.port = grpc_server.add_insecure_port(address)
    else:
        server.port = grpc_server.add_secure_port(address, server_credentials(credentials))
    await grpc_server.start()
    return grpc_server


def _as_is(message: bytes) -> bytes:
    return message
