"""The Snapshot's JSON form, a public contract, and its content hash.

The form is described in docs/contracts.md, "The snapshot JSON".

``snapshot_to_data`` gives plain JSON values; ``dump_snapshot`` prints them with sorted keys, so
the text is byte-stable. ``seal`` computes ``version`` from everything but the version itself.
Reading the form back lives in ``snapshot_read`` (re-exported here for callers of both).
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from dataclasses import dataclass, fields, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final

from coxswain.compile.hash_chain import HashChain, PieceHash
from coxswain.compile.snapshot import INGRESS_ACTION_FIELDS, BackendProtocol
from coxswain.compile.snapshot_read import SnapshotFormatError, snapshot_from_data

if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Collection, Iterator, Mapping, MutableMapping

    from pyrsistent.typing import PVector

    from coxswain.compile.snapshot import (
        Backend,
        Canary,
        Certificate,
        Cors,
        Endpoint,
        GatewayRule,
        HeaderEdits,
        IngressActions,
        ListenerHealth,
        ListenerTable,
        PathEdit,
        PathRule,
        RouteRef,
        Snapshot,
        UpstreamTLS,
        VirtualHost,
    )

    # ``id`` of a rule → the rule (which keeps the ``id`` from being reused) and its JSON text.
    RuleTexts = MutableMapping[int, tuple[GatewayRule, str]]
    # A listener's slot (internal port, hostname) → its table's hashed pieces.
    TableTexts = MutableMapping[tuple[int, str], "TableText"]
    # Ingress host → its virtual host and its hashed piece.
    HostTexts = MutableMapping[str, tuple[VirtualHost, str]]
    # ``id`` of a listener health entry or certificate → it, the certificate's port and host,
    # and its hashed piece.
    OtherTexts = MutableMapping[int, tuple[object, tuple[int, str] | None, str]]
    # endpoints key → its list and its hashed piece, in key order.
    EndpointPieces = dict[str, tuple[PVector[Endpoint], bytes]]
    # A port, or "others" for the cells after the tables → the cells hashed, and their pieces.
    Segments = dict[int | str, tuple[tuple[object, ...], list[str | bytes]]]

__all__ = [
    "SnapshotFormatError",
    "TableText",
    "dump_snapshot",
    "edited_table_text",
    "endpoint_piece",
    "endpoint_pieces",
    "head_digest",
    "seal",
    "sealed_with",
    "snapshot_from_data",
    "snapshot_to_data",
]


def seal(snapshot: Snapshot, texts: RuleTexts | None = None) -> Snapshot:
    """The snapshot with ``version`` set to the hash of its content. Pure.

    The hash runs over the JSON form piece by piece (one compact, key-sorted JSON text per
    virtual host, listener, rule, certificate and endpoint list, each followed by a newline,
    which compact JSON never contains), and a rule shared by several hosts or listeners is
    encoded once: SHA-256 over the SHA-256 of each piece of everything but the endpoints
    table (``hash_chain``), then over the endpoints table's text. No whole-document tree or
    string is built: at 100,000 rules that tree was most of the compile's time and memory.

    ``texts`` keeps rules' JSON texts across calls (``compile.memo``): a rule object that was
    encoded once is not encoded again; the version is the same with it or without it.
    """
    return sealed_with(snapshot, head_digest(snapshot, texts))


def head_digest(
    snapshot: Snapshot,
    texts: RuleTexts | None = None,
    tables: TableTexts | None = None,
    hosts: HostTexts | None = None,
    chain: HashChain | None = None,
    others: OtherTexts | None = None,
    segments: tuple[Segments, Segments] | None = None,
) -> HASH:
    """The hash of everything but the endpoints table, the last cell hashed: an endpoint
    change then re-hashes only the endpoints (``sealed_with`` on a copy). ``tables`` keeps the
    hashed pieces of listener tables across calls, as ``texts`` does rules' (``seal``),
    ``hosts`` the Ingress virtual hosts' by host, ``others`` the listener health entries' and
    certificates'; ``chain`` the last call's pieces and their digests, so that only pieces
    that changed are hashed again (``hash_chain``); ``segments`` the last call's
    pieces of each port's tables and of the cells after them, and a map to put this call's in
    (a port whose tables are the same map, its pieces are those, and its tables are not
    visited). The hash is the same with or without them."""
    known: RuleTexts = {} if texts is None else texts
    if chain is not None:
        pieces: list[str | bytes] = []
        _content_pieces(snapshot, known, tables, hosts, others, pieces, segments)
        return chain.digest(pieces)
    hashed = PieceHash(hashlib.sha256())
    _content_pieces(snapshot, known, tables, hosts, others, hashed, segments)
    return hashed.digest


def sealed_with(snapshot: Snapshot, head: HASH, pieces: EndpointPieces | None = None) -> Snapshot:
    """``snapshot`` sealed, ``head`` being its ``head_digest`` (left as it is). ``pieces``:
    ``endpoint_pieces`` of the snapshot's endpoints, when the caller keeps them."""
    digest = head.copy()
    if pieces is None:
        pieces = endpoint_pieces(snapshot.endpoints)
    digest.update(b"".join(map(itemgetter(1), pieces.values())))  # at C speed: 10,000s
    return replace(snapshot, version=f"sha256:{digest.hexdigest()}")


