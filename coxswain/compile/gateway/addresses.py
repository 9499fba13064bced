"""A Gateway's ``spec.addresses``: which can be honoured, and what its status reports.

A Gateway is reached through one Service: its VIP Service in the shared pool, or its dedicated
proxy's Service once that is ready (docs/contracts.md, "Owned objects"). An entry of
``spec.addresses`` is honoured on that Service:

- ``IPAddress`` without a value asks for any address; the Service's own (load-balancer or
  cluster) address answers it (``GatewaySpecAddress.value``: "When a value is unspecified, an
  implementation SHOULD automatically assign an address matching the requested type").
- ``IPAddress`` with a value is a static address (GatewayStaticAddresses): the Service is given
  it in ``spec.externalIPs``, which kube-proxy serves on every node whatever the Service's type.
  Since an external IP captures the traffic of that address for the whole cluster, only
  addresses inside ``CompileConfig.gateway_address_ranges`` (``--gateway-address-ranges``, none
  by default) are given; any other, and those the API server refuses as external IPs
  (unspecified, loopback, link-local, multicast), make the Gateway ``Programmed=False`` with
  reason ``AddressNotUsable``. Until the Service carries them it is ``AddressNotAssigned``.
- Any other type (``Hostname``, a domain-prefixed one) cannot be given to a Service: the
  Gateway is ``Accepted=False`` with reason ``UnsupportedAddress`` and is not served.

Two Services cannot carry one external IP: a static address belongs to the oldest Gateway of
ours that asks for it (creation time, then ``namespace/name``, :func:`address_owners`); another
is ``AddressNotUsable`` naming it.

When ``spec.addresses`` holds static addresses, ``status.addresses`` lists those the Service
carries, then the Service's own address if an entry asked for any; otherwise the Service's own
addresses.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.compile.diagnostics import Severity
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from coxswain.compile.config import CompileConfig
    from coxswain.compile.model.gateway_objects import Gateway
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.objects import Service

__all__ = ["Addresses", "address_owners", "judge_addresses", "unsupported_address"]

_IP: Final = "IPAddress"


@dataclass(frozen=True, slots=True, kw_only=True)
class Addresses:
    """What a Gateway's ``spec.addresses`` come to.

    Attributes:
        static: the static addresses to give its Service as ``externalIPs``, in spec order,
            each once; only usable ones.
        programmed: ``Programmed=False`` with ``AddressNotUsable`` or ``AddressNotAssigned``
            when some address is not in force, else None.
        reported: ``status.addresses`` as ``(type, value)``.
    """

    static: tuple[str, ...]
    programmed: Condition | None
    reported: list[tuple[str, str]]


def unsupported_address(gateway: Gateway) -> Condition | None:
    """``Accepted=False/UnsupportedAddress`` for the first entry whose type no Service can
    carry, else None."""
    for index, (kind, _) in enumerate(gateway.addresses):
        if kind != _IP:
            return problem(
                "Accepted",
                "UnsupportedAddress",
                f"address type {kind!r} is not supported: a Gateway is reached on its "
                "Service's IP addresses (type IPAddress)",
                key=gateway.meta.key,
                field=f"spec.addresses[{index}].type",
            )
    return None


def address_owners(gateways: Iterable[Gateway]) -> dict[str, ObjectKey]:
    """Which Gateway each static address (canonical text) belongs to: the oldest that asks for
    it. ``gateways`` are all Gateways of our classes, whatever the scope, so that every scope
    judges alike."""
    owners: dict[str, ObjectKey] = {}
    for gateway in sorted(gateways, key=lambda g: g.meta.age_order):
        for kind, value in gateway.addresses:
            if kind == _IP and value:
                owners.setdefault(_canonical(value), gateway.meta.key)
    return owners


def judge_addresses(
    gateway: Gateway,
    config: CompileConfig,
    service: Service | None,
    own: list[tuple[str, str]],
    owners: Mapping[str, ObjectKey],
) -> Addresses:
    """Judge the ``IPAddress`` entries of an accepted Gateway. Pure.

    Args:
        gateway: the Gateway.
        config: for the ranges static addresses may come from.
        service: the Service that reaches the Gateway now, as observed (None before it exists).
        own: that Service's own addresses (``status.addresses`` without static ones).
        owners: :func:`address_owners` of every Gateway of ours.
    """
    key = gateway.meta.key
    static: list[str] = []
    unusable: Condition | None = None
    any_address = not gateway.addresses
    for index, (_, value) in enumerate(gateway.addresses):
        if not value:
            any_address = True
            continue
        why = _unusable(value, config)
        owner = owners.get(_canonical(value), key)
        if why is None and owner != key:
            why = f"Gateway {owner.ref} asked for it first"
        if why is None:
            text = str(ipaddress.ip_address(value))
            if text not in static:
                static.append(text)
        elif unusable is None:
            unusable = problem(
                "Programmed",
                "AddressNotUsable",
                f"address {value!r} cannot be used: {why}",
                key=key,
                field=f"spec.addresses[{index}].value",
            )
    carried = {_canonical(ip) for ip in (service.external_ips if service else ())}
    assigned = [ip for ip in static if ip in carried]
    programmed = unusable
    if programmed is None and len(assigned) < len(static):
        waiting = ", ".join(ip for ip in static if ip not in carried)
        programmed = problem(
            "Programmed",
            "AddressNotAssigned",
            f"waiting for the Gateway's Service to carry {waiting} in spec.externalIPs",
            key=key,
            field="spec.addresses",
            severity=Severity.WARNING,
        )
    reported = [(_IP, ip) for ip in assigned]
    if any_address:
        reported.extend(a for a in own if a not in reported)
    return Addresses(static=tuple(static), programmed=programmed, reported=reported)


def _unusable(value: str, config: CompileConfig) -> str | None:
    """Why a static address cannot be given to a Service, or None when it can."""
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return "it is not an IP address"
    if (
        address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
    ):
        # The API server refuses such an address in a Service's spec.externalIPs.
        return "unspecified, loopback, link-local and multicast addresses cannot be external IPs"
    if not any(address in ipaddress.ip_network(r) for r in config.gateway_address_ranges):
        ranges = ", ".join(config.gateway_address_ranges) or "none"
        return (
            "it is outside the ranges this controller may assign (--gateway-address-ranges: "
            f"{ranges})"
        )
    return None


def _canonical(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text
