"""A Delta applied to the snapshot a proxy holds: the client half of incremental discovery
(``shell.discovery.resources`` is the server half and owns the split into resources;
docs/contracts.md).

Pure. The upserted resources are decoded with the readers a full decode uses
(``snapshot_decode``), and the persistent maps of the snapshot held are patched, so the result
is the value a full decode of the same version gives (``tests/property/test_codec_props.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.snapshot import IngressTable, ListenerTable, Snapshot
from coxswain.shell.discovery.resources import HEAD, Key, snapshot_head
from coxswain.shell.discovery.snapshot_decode import decode_resource

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.snapshot import ListenerHealth

__all__ = ["apply_delta"]

_K = pb.ResourceKey
_REMOVED: Final = object()  # a key the delta removes


def apply_delta(base: Snapshot, delta: pb.Delta) -> Snapshot:
    """The snapshot ``delta`` makes of ``base``: the same value
    ``snapshot_decode.decode_snapshot`` gives for the full message of ``delta.version``. Only
    the upserted resources are decoded; the persistent maps of ``base`` are patched, so
    unchanged parts are shared, not rebuilt.

    The version is the server's: recomputing the content hash (``snapshot_json.seal``) would
    cost about as much as the full decode this avoids; instead the base must be exactly the
    version this client holds, and every patch must land on a key that exists (removals) or a
    parent that exists (route hosts, certificates).

    Raises:
        ValueError: the delta is not against ``base``, or does not fit it.
    """
    if delta.base_version != base.version:
        raise ValueError(f"delta against {delta.base_version!r}, holding {base.version!r}")
    changes: dict[Key, Any] = {}
    for key in delta.removed:
        changes[(key.kind, key.port, key.name, key.host)] = _REMOVED
    for resource in delta.upserts:
        key = resource.key
        changes[(key.kind, key.port, key.name, key.host)] = decode_resource(resource)
    if changes.get(HEAD) is _REMOVED:
        raise ValueError("a delta cannot remove the head")
    http_port, https_port, tls_ports, client_cert_ports = changes.get(HEAD) or snapshot_head(base)
    by_kind = _by_kind(changes)
    return Snapshot(
        version=delta.version,
        scope=base.scope,
        ingress=IngressTable(
            http_port=http_port,
            https_port=https_port,
            hosts=_patched(base.ingress.hosts, _by_name(by_kind.get(_K.INGRESS_HOST))),
        ),
        gateways=_patched_gateways(
            base.gateways, by_kind.get(_K.LISTENER, {}), by_kind.get(_K.ROUTE_HOST, {})
        ),
        tls=_patched_ports(base.tls, tls_ports, by_kind.get(_K.CERTIFICATE, {})),
        client_certs=_patched_ports(
            base.client_certs, client_cert_ports, by_kind.get(_K.CLIENT_CERT, {})
        ),
        listener_health=_patched_list(base.listener_health, by_kind.get(_K.LISTENER_HEALTH)),
        endpoints=_patched(base.endpoints, _by_name(by_kind.get(_K.ENDPOINTS))),
    )


def _by_kind(changes: Mapping[Key, Any]) -> dict[int, dict[Key, Any]]:
    grouped: dict[int, dict[Key, Any]] = {}
    for key, value in changes.items():
        grouped.setdefault(key[0], {})[key] = value
    return grouped


def _by_name(changes: Mapping[Key, Any] | None) -> dict[str, Any]:
    return {name: value for (_, _, name, _), value in (changes or {}).items()}


def _patched(base: PMap[Any, Any], changes: Mapping[Any, Any]) -> PMap[Any, Any]:
    """``base`` with ``changes`` applied (``_REMOVED`` deletes; the key must exist)."""
    if not changes:
        return base
    evolver = base.evolver()
    for key, value in changes.items():
        if value is not _REMOVED:
            evolver[key] = value
        elif key in base:  # changes has each key once: base is what the evolver held
            del evolver[key]
        else:
            raise ValueError(f"a delta removes {key!r}, which the base does not hold")
    return evolver.persistent()


def _patched_ports(
    base: PMap[int, PMap[str, Any]], ports: Iterable[int], changes: Mapping[Key, Any]
) -> PMap[int, PMap[str, Any]]:
    """A port → host map: exactly the head's ``ports``, each patched by its changes."""
    per_port: dict[int, dict[str, Any]] = {}
    for (_, port, name, _), value in changes.items():
        per_port.setdefault(port, {})[name] = value
    kept = set(ports)
    for port, entries in per_port.items():
        if port not in kept and any(v is not _REMOVED for v in entries.values()):
            raise ValueError(f"a delta adds to port {port}, which its head does not list")
    if not per_port and kept == set(base):
        return base
    return pmap({port: _patched(base.get(port, pmap()), per_port.get(port, {})) for port in kept})


def _patched_gateways(
    base: PMap[int, PMap[str, ListenerTable]],
    listeners: Mapping[Key, Any],
    routes: Mapping[Key, Any],
) -> PMap[int, PMap[str, ListenerTable]]:
    """Listener heads and route hosts patched into the port → hostname → table map; a port
    left with no listener is dropped, as a full encode never writes an empty one."""
    heads = {(port, name): value for (_, port, name, _), value in listeners.items()}
    hosts: dict[tuple[int, str], dict[str, Any]] = {}
    for (_, port, name, host), value in routes.items():
        hosts.setdefault((port, name), {})[host] = value
    per_port: dict[int, dict[str, Any]] = {}
    for port, name in heads.keys() | hosts.keys():
        table = _patched_table(base.get(port, pmap()).get(name), heads, hosts, (port, name))
        per_port.setdefault(port, {})[name] = table
    if not per_port:
        return base
    evolver = base.evolver()
    for port, changes in per_port.items():
        tables = _patched(base.get(port, pmap()), changes)
        if tables:
            evolver[port] = tables
        elif port in base:
            del evolver[port]
    return evolver.persistent()


def _patched_table(
    table: ListenerTable | None,
    heads: Mapping[tuple[int, str], Any],
    hosts: Mapping[tuple[int, str], Mapping[str, Any]],
    place: tuple[int, str],
) -> Any:
    head = heads.get(place, table)
    if head is _REMOVED:
        return _REMOVED
    if head is None:
        raise ValueError(f"a delta patches listener {place!r}, which does not exist")
    routes = table.hosts if table is not None else pmap()
    return replace(head, hosts=_patched(routes, hosts.get(place, {})))


def _patched_list(
    base: PVector[ListenerHealth], changes: Mapping[Key, Any] | None
) -> PVector[ListenerHealth]:
    """Listener health by position: the result must be positions 0..n-1 exactly."""
    if not changes:
        return base
    entries = dict(enumerate(base))
    for (_, index, _, _), value in changes.items():
        if value is _REMOVED:
            if entries.pop(index, None) is None:
                raise ValueError(f"a delta removes listener health {index}, which is not there")
        else:
            entries[index] = value
    if sorted(entries) != list(range(len(entries))):
        raise ValueError("listener health positions are not contiguous after the delta")
    return pvector(entries[i] for i in range(len(entries)))