def endpoint_pieces(
    endpoints: Mapping[str, PVector[Endpoint]], earlier: EndpointPieces | None = None
) -> EndpointPieces:
    """Each endpoints entry's hashed piece, in key order (the order ``sealed_with`` hashes
    them in); ``earlier``'s piece is kept for an entry that is the same list. A caller may
    replace the value of a key in place (an endpoint change keeps the keys)."""
    pieces: EndpointPieces = {}
    for key, value in sorted(endpoints.items()):
        known = None if earlier is None else earlier.get(key)
        pieces[key] = (
            known if known is not None and known[0] is value else endpoint_piece(key, value)
        )
    return pieces


def endpoint_piece(key: str, endpoints: PVector[Endpoint]) -> tuple[PVector[Endpoint], bytes]:
    """One endpoints entry and its hashed piece."""
    piece = ["endpoints", key, [[e.address, e.port] for e in endpoints]]
    return endpoints, _CANONICAL.encode(piece).encode() + b"\n"


def _content_pieces(
    snapshot: Snapshot,
    texts: RuleTexts,
    tables: TableTexts | None,
    hosts: HostTexts | None,
    others: OtherTexts | None,
    pieces: list[str | bytes] | PieceHash,
    segments: tuple[Segments, Segments] | None = None,
) -> None:
    """Everything ``snapshot_to_data`` holds but ``version`` and ``endpoints``, as canonical
    JSON pieces each followed by a newline (which compact JSON never holds), a listener table's
    as bytes, put in ``pieces``; ``texts`` holds rules encoded already, ``tables`` listener
    tables'. Put, extending with kept tables' pieces, not yielded: at thousands of listeners,
    yielding them one by one was a good part of a round."""
    encode = _CANONICAL.encode
    ingress = snapshot.ingress
    pieces.append(
        encode(["scope", str(snapshot.scope), ingress.http_port, ingress.https_port]) + "\n"
    )
    for host, vhost in sorted(ingress.hosts.items()):
        hashed = None if hosts is None else hosts.get(host)
        if hashed is None or hashed[0] is not vhost:
            hashed = (vhost, encode(["ingress", host, _vhost_data(vhost)]) + "\n")
            if hosts is not None:
                hosts[host] = hashed
        pieces.append(hashed[1])
    was, now = ({}, {}) if segments is None else segments
    for port, by_hostname in sorted(snapshot.gateways.items()):
        kept = was.get(port)
        if kept is not None and kept[0][0] is by_hostname:
            pieces.extend(kept[1])
            now[port] = kept
            continue
        kept_pieces: list[str | bytes] = []  # the port's, when they are kept
        out = pieces if segments is None else kept_pieces
        out.append(_count_piece("gateways", port, len(by_hostname)))  # empty maps count too
        for hostname, table in sorted(by_hostname.items()):
            if tables is None:
                out.extend(_table_pieces(port, hostname, table, texts))
                continue
            known = tables.get((port, hostname))
            if known is None or known.table is not table:
                known = tables[(port, hostname)] = _table_text(
                    port, hostname, table, texts, None if known is None else known.hosts
                )
            out.extend(known.pieces)
        if segments is not None:
            pieces.extend(kept_pieces)
            now[port] = ((by_hostname,), kept_pieces)
    if segments is None:
        pieces.extend(_other_pieces(snapshot, {} if others is None else others))
        return
    cells = (snapshot.client_certs, snapshot.listener_health, snapshot.tls)
    kept = was.get("others")
    if kept is None or not all(a is b for a, b in zip(kept[0], cells, strict=True)):
        kept = (cells, list(_other_pieces(snapshot, {} if others is None else others)))
    pieces.extend(kept[1])
    now["others"] = kept


def _count_piece(cell: str, port: int, count: int) -> str:
    """``encode([cell, port, count])`` and a newline, for two integers: the canonical JSON of
    an integer is its decimal digits (a piece a port, so not through the encoder)."""
    return f'["{cell}",{port:d},{count:d}]\n'


