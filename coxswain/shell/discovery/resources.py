"""The Snapshot as keyed resources: incremental discovery (docs/contracts.md).

A 10,000-route snapshot is megabytes of protobuf and a tenth of a second to encode or decode
(docs/benchmarks.md, "Discovery"), while a controller's typical publish changes one route or one
endpoint list. So the snapshot is split into resources (``discovery.proto``, ``ResourceKey``):
the head (Ingress ports, TLS and client-cert ports), one per Ingress host, per listener and per
(listener, route host), per TLS and client-cert (port, host), per listener-health position and
per endpoints key. Then:

- the server (:class:`ResourceCache`, one per scope) encodes a resource only when its value
  changed since the previous publish, and keeps each version as a map of key to encoded part
  (:class:`EncodedVersion`); an unchanged part is the same object in every version, so a
  delta between two versions is an identity diff of two dicts, and a full ``Snapshot`` is
  spliced from the parts' wire fragments instead of encoded again;
- the client (:func:`apply_delta`) decodes only the upserted resources and patches the
  persistent maps of the snapshot it holds, which gives the same value a full decode would
  (``tests/property/test_codec_props.py``).

Value equality is the cache's test: the compiler builds equal values for unchanged inputs, and
comparing costs less than encoding, and much less when they are the same objects (the identity
check first): docs/benchmarks.md, "Measurements behind the design".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap, pvector

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.compile.snapshot import IngressTable, ListenerTable, Snapshot
from coxswain.shell.discovery.codec import (
    RESOURCE_BODIES,
    encode_resource,
    encode_rule,
    encode_scope,
)
from coxswain.shell.discovery.snapshot_decode import decode_resource

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.snapshot import GatewayRule, ListenerHealth

__all__ = ["EncodedVersion", "Key", "ResourceCache", "RuleBodies", "apply_delta", "resources"]

Key = tuple[int, int, str, str]
"""A resource's place: (``ResourceKey.Kind``, port, name, host), as in ``pb.ResourceKey``."""

RuleBodies = dict[int, tuple["GatewayRule", bytes]]
"""Encoded route rules by identity (the rule is kept, so its ``id`` is not reused), for the
scopes of one publish: the compiler hands the same rule object to every listener and scope
that serves it (at a cold start of ``bench/controller_scale.py``, 250,000 rules of route
hosts are 100,000 objects), and each is encoded once."""

_K = pb.ResourceKey
HEAD: Final[Key] = (_K.HEAD, 0, "", "")
_NO_HOSTS: Final[PMap[str, Any]] = pmap()
_REMOVED: Final = object()  # a key the delta removes

# The field number of each kind's body in pb.Resource, from the codec's names for them.
_BODY_FIELD: Final[dict[int, int]] = {
    kind: pb.Resource.DESCRIPTOR.fields_by_name[name].number
    for kind, name in RESOURCE_BODIES.items()
}


# --- the split ----------------------------------------------------------------------------------


def _head(snapshot: Snapshot) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    ingress = snapshot.ingress
    return (
        ingress.http_port,
        ingress.https_port,
        tuple(sorted(snapshot.tls)),
        tuple(sorted(snapshot.client_certs)),
    )


def resources(snapshot: Snapshot) -> Iterator[tuple[Key, Any]]:
    """Every resource of ``snapshot`` with the value ``codec.encode_resource`` takes for it.
    The scope and version are not resources: a stream's scope is fixed, the version is the
    message's. A listener's value is its table without hosts (each host is a resource)."""
    yield HEAD, _head(snapshot)
    for host, vhost in snapshot.ingress.hosts.items():
        yield (_K.INGRESS_HOST, 0, host, ""), vhost
    for port, tables in snapshot.gateways.items():
        for hostname, table in tables.items():
            yield (_K.LISTENER, port, hostname, ""), replace(table, hosts=_NO_HOSTS)
            for host, rules in table.hosts.items():
                yield (_K.ROUTE_HOST, port, hostname, host), rules
    for port, certificates in snapshot.tls.items():
        for host, certificate in certificates.items():
            yield (_K.CERTIFICATE, port, host, ""), certificate
    for port, validations in snapshot.client_certs.items():
        for host, validation in validations.items():
            yield (_K.CLIENT_CERT, port, host, ""), validation
    for index, health in enumerate(snapshot.listener_health):
        yield (_K.LISTENER_HEALTH, index, "", ""), health
    for name, endpoints in snapshot.endpoints.items():
        yield (_K.ENDPOINTS, 0, name, ""), endpoints


# --- protobuf wire fragments --------------------------------------------------------------------


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL: Final = tuple(bytes([n]) for n in range(0x80))


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or sub-message), as protobuf writes it."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _number(number: int, value: int) -> bytes:
    """A varint field."""
    return _varint(number << 3) + _varint(value)


