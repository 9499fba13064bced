"""The Snapshot: the routing slice one proxy serves, for one scope (ARCHITECTURE §3).

Every collection is in canonical order, so equal states give equal snapshots and equal
``version`` hashes (computed by ``snapshot_json.seal``). Nothing here is ever mutated: a proxy
applies a new snapshot by swapping one reference.

Cells:
- ``ingress``: the Ingress table, virtual hosts keyed by host (``foo.example.com``,
  ``*.example.com``, or ``*`` for the catch-all), served on the Ingress ports;
- ``tls``: bind port → SNI host (``*`` for the port's default) → certificate;
- ``endpoints``: ``namespace/service/port`` → ready endpoints, so that endpoint churn never
  rewrites a route.
The Gateway table, client-certificate store and listener health are filled by the Gateway API
pass.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.scope import Scope

__all__ = [
    "CATCH_ALL",
    "Backend",
    "Certificate",
    "Endpoint",
    "IngressTable",
    "PathMatch",
    "PathRule",
    "RouteRef",
    "Snapshot",
    "VirtualHost",
]

CATCH_ALL = "*"
"""The host key of rules without a host; never a valid hostname, so it cannot collide."""


class PathMatch(enum.StrEnum):
    """How an Ingress path matches (``ImplementationSpecific`` compiles to ``Prefix``)."""

    EXACT = "Exact"
    PREFIX = "Prefix"


@dataclass(frozen=True, slots=True, order=True)
class RouteRef:
    """The object and rule a routing entry came from, e.g. ``spec.rules[0].http.paths[1]``."""

    kind: str
    namespace: str
    name: str
    rule: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Backend:
    """A Service port to send traffic to.

    ``port`` is the Service port number (0 when it could not be resolved); ``valid`` is False
    when the Service or its port does not exist, and the proxy then answers instead of
    forwarding. ``endpoints_key`` names the entry of the endpoints table.
    """

    namespace: str
    service: str
    port: int
    weight: int = 1
    valid: bool = True

    @property
    def endpoints_key(self) -> str:
        return f"{self.namespace}/{self.service}/{self.port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PathRule:
    """One Ingress path on one host; ``tls_redirect`` sends plain-HTTP requests to HTTPS."""

    path: str
    match: PathMatch
    backend: Backend
    route: RouteRef
    tls_redirect: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class VirtualHost:
    """The Ingress rules of one host.

    ``paths`` is in precedence order: Exact paths first, then prefixes longest first (Kubernetes
    Ingress spec, "Multiple matches"). ``default`` serves the host's misses (``defaultBackend``
    of an Ingress that names this host).
    """

    host: str
    paths: PVector[PathRule] = pvector()
    default: PathRule | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressTable:
    """Virtual hosts by host key, and the advertised ports the table is served on."""

    http_port: int
    https_port: int
    hosts: PMap[str, VirtualHost] = pmap()


@dataclass(frozen=True, slots=True, kw_only=True)
class Certificate:
    """A certificate chain and key (PEM) to serve, and the Secret they came from."""

    chain_pem: str
    key_pem: str
    secret: str


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    """An address (IP or, for ExternalName Services, a DNS name) and port to connect to."""

    address: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What one proxy serves. ``version`` is ``sha256:`` + the hex digest of the content."""

    version: str
    scope: Scope
    ingress: IngressTable
    tls: PMap[int, PMap[str, Certificate]] = pmap()
    endpoints: PMap[str, PVector[Endpoint]] = pmap()
