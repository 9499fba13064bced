"""The Snapshot as keyed resources: incremental discovery (docs/contracts.md).

A 10,000-route snapshot is megabytes of protobuf and a tenth of a second to encode or decode
(docs/benchmarks.md, "Discovery"), while a controller's typical publish changes one route or one
endpoint list. So the snapshot is split into resources (``discovery.proto``, ``ResourceKey``):
the head (Ingress ports, TLS and client-cert ports), one per Ingress host, per listener and per
(listener, route host), per TLS and client-cert (port, host), per listener-health position and
per endpoints key. Then:

- the server (:class:`ResourceCache`, one per scope) visits only the groups of resources
  whose holding value is another object than at the previous publish (a listener's table, a
  port's certificates, the endpoints map: the compiler hands on the same object when nothing
  in it changed), encodes a resource only when its value changed, and keeps each version as
  groups of encoded parts (:class:`EncodedVersion`); an unchanged group or part is the same
  object in every version, so a delta between two versions is an identity diff, and a full
  ``Snapshot`` is spliced from the parts' wire fragments instead of encoded again;
- the client (``delta_apply.apply_delta``) decodes only the upserted resources and patches
  the persistent maps of the snapshot it holds.

Value equality is the cache's test: the compiler builds equal values for unchanged inputs, and
comparing costs less than encoding, and much less when they are the same objects (the identity
check first): docs/benchmarks.md, "Measurements behind the design".
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap

from coxswain._proto.discovery.v1 import discovery_pb2 as pb
from coxswain.shell.discovery.codec import (
    RESOURCE_BODIES,
    encode_resource,
    encode_rule,
    encode_scope,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.snapshot import GatewayRule, ListenerHealth, ListenerTable, Snapshot

__all__ = [
    "HEAD",
    "EncodedVersion",
    "Group",
    "Key",
    "ResourceCache",
    "RuleBodies",
    "resources",
    "snapshot_head",
]

Key = tuple[int, int, str, str]
"""A resource's place: (``ResourceKey.Kind``, port, name, host), as in ``pb.ResourceKey``."""

RuleBodies = dict[int, tuple["GatewayRule", bytes]]
"""Encoded route rules by identity (the rule is kept, so its ``id`` is not reused), for the
scopes of one publish: the compiler hands the same rule object to every listener and scope
that serves it (at a cold start of ``bench/controller_scale.py``, 250,000 rules of route
hosts are 100,000 objects), and each is encoded once."""

_K = pb.ResourceKey
HEAD: Final[Key] = (_K.HEAD, 0, "", "")
_HEAD_GROUP: Final = (_K.HEAD, 0, "")
_ENDPOINTS_GROUP: Final = (_K.ENDPOINTS, 0, "")
_NO_HOSTS: Final[PMap[str, Any]] = pmap()

# The field number of each kind's body in pb.Resource, from the codec's names for them.
_BODY_FIELD: Final[dict[int, int]] = {
    kind: pb.Resource.DESCRIPTOR.fields_by_name[name].number
    for kind, name in RESOURCE_BODIES.items()
}


# --- the split ----------------------------------------------------------------------------------


def snapshot_head(snapshot: Snapshot) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
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
    for _, _, members in _groups(snapshot):
        yield from members()


Group = tuple[int, int, str]
"""A set of resources that one value of the snapshot holds: (kind, port, name) of the head,
the Ingress hosts, a listener (its table and its route hosts), a port's certificates or
client validations, the listener health list, the endpoints."""


def _groups(
    snapshot: Snapshot, listeners: bool = True
) -> Iterator[tuple[Group, object, Callable[[], Iterator[tuple[Key, Any]]]]]:
    """Each group of ``snapshot`` in the order of a full Snapshot: its key, the value that
    holds its resources (the same object in the next snapshot when none of them changed: the
    compiler reuses what an unchanged input gave), and its resources, made only when asked.
    ``listeners`` False: none of the listeners' groups."""
    head = snapshot_head(snapshot)
    yield _HEAD_GROUP, head, lambda: iter(((HEAD, head),))
    hosts = snapshot.ingress.hosts
    yield (_K.INGRESS_HOST, 0, ""), hosts, lambda: _ingress_hosts(hosts)
    for port, tables in snapshot.gateways.items() if listeners else ():
        for hostname, table in tables.items():
            yield (_K.LISTENER, port, hostname), table, partial(_listener, port, hostname, table)
    for port, certificates in snapshot.tls.items():
        yield (
            (_K.CERTIFICATE, port, ""),
            certificates,
            partial(_by_host, _K.CERTIFICATE, port, certificates),
        )
    for port, validations in snapshot.client_certs.items():
        yield (
            (_K.CLIENT_CERT, port, ""),
            validations,
            partial(_by_host, _K.CLIENT_CERT, port, validations),
        )
    health = snapshot.listener_health
    yield (_K.LISTENER_HEALTH, 0, ""), health, lambda: _health(health)
    endpoints = snapshot.endpoints
    yield _ENDPOINTS_GROUP, endpoints, lambda: _endpoints(endpoints)