def _entry(name: str, value: bytes) -> bytes:
    """A ``map<string, ...>`` entry's content."""
    return _field(1, name.encode()) + _field(2, value)


def _port_entry(port: int, value: bytes) -> bytes:
    """A ``map<uint32, ...>`` entry's content."""
    return _number(1, port) + _field(2, value)


def _fragment(key: Key, body: bytes) -> bytes:
    """The resource as its parent in the full ``Snapshot`` holds it (field numbers from
    ``discovery.proto``: IngressTable.hosts 3, ListenerTable.hosts 6, Certificates.by_host and
    ClientValidations.by_host 1, Snapshot.listener_health 8, Snapshot.endpoints 9). A
    listener's own fields and the head are spliced by :class:`_Splice`."""
    kind, _, name, host = key
    if kind == _K.INGRESS_HOST:
        return _field(3, _entry(name, body))
    if kind == _K.ROUTE_HOST:
        return _field(6, _entry(host, body))
    if kind in (_K.CERTIFICATE, _K.CLIENT_CERT):
        return _field(1, _entry(name, body))
    if kind == _K.LISTENER_HEALTH:
        return _field(8, body)
    if kind == _K.ENDPOINTS:
        return _field(9, _entry(name, body))
    return body


def _route_host_body(rules: Iterable[GatewayRule], known: RuleBodies) -> bytes:
    """``encode_resource`` of a route host, spliced: ``pb.Rules`` holds its rules as repeated
    field 1, each the bytes ``encode_rule`` gives (``known``'s when encoded already)."""
    parts = []
    for rule in rules:
        hit = known.get(id(rule))
        if hit is None:
            hit = known[id(rule)] = (rule, encode_rule(rule))
        parts.append(_field(1, hit[1]))
    return b"".join(parts)


def _key_message(key: Key) -> bytes:
    kind, port, name, host = key
    return pb.ResourceKey(kind=kind, port=port, name=name, host=host).SerializeToString()  # type: ignore[arg-type]


# --- the server side ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Part:
    """One encoded resource: its body message and its fragment in the full Snapshot."""

    body: bytes
    fragment: bytes


@dataclass(slots=True, eq=False)
class EncodedVersion:
    """One published version of a scope as encoded parts; the messages built from it are
    cached (the server's loop thread is their only user once the version is handed over)."""

    version: str
    sequence: int  # its cache's publish count: the previous encoding has sequence - 1
    scope: bytes  # the encoded pb.Scope
    parts: dict[Key, _Part]
    changed: list[Key]  # re-encoded since the previous encoding (every key at the first)
    removed: list[Key]  # gone since the previous encoding
    ports: frozenset[int]  # the listener ports a proxy serving it binds: what it may report
    _full: bytes | None = None
    _deltas: dict[str, bytes] = field(default_factory=dict)

    def full_message(self) -> bytes:
        """The serialised ``ServerMessage`` carrying this version as a full ``Snapshot``."""
        if self._full is None:
            self._full = _field(1, self._full_snapshot())
        return self._full

    def delta_message(self, base: EncodedVersion) -> bytes:
        """The serialised ``ServerMessage`` carrying the ``Delta`` from ``base`` to this."""
        cached = self._deltas.get(base.version)
        if cached is None:
            cached = self._deltas[base.version] = _field(2, self._delta(base))
        return cached

    def _delta(self, base: EncodedVersion) -> bytes:
        upserts, removed = self._changes(base)
        out = [
            _field(1, self.version.encode()),
            _number(2, self.sequence),
            _field(3, base.version.encode()),
        ]
        for key in upserts:
            body = self.parts[key].body
            resource = _field(1, _key_message(key)) + _field(_BODY_FIELD[key[0]], body)
            out.append(_field(4, resource))
        out.extend(_field(5, _key_message(key)) for key in removed)
        return b"".join(out)

    def _changes(self, base: EncodedVersion) -> tuple[Iterable[Key], Iterable[Key]]:
        """Keys to upsert and to remove from ``base``: what the encoding noted when ``base``
        is the previous one (the common case: every stream acked it), else an identity diff
        of the two versions' parts (10-14 ms at 10,000 routes, docs/benchmarks.md)."""
        if base.sequence == self.sequence - 1:
            return self.changed, self.removed
        old = base.parts
        upserts = [key for key, part in self.parts.items() if old.get(key) is not part]
        return upserts, old.keys() - self.parts.keys()

    def _full_snapshot(self) -> bytes:
        splice = _Splice.of(self.parts)
        return splice.snapshot(self.version, self.sequence, self.scope)


