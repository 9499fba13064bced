"""The discovery transport's client: a proxy's subscription, trio-facing (docs/contracts.md).

One stream at a time to the server of :mod:`.discovery.server`, over a ``grpc.aio`` channel on the
asyncio thread of :mod:`.aio_bridge`. Each snapshot (full, or a Delta applied to the snapshot
applied last on this stream) goes to ``on_snapshot``; returning Acks it, raising Nacks it. A
dropped stream is opened again with a jittered backoff; the codes of ``_PERMANENT`` end the
subscription instead (:class:`DiscoveryRefusedError`). Bound ports are reported as NodeStatus,
again after every reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from typing import TYPE_CHECKING, Any, Final, NoReturn

import grpc
import trio

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain._proto.discovery.v1 import discovery_pb2_grpc as pb_grpc
from coxswain.shell.backoff import Backoff
from coxswain.shell.discovery.aio_bridge import AsyncioThread, client_bridge
from coxswain.shell.discovery.codec import encode_scope
from coxswain.shell.discovery.delta_apply import apply_delta
from coxswain.shell.discovery.snapshot_decode import decode_snapshot
from coxswain.shell.discovery.tls import channel_credentials
from coxswain.shell.discovery.wire import CLIENT_GRPC_OPTIONS, WIRE_VERSION
from coxswain.shell.offload import offload

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from coxswain.compile.scope import Scope
    from coxswain.compile.snapshot import Snapshot
    from coxswain.shell.discovery.tls import ClientCredentials, CredentialFiles

__all__ = ["DiscoveryRefusedError", "stream_snapshots"]

_log = logging.getLogger("coxswain.shell.discovery_client")

# POLICY: these codes mean the subscription itself is wrong; retrying cannot help.
_PERMANENT: Final = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.PERMISSION_DENIED,
    }
)


class DiscoveryRefusedError(Exception):
    """The server refused the subscription with a permanent status code."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