def _changed_names(before: object, after: object) -> set[str] | None:
    """The names whose entry may differ between two endpoints maps, found without a walk of
    either: ``PMap.set`` and ``remove`` copy the bucket they touch and share every other
    bucket of ``before``'s bucket vector (pyrsistent's layout), so at a thousandth of a
    microsecond a bucket (``map(operator.is_)``) only the changed buckets are read. None when
    the layouts differ (a map grown into more buckets) or are not pyrsistent's: walk both."""
    old, new = getattr(before, "_buckets", None), getattr(after, "_buckets", None)
    if old is None or new is None or len(old) != len(new):
        return None
    same = list(map(operator.is_, new, old))
    names: set[str] = set()
    index = -1
    while True:
        try:
            index = same.index(False, index + 1)
        except ValueError:
            return names
        for bucket in (old[index], new[index]):
            names.update(name for name, _ in bucket or ())


def _patched_endpoints(
    before: _Group,
    endpoints: PMap[str, Any],
    names: set[str],
    changed: list[tuple[Key, _Part]],
    removed: list[Key],
) -> _Group:
    """The endpoints group of ``before`` carried to ``endpoints``, where only ``names`` may
    differ: each re-encoded when its list is another, taken out when gone."""
    entries = dict(before.entries)
    for name in sorted(names):
        key: Key = (_K.ENDPOINTS, 0, name, "")
        value = endpoints.get(name)
        hit = entries.get(key)
        if value is None:
            if hit is not None:
                del entries[key]
                removed.append(key)
        elif hit is None or (hit[0] is not value and hit[0] != value):
            body = encode_resource(_K.ENDPOINTS, value)
            entries[key] = (value, _Part(body, _fragment(key, body)))
            changed.append((key, entries[key][1]))
    return _Group(endpoints, entries)


def _ingress_hosts(hosts: PMap[str, Any]) -> Iterator[tuple[Key, Any]]:
    for host, vhost in hosts.items():
        yield (_K.INGRESS_HOST, 0, host, ""), vhost


def _listener(port: int, hostname: str, table: ListenerTable) -> Iterator[tuple[Key, Any]]:
    yield (_K.LISTENER, port, hostname, ""), replace(table, hosts=_NO_HOSTS)
    for host, rules in table.hosts.items():
        yield (_K.ROUTE_HOST, port, hostname, host), rules


def _by_host(kind: int, port: int, values: PMap[str, Any]) -> Iterator[tuple[Key, Any]]:
    for host, value in values.items():
        yield (kind, port, host, ""), value


def _health(health: PVector[ListenerHealth]) -> Iterator[tuple[Key, Any]]:
    for index, entry in enumerate(health):
        yield (_K.LISTENER_HEALTH, index, "", ""), entry


def _endpoints(endpoints: PMap[str, Any]) -> Iterator[tuple[Key, Any]]:
    for name, entry in endpoints.items():
        yield (_K.ENDPOINTS, 0, name, ""), entry


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


@dataclass(frozen=True, slots=True, eq=False)
class _Group:
    """One group's resources as encoded from ``source``: each key's value and part, in order.
    A group whose source is the same object in the next publish is this very object there."""

    source: object
    entries: dict[Key, tuple[Any, _Part]]