@dataclass(slots=True)
class _Splice:
    """One version's fragments grouped by their parent in the full ``Snapshot`` (field
    numbers from ``discovery.proto``); the head's TLS and client-cert ports seed their maps,
    so a port with no entry is still written, as ``encode_snapshot`` writes it."""

    ingress: list[bytes]
    tls: dict[int, list[bytes]]
    client_certs: dict[int, list[bytes]]
    listeners: dict[int, dict[str, list[bytes]]] = field(default_factory=dict)
    health: list[tuple[int, bytes]] = field(default_factory=list)
    endpoints: list[bytes] = field(default_factory=list)

    @classmethod
    def of(cls, parts: Mapping[Key, _Part]) -> _Splice:
        head = pb.SnapshotHead.FromString(parts[HEAD].body)
        splice = cls(
            ingress=[_number(1, head.http_port), _number(2, head.https_port)],
            tls={port: [] for port in head.tls_ports},
            client_certs={port: [] for port in head.client_cert_ports},
        )
        for key, part in parts.items():
            splice.add(key, part.fragment)
        return splice

    def add(self, key: Key, fragment: bytes) -> None:
        kind, port, name, _ = key
        if kind == _K.INGRESS_HOST:
            self.ingress.append(fragment)
        elif kind in (_K.LISTENER, _K.ROUTE_HOST):
            self.listeners.setdefault(port, {}).setdefault(name, []).append(fragment)
        elif kind == _K.CERTIFICATE:
            self.tls[port].append(fragment)
        elif kind == _K.CLIENT_CERT:
            self.client_certs[port].append(fragment)
        elif kind == _K.LISTENER_HEALTH:
            self.health.append((port, fragment))
        elif kind == _K.ENDPOINTS:
            self.endpoints.append(fragment)

    def snapshot(self, version: str, sequence: int, scope: bytes) -> bytes:
        out = [
            _field(1, version.encode()),
            _number(2, sequence),
            _field(3, scope),
            _field(4, b"".join(self.ingress)),
        ]
        for port, tables in self.listeners.items():
            by_hostname = b"".join(_field(1, _entry(h, b"".join(p))) for h, p in tables.items())
            out.append(_field(5, _port_entry(port, by_hostname)))
        out.extend(_field(6, _port_entry(p, b"".join(e))) for p, e in self.tls.items())
        out.extend(_field(7, _port_entry(p, b"".join(e))) for p, e in self.client_certs.items())
        out.extend(fragment for _, fragment in sorted(self.health))
        out.extend(self.endpoints)
        return b"".join(out)


class ResourceCache:
    """The encoded resources of the latest snapshot published for one scope.

    :meth:`encode` re-encodes only the resources whose key is new or whose value differs from
    the previous publish's; the others keep their ``_Part`` (the same object), which is what
    makes :meth:`EncodedVersion.delta_message` an identity diff. It holds one generation of
    values and parts: memory stays one snapshot's worth whatever the publish rate.
    """

    def __init__(self) -> None:
        self._last: dict[Key, tuple[Any, _Part]] = {}
        self.version: str | None = None
        self.sequence = 0

    def encode(self, snapshot: Snapshot, rules: RuleBodies | None = None) -> EncodedVersion:
        """``snapshot`` as parts; the publish sequence counts the encoded versions. ``rules``:
        the rules encoded already, shared with the other scopes of the same publish."""
        known: RuleBodies = {} if rules is None else rules
        last = self._last
        current: dict[Key, tuple[Any, _Part]] = {}
        changed: list[Key] = []
        kept = 0  # keys of the previous encoding still present
        for key, value in resources(snapshot):
            hit = last.get(key)
            kept += hit is not None
            if hit is None or (hit[0] is not value and hit[0] != value):
                body = (
                    _route_host_body(value, known)
                    if key[0] == _K.ROUTE_HOST
                    else encode_resource(key[0], value)
                )
                hit = (value, _Part(body, _fragment(key, body)))
                changed.append(key)
            current[key] = hit
        removed = [] if kept == len(last) else [key for key in last if key not in current]
        self._last = current
        self.version = snapshot.version
        self.sequence += 1
        return EncodedVersion(
            version=snapshot.version,
            sequence=self.sequence,
            scope=encode_scope(snapshot.scope).SerializeToString(),
            parts={key: part for key, (_, part) in current.items()},
            changed=changed,
            removed=removed,
            ports=frozenset(
                h.target_port for h in snapshot.listener_health if h.ready and h.target_port
            ),
        )


# --- the client side ----------------------------------------------------------------------------


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
    http_port, https_port, tls_ports, client_cert_ports = changes.get(HEAD) or _head(base)
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
    routes = table.hosts if table is not None else _NO_HOSTS
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