@dataclass(frozen=True, slots=True)
class TableText:
    """A listener table's hashed pieces (``_table_pieces``', as bytes): its head's, then one
    a host, in host order (``names``); ``hosts``: each host's rule list and piece."""

    table: ListenerTable
    pieces: tuple[bytes, ...]
    names: tuple[str, ...]
    hosts: dict[str, tuple[PVector[GatewayRule], bytes]]


def _table_text(
    port: int,
    hostname: str,
    table: ListenerTable,
    texts: RuleTexts,
    earlier: dict[str, tuple[PVector[GatewayRule], bytes]] | None,
) -> TableText:
    """A table's ``TableText``, ``earlier``'s piece kept for a host whose rule list is the same."""
    encode = _CANONICAL.encode
    pieces = [(encode(["listener", port, hostname, _listener_head(table)]) + "\n").encode()]
    hosts: dict[str, tuple[PVector[GatewayRule], bytes]] = {}
    for host, rules in sorted(table.hosts.items()):
        known = None if earlier is None else earlier.get(host)
        if known is None or known[0] is not rules:
            known = (rules, "".join(_host_pieces(host, rules, texts)).encode())
        hosts[host] = known
        pieces.append(known[1])
    return TableText(table, tuple(pieces), tuple(hosts), hosts)


def edited_table_text(
    tables: TableTexts,
    slot: tuple[int, str],
    table: ListenerTable,
    edits: tuple[ListenerTable, Collection[str]],
    texts: RuleTexts,
) -> None:
    """Put in ``tables`` the ``TableText`` of ``table``, the table at ``slot`` made from the
    earlier one of ``edits`` (the same head) by setting or removing only the hosts of
    ``edits``, from that table's text when ``tables`` holds it: those hosts are encoded, the
    others' pieces kept, and none of the table's hosts is read or sorted (at 10,000 hosts,
    that was most of a one-route edit's hashing)."""
    base, edited = edits
    known = tables.get(slot)
    if known is None or known.table is not base:
        return  # head_digest makes it afresh
    names, pieces, hosts = list(known.names), list(known.pieces), dict(known.hosts)
    for host in sorted(edited):
        at = bisect_left(names, host)
        present = at < len(names) and names[at] == host
        rules = table.hosts.get(host)
        if rules is None:
            if present:
                del names[at], pieces[at + 1], hosts[host]
            continue
        hosts[host] = (rules, "".join(_host_pieces(host, rules, texts)).encode())
        if present:
            pieces[at + 1] = hosts[host][1]
        else:
            names.insert(at, host)
            pieces.insert(at + 1, hosts[host][1])
    tables[slot] = TableText(table, tuple(pieces), tuple(names), hosts)


def _table_pieces(
    port: int, hostname: str, table: ListenerTable, texts: RuleTexts
) -> Iterator[str]:
    """One listener table's pieces as ``_table_text`` cuts them: its head's, then one a host."""
    yield _CANONICAL.encode(["listener", port, hostname, _listener_head(table)]) + "\n"
    for host, rules in sorted(table.hosts.items()):
        yield "".join(_host_pieces(host, rules, texts))


def _host_pieces(host: str, rules: PVector[GatewayRule], texts: RuleTexts) -> Iterator[str]:
    """One host's pieces in a listener table, each followed by a newline."""
    encode = _CANONICAL.encode
    yield encode(["host", host, len(rules)]) + "\n"
    for rule in rules:
        known = texts.get(id(rule))
        if known is None or known[0] is not rule:
            known = texts[id(rule)] = (rule, encode(_gateway_rule_data(rule)))
        yield known[1] + "\n"


def _other_pieces(snapshot: Snapshot, others: OtherTexts) -> Iterator[str]:
    """The pieces after the listener tables, each followed by a newline; ``others`` holds
    health entries and certificates encoded already."""
    encode = _CANONICAL.encode
    for port, validations in sorted(snapshot.client_certs.items()):
        yield _count_piece("client_certs", port, len(validations))
        for host, c in sorted(validations.items()):
            yield encode(["client_cert", port, host, c.ca_pem, c.mode]) + "\n"
    for health in snapshot.listener_health:
        known = others.get(id(health))
        if known is None or known[0] is not health:
            text = encode(["health", _health_data(health)]) + "\n"
            known = others[id(health)] = (health, None, text)
        yield known[2]
    for port, certificates in sorted(snapshot.tls.items()):
        yield _count_piece("tls", port, len(certificates))
        for host, cert in sorted(certificates.items()):
            known = others.get(id(cert))
            if known is None or known[0] is not cert or known[1] != (port, host):
                text = encode(
                    ["certificate", port, host, cert.chain_pem, cert.key_pem, cert.secret]
                )
                known = others[id(cert)] = (cert, (port, host), text + "\n")
            yield known[2]


