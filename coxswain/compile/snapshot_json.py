"""The Snapshot's JSON form, a public contract (ARCHITECTURE §3), and its content hash.

``snapshot_to_data`` gives plain JSON values; ``dump_snapshot`` prints them with sorted keys, so
the text is byte-stable. ``snapshot_from_data`` reads the form back (for ``coxswain route`` and
``coxswain proxy --snapshot``) and raises ``SnapshotFormatError`` naming the field when a file
is not a snapshot. ``seal`` computes ``version`` from everything but the version itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TypeVar

from pyrsistent import pmap, pvector

from coxswain.compile.scope import Scope, SharedPool
from coxswain.compile.snapshot import (
    Backend,
    Certificate,
    Endpoint,
    IngressTable,
    PathMatch,
    PathRule,
    RouteRef,
    Snapshot,
    VirtualHost,
)

__all__ = [
    "SnapshotFormatError",
    "dump_snapshot",
    "seal",
    "snapshot_from_data",
    "snapshot_to_data",
]

_T = TypeVar("_T")


class SnapshotFormatError(ValueError):
    """A JSON document that is not a snapshot; the message names the field."""


def seal(snapshot: Snapshot) -> Snapshot:
    """The snapshot with ``version`` set to the hash of its content. Pure."""
    data = snapshot_to_data(snapshot)
    del data["version"]
    digest = hashlib.sha256(_canonical(data).encode()).hexdigest()
    return replace(snapshot, version=f"sha256:{digest}")


def dump_snapshot(snapshot: Snapshot, *, indent: int | None = 2) -> str:
    """The JSON text of a snapshot: sorted keys, byte-stable."""
    return json.dumps(snapshot_to_data(snapshot), sort_keys=True, indent=indent) + "\n"


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


# --- encoding -----------------------------------------------------------------------------------


def snapshot_to_data(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON form, as plain values."""
    return {
        "version": snapshot.version,
        "scope": str(snapshot.scope),
        "ingress": {
            "http_port": snapshot.ingress.http_port,
            "https_port": snapshot.ingress.https_port,
            "hosts": {
                host: _vhost_data(vhost) for host, vhost in sorted(snapshot.ingress.hosts.items())
            },
        },
        # Filled by the Gateway API pass; present so that readers can rely on every cell.
        "gateways": {},
        "client_certs": {},
        "listener_health": [],
        "tls": {
            str(port): {
                host: {"cert_chain": c.chain_pem, "private_key": c.key_pem, "secret": c.secret}
                for host, c in sorted(hosts.items())
            }
            for port, hosts in sorted(snapshot.tls.items())
        },
        "endpoints": {
            key: [{"address": e.address, "port": e.port} for e in endpoints]
            for key, endpoints in sorted(snapshot.endpoints.items())
        },
    }


def _vhost_data(vhost: VirtualHost) -> dict[str, Any]:
    return {
        "paths": [_rule_data(rule) for rule in vhost.paths],
        "default_backend": None if vhost.default is None else _rule_data(vhost.default),
    }


def _rule_data(rule: PathRule) -> dict[str, Any]:
    return {
        "path": rule.path,
        "match": str(rule.match),
        "backend": _backend_data(rule.backend),
        "route": _route_data(rule.route),
        "tls_redirect": rule.tls_redirect,
    }


def _backend_data(backend: Backend) -> dict[str, Any]:
    return {
        "namespace": backend.namespace,
        "service": backend.service,
        "port": backend.port,
        "weight": backend.weight,
        "valid": backend.valid,
    }


def _route_data(route: RouteRef) -> dict[str, Any]:
    return {
        "kind": route.kind,
        "namespace": route.namespace,
        "name": route.name,
        "rule": route.rule,
    }


# --- decoding -----------------------------------------------------------------------------------