async def stream_snapshots(
    address: str,
    *,
    node_id: str,
    scope: Scope | None,
    credentials: ClientCredentials | CredentialFiles | None,
    on_snapshot: Callable[[Snapshot], Awaitable[None]],
    bound_ports: trio.MemoryReceiveChannel[frozenset[int]] | None = None,
    backoff: tuple[float, float] = (0.1, 10.0),
    wire_version: int = WIRE_VERSION,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Subscribe to ``scope`` at ``address`` and hand each snapshot to ``on_snapshot``; never
    returns. Reconnects with jittered exponential backoff when the stream drops.

    Args:
        address: ``host:port`` of the discovery server.
        node_id: this proxy's name in the fleet observation.
        scope: the scope to subscribe to; None sends a Subscribe without scope (SharedPool).
        credentials: mutual TLS material (files are read again at each connection attempt);
            None means plaintext (``--insecure-discovery``).
        on_snapshot: applies a snapshot; returning Acks it, raising Nacks it with the error.
        bound_ports: each value that differs from the one before is reported as NodeStatus
            (and the last again on reconnect).
        backoff: first and maximum delay between attempts, in seconds.
        wire_version: sent in Subscribe; tests use it to provoke FAILED_PRECONDITION.
        task_status: ``started()`` once the loop thread runs.

    Raises:
        DiscoveryRefusedError: INVALID_ARGUMENT, FAILED_PRECONDITION or PERMISSION_DENIED.
    """
    async with client_bridge() as bridge:
        with _unwrap(DiscoveryRefusedError):
            await _stream_forever(
                bridge,
                address,
                node_id=node_id,
                scope=scope,
                credentials=credentials,
                on_snapshot=on_snapshot,
                bound_ports=bound_ports,
                backoff=backoff,
                wire_version=wire_version,
                task_status=task_status,
            )


@contextlib.contextmanager
def _unwrap(kind: type[BaseException]) -> Iterator[None]:
    """Re-raise a nursery's group as its one ``kind`` exception, when that is all it holds."""
    try:
        yield
    except BaseExceptionGroup as group:
        matched, rest = group.split(kind)
        leaves = list(_leaves(matched)) if matched is not None else []
        if rest is None and len(leaves) == 1:
            raise leaves[0] from None
        raise


async def _ended(call: Any) -> grpc.aio.AioRpcError:
    """The error a finished call ended with, as grpc.aio raises it from a read."""
    return grpc.aio.AioRpcError(
        await call.code(),
        await call.initial_metadata(),
        await call.trailing_metadata(),
        await call.details(),
    )


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off around a full decode, which allocates 100,000s of
    objects (10,000 routes) and none of them garbage: collections triggered by those
    allocations only walk the new snapshot. Measured at 10,000 routes: 317 ms with the
    collector, 132 ms without (a fresh process; 122 vs 97 ms with four snapshots alive).
    Safe with other threads: it is re-enabled only by whoever found it enabled, so it never
    stays off, and the proxy's own apply-time collection policy (``shell.dataplane.server``)
    follows."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _decode_full(message: pb.Snapshot) -> Snapshot:
    """``decode_snapshot`` with the collector paused: run in a worker thread (``offload``),
    as it takes tens of milliseconds at thousands of routes (docs/benchmarks.md, "Discovery")
    and the proxy's loop serves requests meanwhile."""
    with _collector_paused():
        return decode_snapshot(message)


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


async def _stream_forever(
    bridge: AsyncioThread,
    address: str,
    *,
    node_id: str,
    scope: Scope | None,
    credentials: ClientCredentials | CredentialFiles | None,
    on_snapshot: Callable[[Snapshot], Awaitable[None]],
    bound_ports: trio.MemoryReceiveChannel[frozenset[int]] | None,
    backoff: tuple[float, float],
    wire_version: int,
    task_status: trio.TaskStatus[None],
) -> NoReturn:
    ports: list[frozenset[int] | None] = [None]
    async with trio.open_nursery() as nursery:
        holder: list[trio.Event] | None = None
        if bound_ports is not None:
            holder = [trio.Event()]
            changed = holder

            async def follow_ports() -> None:
                async for value in bound_ports:
                    if value == ports[0]:  # a NodeStatus when they change (docs/contracts.md)
                        continue
                    ports[0] = value
                    changed[0].set()
                    changed[0] = trio.Event()

            nursery.start_soon(follow_ports)
        task_status.started()
        delays = Backoff(*backoff)
        while True:
            subscribe = pb.Subscribe(node_id=node_id, wire_version=wire_version, accept_deltas=True)
            if scope is not None:
                subscribe.scope.CopyFrom(encode_scope(scope))
            session = _ClientSession(bridge, address, credentials)
            try:
                await session.run(subscribe, on_snapshot, ports, holder)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in _PERMANENT:
                    raise DiscoveryRefusedError(exc.code(), exc.details() or "") from None
                _log.info("discovery: stream to %s dropped: %s", address, exc.code())
            if session.received:
                delays.reset()
            await delays.wait()


class _ClientSession:
    """One connection attempt: a channel, one Stream call, and its teardown. It holds the
    snapshot last applied on this stream: the base of the next Delta (a new stream starts
    with a full Snapshot, so nothing is carried across reconnects)."""

    def __init__(
        self,
        bridge: AsyncioThread,
        address: str,
        credentials: ClientCredentials | CredentialFiles | None,
    ) -> None:
        self._bridge = bridge
        self._address = address
        self._credentials = credentials
        self._write_lock = trio.Lock()
        self._applied: Snapshot | None = None
        self.received = False

    async def run(
        self,
        subscribe: pb.Subscribe,
        on_snapshot: Callable[[Snapshot], Awaitable[None]],
        ports: list[frozenset[int] | None],
        ports_changed: list[trio.Event] | None,
    ) -> None:
        """Subscribe and apply what arrives until the server ends the stream (``received``
        says whether anything was applied)."""
        channel, call = await self._bridge.call(self._open)
        try:
            await self._write(call, pb.ClientMessage(subscribe=subscribe))
            with _unwrap(grpc.aio.AioRpcError):
                async with trio.open_nursery() as nursery:
                    if ports_changed is not None:
                        nursery.start_soon(self._report_ports, call, ports, ports_changed)
                    while True:
                        message = await self._bridge.call(call.read)
                        if message is grpc.aio.EOF:
                            nursery.cancel_scope.cancel()
                            return
                        await self._apply(call, message, on_snapshot)
        finally:
            with trio.CancelScope(shield=True):
                await self._bridge.call(lambda: channel.close(grace=None))

    async def _open(self) -> tuple[Any, Any]:
        if self._credentials is None:
            channel = grpc.aio.insecure_channel(self._address, options=CLIENT_GRPC_OPTIONS)
        else:
            creds = channel_credentials(self._credentials)
            channel = grpc.aio.secure_channel(self._address, creds, options=CLIENT_GRPC_OPTIONS)
        return channel, pb_grpc.DiscoveryStub(channel).Stream()

    async def _write(self, call: Any, message: pb.ClientMessage) -> None:
        async with self._write_lock:
            try:
                await self._bridge.call(lambda: call.write(message))
            except asyncio.InvalidStateError:
                # The call ended before this write (the server went away between the channel
                # opening and the Subscribe): its status says why, as a read would have.
                raise await self._bridge.call(lambda: _ended(call)) from None

    async def _apply(
        self,
        call: Any,
        message: pb.ServerMessage,
        on_snapshot: Callable[[Snapshot], Awaitable[None]],
    ) -> None:
        delta = message.WhichOneof("message") == "delta"
        version = message.delta.version if delta else message.snapshot.version
        try:
            if delta:
                snapshot = self._decode(message.delta)
            else:
                snapshot = await offload(_decode_full, message.snapshot)
            await on_snapshot(snapshot)
        except Exception as exc:  # noqa: BLE001 - any refusal becomes a Nack, not a crash
            nack = pb.Nack(version=version, detail=f"{type(exc).__name__}: {exc}")
            await self._write(call, pb.ClientMessage(nack=nack))
            return
        self._applied = snapshot
        self.received = True
        await self._write(call, pb.ClientMessage(ack=pb.Ack(version=version)))

    def _decode(self, delta: pb.Delta) -> Snapshot:
        """The snapshot a Delta makes of the one applied last (a Nack when there is none)."""
        if self._applied is None:
            raise ValueError(f"delta to {delta.version!r} before any snapshot")
        return apply_delta(self._applied, delta)

    async def _report_ports(
        self, call: Any, ports: list[frozenset[int] | None], changed: list[trio.Event]
    ) -> None:
        while True:
            event = changed[0]
            if ports[0] is not None:
                status = pb.NodeStatus(bound_ports=sorted(ports[0]))
                await self._write(call, pb.ClientMessage(node_status=status))
            await event.wait()