_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def dump_snapshot(snapshot: Snapshot, *, indent: int | None = 2) -> str:
    """The JSON text of a snapshot: sorted keys, byte-stable."""
    return json.dumps(snapshot_to_data(snapshot), sort_keys=True, indent=indent) + "\n"


# --- encoding -----------------------------------------------------------------------------------


def snapshot_to_data(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON form, as plain values. A rule that several hosts or listeners serve is one
    value, held wherever it is served (``shell.output.json_pieces`` writes it once)."""
    rules: dict[int, dict[str, Any]] = {}  # id of a rule of ``snapshot`` → its value
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
        "gateways": {
            str(port): {host: _listener_data(t, rules) for host, t in sorted(tables.items())}
            for port, tables in sorted(snapshot.gateways.items())
        },
        "client_certs": {
            str(port): {
                host: {"ca_bundle": c.ca_pem, "mode": c.mode} for host, c in sorted(hosts.items())
            }
            for port, hosts in sorted(snapshot.client_certs.items())
        },
        "listener_health": [_health_data(h) for h in snapshot.listener_health],
        "tls": {
            str(port): {host: _certificate_data(c) for host, c in sorted(hosts.items())}
            for port, hosts in sorted(snapshot.tls.items())
        },
        "endpoints": {
            key: [{"address": e.address, "port": e.port} for e in endpoints]
            for key, endpoints in sorted(snapshot.endpoints.items())
        },
    }


def _vhost_data(vhost: VirtualHost) -> dict[str, Any]:
    data = {
        "paths": [_rule_data(rule) for rule in vhost.paths],
        "default_backend": None if vhost.default is None else _rule_data(vhost.default),
    }
    if vhost.passthrough is not None:  # written only when set: older snapshots keep their form
        data["passthrough"] = _rule_data(vhost.passthrough)
    return data


def _rule_data(rule: PathRule) -> dict[str, Any]:
    data = {
        "path": rule.path,
        "match": str(rule.match),
        "backend": _backend_data(rule.backend),
        "route": _route_data(rule.route),
        "tls_redirect": rule.tls_redirect,
    }
    if rule.hsts:
        data["hsts"] = rule.hsts
    if rule.actions is not None:
        data["actions"] = _ingress_actions_data(rule.actions)
    return data


def _ingress_actions_data(actions: IngressActions) -> dict[str, Any]:
    """The fields that are set, by their names in :class:`IngressActions`; lists as lists."""
    data: dict[str, Any] = {}
    for name in INGRESS_ACTION_FIELDS:
        value = getattr(actions, name)
        if name in ("external_auth", "rate_limit", "affinity", "client_tls"):
            if value is not None:
                data[name] = {
                    f.name: v if isinstance(v, str | int) else list(v)
                    for f in fields(value)
                    if (v := getattr(value, f.name)) is not None
                }
        elif name in ("canary", "cors"):
            if value is not None:
                data[name] = _canary_data(value) if name == "canary" else _cors_data(value)
        elif isinstance(value, str | int | float):
            if value != 0:
                data[name] = value
        elif value:  # a vector: of strings, or of (user, hash) pairs
            data[name] = [list(v) if isinstance(v, tuple) else v for v in value]
    return data


def _canary_data(canary: Canary) -> dict[str, Any]:
    data: dict[str, Any] = {
        "backend": _backend_data(canary.backend),
        "route": _route_data(canary.route),
        "weight": canary.weight,
        "weight_total": canary.weight_total,
    }
    for name in ("header", "header_value", "header_pattern", "cookie"):
        if (value := getattr(canary, name)) is not None:
            data[name] = value
    return data


def _backend_data(backend: Backend) -> dict[str, Any]:
    data: dict[str, Any] = {
        "namespace": backend.namespace,
        "service": backend.service,
        "port": backend.port,
        "weight": backend.weight,
        "valid": backend.valid,
    }
    if backend.request_headers is not None:
        data["request_headers"] = _edits_data(backend.request_headers)
    if backend.response_headers is not None:
        data["response_headers"] = _edits_data(backend.response_headers)
    if backend.tls is not None:
        data["tls"] = _upstream_tls_data(backend.tls)
    if backend.protocol is not BackendProtocol.HTTP1:
        data["protocol"] = str(backend.protocol)
    if backend.proxy_protocol:
        data["proxy_protocol"] = True
    if backend.cluster_ip:
        data["cluster_ip"] = True
    return data


def _upstream_tls_data(tls: UpstreamTLS) -> dict[str, Any]:
    client = tls.client_certificate
    data: dict[str, Any] = {
        "policy": tls.policy,
        "server_name": tls.server_name,
        "ca_bundle": tls.ca_pem,
        "subject_alt_names": [{"type": n.type, "value": n.value} for n in tls.subject_alt_names],
        "client_certificate": None if client is None else _certificate_data(client),
        "problem": tls.problem,
    }
    if not tls.verify:  # written only when relaxed, as a policy never is
        data["verify"] = False
    if not tls.sni:
        data["sni"] = False
    return data


def _certificate_data(certificate: Certificate) -> dict[str, Any]:
    return {
        "cert_chain": certificate.chain_pem,
        "private_key": certificate.key_pem,
        "secret": certificate.secret,
    }


def _edits_data(edits: HeaderEdits | None) -> dict[str, Any] | None:
    if edits is None:
        return None
    return {
        "set": [list(p) for p in edits.set],
        "add": [list(p) for p in edits.add],
        "remove": list(edits.remove),
    }


def _path_edit_data(edit: PathEdit | None) -> dict[str, Any] | None:
    return None if edit is None else {"type": edit.type, "value": edit.value}


def _listener_head(table: ListenerTable) -> dict[str, Any]:
    return {
        "gateway": table.gateway,
        "listener": table.listener,
        "port": table.port,
        "protocol": table.protocol,
        "hostname": table.hostname,
    }


def _listener_data(table: ListenerTable, known: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """``known``: the values of rules seen already, by ``id``."""
    hosts: dict[str, Any] = {}
    for host, rules in sorted(table.hosts.items()):
        values: list[dict[str, Any]] = []
        hosts[host] = values
        for rule in rules:
            value = known.get(id(rule))
            if value is None:
                value = known[id(rule)] = _gateway_rule_data(rule)
            values.append(value)
    return {**_listener_head(table), "hosts": hosts}


def _gateway_rule_data(rule: GatewayRule) -> dict[str, Any]:
    match, action = rule.match, rule.action
    redirect = action.redirect
    rewrite = action.rewrite
    data: dict[str, Any] = {
        "match": {
            "path_type": match.path_type,
            "path": match.path,
            "headers": [{"name": v.name, "type": v.type, "value": v.value} for v in match.headers],
            "query": [{"name": v.name, "type": v.type, "value": v.value} for v in match.query],
            "method": match.method,
        },
        "route": _route_data(action.route),
        "backends": [_backend_data(b) for b in action.backends],
        "request_headers": _edits_data(action.request_headers),
        "response_headers": _edits_data(action.response_headers),
        "redirect": None
        if redirect is None
        else {
            "status": redirect.status,
            "scheme": redirect.scheme,
            "hostname": redirect.hostname,
            "port": redirect.port,
            "path": _path_edit_data(redirect.path),
        },
        "rewrite": None
        if rewrite is None
        else {"hostname": rewrite.hostname, "path": _path_edit_data(rewrite.path)},
        "mirrors": [
            {"backend": _backend_data(m.backend), "percent": m.percent} for m in action.mirrors
        ],
        "timeouts": {"request": action.request_timeout, "backend_request": action.backend_timeout},
        "cors": _cors_data(action.cors),
        "retry": None
        if (retry := action.retry) is None
        else {"codes": list(retry.codes), "attempts": retry.attempts, "backoff": retry.backoff},
        "problem": action.problem,
    }
    if action.grpc:
        data["grpc"] = True
    return data


def _cors_data(cors: Cors | None) -> dict[str, Any] | None:
    if cors is None:
        return None
    return {
        "allow_origins": list(cors.allow_origins),
        "allow_methods": list(cors.allow_methods),
        "allow_headers": list(cors.allow_headers),
        "expose_headers": list(cors.expose_headers),
        "allow_credentials": cors.allow_credentials,
        "max_age": cors.max_age,
    }


def _health_data(health: ListenerHealth) -> dict[str, Any]:
    return {
        "gateway": health.gateway,
        "listener": health.listener,
        "port": health.port,
        "target_port": health.target_port,
        "protocol": health.protocol,
        "hostname": health.hostname,
        "attached_routes": health.attached_routes,
        "ready": health.ready,
        "reason": health.reason,
    }


def _route_data(route: RouteRef) -> dict[str, Any]:
    return {
        "kind": route.kind,
        "namespace": route.namespace,
        "name": route.name,
        "rule": route.rule,
    }
