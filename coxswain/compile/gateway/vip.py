"""Per-Gateway VIP Services of the shared pool: their names, and what they remember.

Each shared Gateway is reached through a VIP Service in the controller namespace named
``<ns>-<name>`` (cut to 40 characters, trailing ``-`` removed), ``-``, the first 8 hex digits
of SHA-256 of ``ns/name``, ``-shared-gw`` (docs/contracts.md, "Owned objects"). The Services
are the only memory of the internal port allocation: each Service port is a listener port, its
``targetPort`` the internal port. A Gateway's ``status.addresses`` comes from its VIP's
address (:mod:`.addresses`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from coxswain.compile.model.objects import Service
    from coxswain.compile.model.state import ClusterState

__all__ = ["VIP_SUFFIX", "service_addresses", "vip_memory", "vip_service_name"]

VIP_SUFFIX: Final = "-shared-gw"
_PREFIX_MAX: Final = 40


def _stem(namespace: str, name: str) -> str:
    prefix = f"{namespace}-{name}"[:_PREFIX_MAX].rstrip("-")
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:8]
    return f"{prefix}-{digest}"


def vip_service_name(namespace: str, name: str) -> str:
    """The VIP Service name of Gateway ``namespace/name`` (at most 59 characters)."""
    return _stem(namespace, name) + VIP_SUFFIX


def vip_memory(
    state: ClusterState, controller_namespace: str, gateways: set[str]
) -> tuple[dict[tuple[str, int], int], set[int]]:
    """The port assignments the VIP Services remember. Pure.

    Args:
        state: where the Services are.
        controller_namespace: where VIP Services live.
        gateways: ``ns/name`` of the shared Gateways served now.

    Returns:
        ``(gateway, listener port) → internal port`` for current Gateways, and the internal
        ports still held by VIP Services of Gateways that are gone (reserved until deleted).
    """
    by_name = {vip_service_name(*ref.split("/", 1)): ref for ref in gateways}
    existing: dict[tuple[str, int], int] = {}
    reserved: set[int] = set()
    for key, service in state.services.items():
        if key.namespace != controller_namespace or not key.name.endswith(VIP_SUFFIX):
            continue
        owner = by_name.get(key.name)
        for port in service.ports:
            if not isinstance(port.target_port, int):
                continue
            if owner is None:
                reserved.add(port.target_port)
            else:
                existing[(owner, port.port)] = port.target_port
    return existing, reserved


def service_addresses(service: Service | None) -> list[tuple[str, str]]:
    """A Service's reachable addresses: load-balancer IPs or hostnames for ``LoadBalancer``,
    else its cluster IP; empty until it has one."""
    if service is None:
        return []
    if service.type == "LoadBalancer":
        return [(_address_type(a), a) for a in service.load_balancer]
    if service.cluster_ip and service.cluster_ip != "None":
        return [("IPAddress", service.cluster_ip)]
    return []


def _address_type(address: str) -> str:
    """``IPAddress`` for IPv4/IPv6 literals, ``Hostname`` for names."""
    if ":" in address or all(part.isdigit() for part in address.split(".")):
        return "IPAddress"
    return "Hostname"