@dataclass(slots=True, eq=False)
class EncodedVersion:
    """One published version of a scope as encoded parts; the messages built from it are
    cached (the server's loop thread is their only user once the version is handed over)."""

    version: str
    sequence: int  # its cache's publish count: the previous encoding has sequence - 1
    scope: bytes  # the encoded pb.Scope
    groups: dict[Group, _Group]
    changed: list[tuple[Key, _Part]]  # re-encoded since the previous encoding (all at the first)
    removed: list[Key]  # gone since the previous encoding
    ports: frozenset[int]  # the listener ports a proxy serving it binds: what it may report
    _full: bytes | None = None
    _deltas: dict[str, bytes] = field(default_factory=dict)

    @property
    def resource_count(self) -> int:
        return sum(len(group.entries) for group in self.groups.values())

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
        for key, part in upserts:
            resource = _field(1, _key_message(key)) + _field(_BODY_FIELD[key[0]], part.body)
            out.append(_field(4, resource))
        out.extend(_field(5, _key_message(key)) for key in removed)
        return b"".join(out)

    def _changes(self, base: EncodedVersion) -> tuple[list[tuple[Key, _Part]], list[Key]]:
        """Resources to upsert and keys to remove from ``base``: what the encoding noted when
        ``base`` is the previous one (the common case: every stream acked it), else an
        identity diff of the two versions' groups, then of the parts of the groups that
        differ."""
        if base.sequence == self.sequence - 1:
            return self.changed, self.removed
        upserts: list[tuple[Key, _Part]] = []
        removed: list[Key] = []
        for name, group in self.groups.items():
            before = base.groups.get(name)
            if before is group:
                continue
            old = {} if before is None else before.entries
            for key, (_, part) in group.entries.items():
                hit = old.get(key)
                if hit is None or hit[1] is not part:
                    upserts.append((key, part))
            removed.extend(key for key in old if key not in group.entries)
        for name, before in base.groups.items():
            if name not in self.groups:
                removed.extend(before.entries)
        return upserts, removed

    def _full_snapshot(self) -> bytes:
        splice = _Splice.of(self.groups)
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
    def of(cls, groups: Mapping[Group, _Group]) -> _Splice:
        head = pb.SnapshotHead.FromString(groups[_HEAD_GROUP].entries[HEAD][1].body)
        splice = cls(
            ingress=[_number(1, head.http_port), _number(2, head.https_port)],
            tls={port: [] for port in head.tls_ports},
            client_certs={port: [] for port in head.client_cert_ports},
        )
        for group in groups.values():
            for key, (_, part) in group.entries.items():
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

    :meth:`encode` visits only the groups whose holding value is not the same object as in
    the previous publish (a one-route edit: the listeners that serve it; an endpoint change:
    the endpoints, and not one listener while the tables' map is the same object), so a
    publish costs what changed, not the scope's size; within such a group it re-encodes only
    the resources whose key is new or whose value differs (in the endpoints, it reads only the
    names in the map's changed buckets: ``_changed_names``). Unchanged
    groups and parts are the same objects in every version, which is what makes
    :meth:`EncodedVersion.delta_message` an identity diff. It holds one generation of values
    and parts: memory stays one snapshot's worth whatever the publish rate.
    """

    def __init__(self) -> None:
        self._groups: dict[Group, _Group] = {}
        # the listener tables of the last encode, and their groups
        self._tables: tuple[object, dict[Group, _Group]] = (None, {})
        self._ports: tuple[object, frozenset[int]] = (None, frozenset())
        self.version: str | None = None
        self.sequence = 0

    def encode(self, snapshot: Snapshot, rules: RuleBodies | None = None) -> EncodedVersion:
        """``snapshot`` as parts; the publish sequence counts the encoded versions. ``rules``:
        the rules encoded already, shared with the other scopes of the same publish."""
        known: RuleBodies = {} if rules is None else rules
        last = self._groups
        groups: dict[Group, _Group] = {}
        changed: list[tuple[Key, _Part]] = []
        removed: list[Key] = []
        # an endpoint change keeps every listener table: their groups are the last ones whole
        tables, listeners = self._tables
        kept_tables = tables is snapshot.gateways
        if kept_tables:
            groups.update(listeners)
        for name, source, members in _groups(snapshot, listeners=not kept_tables):
            before = last.get(name)
            if before is not None and before.source is source:
                groups[name] = before
                continue
            if name == _ENDPOINTS_GROUP and before is not None:
                names = _changed_names(before.source, source)
                if names is not None:
                    endpoints = snapshot.endpoints  # the source of this group
                    groups[name] = _patched_endpoints(before, endpoints, names, changed, removed)
                    continue
            old = {} if before is None else before.entries
            entries: dict[Key, tuple[Any, _Part]] = {}
            kept = 0  # keys of the previous encoding still present
            for key, value in members():
                hit = old.get(key)
                kept += hit is not None
                if hit is None or (hit[0] is not value and hit[0] != value):
                    body = (
                        _route_host_body(value, known)
                        if key[0] == _K.ROUTE_HOST
                        else encode_resource(key[0], value)
                    )
                    hit = (value, _Part(body, _fragment(key, body)))
                    changed.append((key, hit[1]))
                entries[key] = hit
            if kept != len(old):
                removed.extend(key for key in old if key not in entries)
            groups[name] = _Group(source, entries)
        if groups.keys() != last.keys():
            for name, before in last.items():
                if name not in groups:
                    removed.extend(before.entries)
        self._groups = groups
        if not kept_tables:
            listeners = {name: g for name, g in groups.items() if name[0] == _K.LISTENER}
            self._tables = (snapshot.gateways, listeners)
        self.version = snapshot.version
        self.sequence += 1
        return EncodedVersion(
            version=snapshot.version,
            sequence=self.sequence,
            scope=encode_scope(snapshot.scope).SerializeToString(),
            groups=groups,
            changed=changed,
            removed=removed,
            ports=self._listener_ports(snapshot.listener_health),
        )

    def _listener_ports(self, health: PVector[ListenerHealth]) -> frozenset[int]:
        """The target ports of the ready listeners, reckoned again only when the health list
        is another object."""
        if self._ports[0] is not health:
            ports = frozenset(h.target_port for h in health if h.ready and h.target_port)
            self._ports = (health, ports)
        return self._ports[1]
