"""A snapshot indexed for per-request lookups, built once when a snapshot is applied.

Rule: no lookup scans rules. Hosts are found by one dictionary probe (exact), then one probe
for the one-label wildcard of the parent, then the catch-all; paths by one probe for Exact and
one probe per path element for Prefix. Cost depends on the request, not on the table's size.
The one exception is a host with ingress-nginx regex paths: they are tried in order, as nginx
tries its regex locations, each in time linear in the path (``compile.regex``); a host without
them never pays for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.hostnames import wildcard_parent
from coxswain.compile.regex import compile_prefix_pattern
from coxswain.compile.snapshot import CATCH_ALL, PathMatch
from coxswain.route.gateway import GatewayPortIndex, index_gateway_port

if TYPE_CHECKING:
    from coxswain.compile.regex import PrefixMatch
    from coxswain.compile.snapshot import (
        Certificate,
        ClientValidation,
        PathRule,
        Snapshot,
        VirtualHost,
    )

__all__ = ["HostIndex", "RouteTable", "build_table"]


@dataclass(frozen=True, slots=True)
class HostIndex:
    """One virtual host's paths by match kind."""

    host: str
    exact: dict[str, PathRule]
    prefix: dict[str, PathRule]
    default: PathRule | None
    regex: tuple[tuple[PrefixMatch, PathRule], ...] = ()


@dataclass(frozen=True, slots=True)
class RouteTable:
    """The index of one snapshot; ``snapshot`` is kept for endpoints and certificates.

    ``ingress_http_port`` and ``ingress_https_port`` are the *local* ports on which the Ingress
    table is served (a proxy's bind ports, which may differ from the advertised ports in the
    snapshot); None when this proxy serves no Ingress traffic.
    """

    snapshot: Snapshot
    exact_hosts: dict[str, HostIndex]
    wildcard_hosts: dict[str, HostIndex]
    catch_all: HostIndex | None
    ingress_http_port: int | None
    ingress_https_port: int | None
    gateway_ports: dict[int, GatewayPortIndex]

    def find_host(self, host: str) -> HostIndex | None:
        """The virtual host serving ``host`` (lower-case, no port): exact, wildcard, catch-all."""
        found = self.exact_hosts.get(host)
        if found is not None:
            return found
        parent = wildcard_parent(host)
        if parent is not None and (found := self.wildcard_hosts.get(parent)) is not None:
            return found
        return self.catch_all

    def certificate(self, port: int, server_name: str | None) -> Certificate | None:
        """The certificate for an SNI name on a port.

        On a Gateway port the listener the name selects decides (its hostname keys the store);
        on the Ingress HTTPS port: exact, one-label wildcard, then the default.
        """
        by_host = self.snapshot.tls.get(port)
        if by_host is None:
            return None
        if (gateway_port := self.gateway_ports.get(port)) is not None:
            name = (server_name or "").lower().rstrip(".")
            listener = gateway_port.find_listener(name)
            return None if listener is None else by_host.get(listener.table.hostname)
        if server_name:
            name = server_name.lower().rstrip(".")
            found = by_host.get(name)
            if found is not None:
                return found
            parent = wildcard_parent(name)
            if parent is not None and (found := by_host.get(f"*.{parent}")) is not None:
                return found
        return by_host.get(CATCH_ALL)

    def client_validation(self, port: int, server_name: str | None) -> ClientValidation | None:
        """The client-certificate validation for an SNI name on a Gateway port, if any."""
        by_host = self.snapshot.client_certs.get(port)
        gateway_port = self.gateway_ports.get(port)
        if by_host is None or gateway_port is None:
            return None
        listener = gateway_port.find_listener((server_name or "").lower().rstrip("."))
        return None if listener is None else by_host.get(listener.table.hostname)


def build_table(
    snapshot: Snapshot,
    *,
    ingress_http_port: int | None = None,
    ingress_https_port: int | None = None,
    previous: RouteTable | None = None,
) -> RouteTable:
    """Index a snapshot. Pure; linear in the snapshot's size, and in what changed since
    ``previous`` for the Gateway ports' route hosts (``route.gateway``).

    Args:
        snapshot: what to serve.
        ingress_http_port: the local port serving Ingress HTTP (default: the advertised one).
        ingress_https_port: the local port serving Ingress HTTPS (default: the advertised one).
        previous: the table of the snapshot served before, if any: its entries for unchanged
            route hosts are reused; the result is the same without it.
    """
    earlier = {} if previous is None else previous.gateway_ports
    exact: dict[str, HostIndex] = {}
    wildcard: dict[str, HostIndex] = {}
    catch_all: HostIndex | None = None
    for host, vhost in snapshot.ingress.hosts.items():
        index = _index_host(vhost)
        if host == CATCH_ALL:
            catch_all = index
        elif host.startswith("*."):
            wildcard[host[2:]] = index
        else:
            exact[host] = index
    return RouteTable(
        snapshot,
        exact,
        wildcard,
        catch_all,
        snapshot.ingress.http_port if ingress_http_port is None else ingress_http_port,
        snapshot.ingress.https_port if ingress_https_port is None else ingress_https_port,
        {
            port: index_gateway_port(
                tables,
                client_validation=port in snapshot.client_certs,
                previous=earlier.get(port),
            )
            for port, tables in snapshot.gateways.items()
        },
    )


def _index_host(vhost: VirtualHost) -> HostIndex:
    exact: dict[str, PathRule] = {}
    prefix: dict[str, PathRule] = {}
    regex: list[tuple[PrefixMatch, PathRule]] = []
    for rule in vhost.paths:
        if rule.match is PathMatch.REGEX:
            pattern = compile_prefix_pattern(rule.path)
            if not isinstance(pattern, str):  # the compiler refused it already
                regex.append((pattern, rule))
            continue
        (exact if rule.match is PathMatch.EXACT else prefix).setdefault(rule.path, rule)
    return HostIndex(vhost.host, exact, prefix, vhost.default, tuple(regex))