def snapshot_from_data(data: object) -> Snapshot:
    """Read the JSON form back.

    Raises:
        SnapshotFormatError: the value is not a snapshot; the message names the field.
    """
    root = _object(data, "snapshot")
    ingress = _object(root.get("ingress"), "ingress")
    hosts = _object(ingress.get("hosts"), "ingress.hosts")
    return Snapshot(
        version=_typed(root.get("version"), str, "version"),
        scope=_scope(root.get("scope")),
        ingress=IngressTable(
            http_port=_typed(ingress.get("http_port"), int, "ingress.http_port"),
            https_port=_typed(ingress.get("https_port"), int, "ingress.https_port"),
            hosts=pmap(
                {
                    host: _vhost(host, _object(value, f"ingress.hosts[{host!r}]"))
                    for host, value in hosts.items()
                }
            ),
        ),
        tls=pmap(
            {
                _port(port, "tls"): pmap(
                    {
                        host: _certificate(_object(cert, f"tls[{port}][{host!r}]"), f"tls[{port}]")
                        for host, cert in _object(by_host, f"tls[{port}]").items()
                    }
                )
                for port, by_host in _object(root.get("tls", {}), "tls").items()
            }
        ),
        endpoints=pmap(
            {
                key: pvector(
                    _endpoint(_object(item, f"endpoints[{key!r}][{i}]"), f"endpoints[{key!r}]")
                    for i, item in enumerate(_list(items, f"endpoints[{key!r}]"))
                )
                for key, items in _object(root.get("endpoints", {}), "endpoints").items()
            }
        ),
    )


def _scope(value: object) -> Scope:
    if value == "shared":
        return SharedPool()
    raise SnapshotFormatError(f"scope: expected 'shared', found {value!r}")


def _vhost(host: str, data: Mapping[str, Any]) -> VirtualHost:
    where = f"ingress.hosts[{host!r}]"
    default = data.get("default_backend")
    return VirtualHost(
        host=host,
        paths=pvector(
            _rule(_object(item, f"{where}.paths[{i}]"), f"{where}.paths[{i}]")
            for i, item in enumerate(_list(data.get("paths", []), f"{where}.paths"))
        ),
        default=None
        if default is None
        else _rule(_object(default, f"{where}.default_backend"), f"{where}.default_backend"),
    )


def _rule(data: Mapping[str, Any], where: str) -> PathRule:
    match = _typed(data.get("match"), str, f"{where}.match")
    if match not in PathMatch.__members__.values():
        raise SnapshotFormatError(f"{where}.match: expected Exact or Prefix, found {match!r}")
    route = _object(data.get("route"), f"{where}.route")
    return PathRule(
        path=_typed(data.get("path"), str, f"{where}.path"),
        match=PathMatch(match),
        backend=_backend(_object(data.get("backend"), f"{where}.backend"), f"{where}.backend"),
        route=RouteRef(
            kind=_typed(route.get("kind"), str, f"{where}.route.kind"),
            namespace=_typed(route.get("namespace"), str, f"{where}.route.namespace"),
            name=_typed(route.get("name"), str, f"{where}.route.name"),
            rule=_typed(route.get("rule"), str, f"{where}.route.rule"),
        ),
        tls_redirect=_typed(data.get("tls_redirect", False), bool, f"{where}.tls_redirect"),
    )


def _backend(data: Mapping[str, Any], where: str) -> Backend:
    return Backend(
        namespace=_typed(data.get("namespace"), str, f"{where}.namespace"),
        service=_typed(data.get("service"), str, f"{where}.service"),
        port=_typed(data.get("port"), int, f"{where}.port"),
        weight=_typed(data.get("weight", 1), int, f"{where}.weight"),
        valid=_typed(data.get("valid", True), bool, f"{where}.valid"),
    )


def _certificate(data: Mapping[str, Any], where: str) -> Certificate:
    return Certificate(
        chain_pem=_typed(data.get("cert_chain"), str, f"{where}.cert_chain"),
        key_pem=_typed(data.get("private_key"), str, f"{where}.private_key"),
        secret=_typed(data.get("secret", ""), str, f"{where}.secret"),
    )


def _endpoint(data: Mapping[str, Any], where: str) -> Endpoint:
    return Endpoint(
        address=_typed(data.get("address"), str, f"{where}.address"),
        port=_typed(data.get("port"), int, f"{where}.port"),
    )


def _port(text: str, where: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise SnapshotFormatError(f"{where}: {text!r} is not a port number")
    return int(text)


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SnapshotFormatError(f"{where}: expected an object, found {type(value).__name__}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise SnapshotFormatError(f"{where}: expected a list, found {type(value).__name__}")
    return value


def _typed(value: object, kind: type[_T], where: str) -> _T:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SnapshotFormatError(
            f"{where}: expected {kind.__name__}, found {type(value).__name__}"
        )
    return value
