"""The request headers a proxy forwards upstream (RFC 9110 §7.6.1, de-facto X-Forwarded-*).

Rules:
1. Hop-by-hop fields are removed: ``Connection`` and every field it names, ``Keep-Alive``,
   ``Proxy-Connection``, ``TE``, ``Trailer``, ``Transfer-Encoding``, ``Upgrade`` (the proxy
   re-adds framing and upgrade fields itself when it relays them).
   ``HTTP2-Settings`` goes too: it only belongs with an ``Upgrade: h2c`` offer (RFC 7540
   §3.2.1), which is never relayed (rule 4).
   ``Expect`` is not forwarded either: the proxy answers ``100-continue`` itself before it
   reads the body (RFC 9110 §10.1.1 lets a proxy respond rather than forward), so the
   upstream receives a request whose body is already on its way.
2. ``Host`` is the decided host.
3. Forwarding fields, as ingress-nginx sets them (its users' applications trust them): from a
   peer that is not a trusted proxy (:func:`trusted_peer`, ``--trusted-proxies``), every
   ``X-Real-IP``, ``Forwarded`` and ``X-Forwarded-*`` field is dropped, and ``X-Real-IP`` and
   ``X-Forwarded-For`` are the peer's address, ``X-Forwarded-Proto`` and ``X-Forwarded-Host``
   what it used: a client cannot forge the address an application sees. From a trusted proxy
   they are kept, ``X-Forwarded-For`` gets the peer appended, and ``X-Real-IP``,
   ``X-Forwarded-Proto`` and ``X-Forwarded-Host`` are set only when it sent none. The host the
   client used is the absolute-form target's authority when there was one (RFC 9112 §3.2.2,
   ``route.target``), else its Host.
4. Upgrades (:func:`tunnelled_upgrade`): only ``websocket`` (RFC 6455) is asked of the upstream
   and tunnelled after its 101. Any other token is dropped and the request forwarded as plain
   HTTP/1.1, which RFC 9110 §7.8 allows (a server, and so an intermediary, may ignore an
   Upgrade). Refusing would break clients that offer ``h2c`` opportunistically (curl does),
   and tunnelling ``h2c`` would let one routed request open an HTTP/2 connection whose later
   streams reach any path of the backend without being routed; RFC 9113 §3.1 deprecates the
   h2c upgrade anyway. Envoy forwards only the upgrade types a route enables (websocket by
   default); nginx forwards no Upgrade unless its configuration passes the client's on, as
   ingress-nginx's does for any token (the h2c smuggling this rule closes).

Headers are bytes, as on the wire: the proxy runs this for every request, and decoding each
field to text and back cost more than the rules themselves. Names come out lower-cased.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from coxswain.compile.snapshot import HeaderEdits

__all__ = [
    "HOP_BY_HOP",
    "WireEdits",
    "apply_edits",
    "connection_named",
    "forwarded_headers",
    "switched_to_websocket",
    "trusted_peer",
    "tunnelled_upgrade",
    "wire_edits",
]

Fields = list[tuple[bytes, bytes]]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
_NOT_FORWARDED: Final = HOP_BY_HOP | {b"expect", b"http2-settings"}
_WEBSOCKET: Final = b"websocket"
_FORWARDING: Final = frozenset({b"x-real-ip", b"forwarded"})
_X_FORWARDED: Final = b"x-forwarded-"


def connection_named(headers: Sequence[tuple[bytes, bytes]]) -> set[bytes]:
    """The field names listed in ``Connection`` (RFC 9110 §7.6.1), lower-cased."""
    return {
        token.strip(b" \t").lower()
        for name, value in headers
        if name.lower() == b"connection"
        for token in value.split(b",")
    }


def tunnelled_upgrade(offer: bytes | None) -> bytes | None:
    """The ``Upgrade`` to ask of the upstream for a client's offer: ``websocket`` when the
    client offered it, else None (rule 4: the request is forwarded without an upgrade)."""
    if offer is None:
        return None
    for token in offer.split(b","):
        if token.strip(b" \t").lower() == _WEBSOCKET:
            return _WEBSOCKET
    return None


def switched_to_websocket(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """Whether a 101's fields (names lower-case) switch to exactly ``websocket``: a 101 to
    anything else was not asked for (RFC 9110 §15.2.2: the server switches to a protocol the
    client offered)."""
    upgrades = [value for name, value in headers if name == b"upgrade"]
    return len(upgrades) == 1 and upgrades[0].strip(b" \t").lower() == _WEBSOCKET


def trusted_peer(address: str | None, proxies: Sequence[Network]) -> bool:
    """Whether the peer at ``address`` is one of the trusted ``proxies`` (rule 3); an address
    that is not an IP address is not."""
    if address is None or not proxies:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in proxies)


def forwarded_headers(
    headers: Sequence[tuple[bytes, bytes]],
    *,
    host: bytes,
    proto: bytes,
    client: bytes | None,
    named: Collection[bytes] | None = None,
    authority: bytes | None = None,
    trusted: bool = False,
) -> Fields:
    """The header list to send upstream.

    Args:
        headers: the client's headers, names in any case, in order.
        host: the Host to forward.
        proto: ``http`` or ``https``, as the client connected.
        client: the client's address, or None when unknown (offline explanations).
        named: the ``Connection`` options, lower-cased, when the caller has them already
            (the proxy's parser does); else they are read from ``headers``.
        authority: the absolute-form target's authority, which the received Host gives way to.
        trusted: whether the peer is a trusted proxy, whose forwarding fields are kept (rule 3).
    """
    if named is None:
        named = connection_named(headers)
    out: Fields = [(b"host", host)]
    forwarded_for: list[bytes] = []
    original_host = host
    sent: set[bytes] = set()
    for name, value in headers:
        lower = name if name.islower() else name.lower()  # both codecs' are lower-case already
        if lower in _NOT_FORWARDED or lower in named:
            continue
        if lower == b"host":
            original_host = value
        elif lower in _FORWARDING or lower.startswith(_X_FORWARDED):
            if not trusted:
                continue
            if lower == b"x-forwarded-for":
                forwarded_for.append(value)
            else:
                sent.add(lower)
                out.append((lower, value))
        else:
            out.append((lower, value))
    if client is not None:
        forwarded_for.append(client)
    if forwarded_for:
        out.append((b"x-forwarded-for", b", ".join(forwarded_for)))
    if client is not None and b"x-real-ip" not in sent:
        out.append((b"x-real-ip", client))
    if b"x-forwarded-proto" not in sent:
        out.append((b"x-forwarded-proto", proto))
    if b"x-forwarded-host" not in sent:
        out.append((b"x-forwarded-host", original_host if authority is None else authority))
    return out


@dataclass(frozen=True, slots=True)
class WireEdits:
    """A header modifier as bytes: the names it replaces or removes, then the fields it sets
    and adds (names lower-case)."""

    replaced: frozenset[bytes]
    set: tuple[tuple[bytes, bytes], ...]
    add: tuple[tuple[bytes, bytes], ...]


def wire_edits(edits: HeaderEdits) -> WireEdits:
    """``edits`` as bytes.

    Raises:
        ValueError: a name or value is not Latin-1 (it cannot be written in a field).
    """
    try:
        set_ = tuple((n.encode("latin-1"), v.encode("latin-1")) for n, v in edits.set)
        add = tuple((n.encode("latin-1"), v.encode("latin-1")) for n, v in edits.add)
        removed = frozenset(n.encode("latin-1") for n in edits.remove)
    except UnicodeEncodeError as err:
        raise ValueError(f"a header edit is not Latin-1: {err.object!r}") from err
    return WireEdits(removed | {n for n, _ in set_}, set_, add)


def apply_edits(headers: Sequence[tuple[bytes, bytes]], edits: WireEdits) -> Fields:
    """Apply a Gateway API header modifier (HTTPHeaderFilter): remove, set, then add.

    ``set`` replaces every value of the name; ``add`` appends a value; names compare
    case-insensitively.
    """
    replaced = edits.replaced
    out = [(name, value) for name, value in headers if name.lower() not in replaced]
    out.extend(edits.set)
    out.extend(edits.add)
    return out
