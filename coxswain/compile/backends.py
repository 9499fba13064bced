"""Service references → backends, and EndpointSlices → the endpoints table.

Rules:
1. A backend names a Service port by number or by name; a name is resolved through the
   Service's ``spec.ports``. A missing Service or port gives an invalid backend (the proxy
   answers it) and a diagnostic on the referring object.
2. A Service port's endpoints come from the EndpointSlices labelled
   ``kubernetes.io/service-name`` in its namespace: the slice port whose name equals the Service
   port's name (``""`` for the unnamed port), ready endpoints only (discovery.k8s.io/v1).
3. An ExternalName Service has one endpoint: its DNS name, on the Service port.
4. Endpoints are deduplicated and sorted, so slice boundaries never show in the snapshot.
   A backend with ``cluster_ip`` (ingress-nginx's ``service-upstream``) has one endpoint: the
   Service's cluster IP on the Service port (none for a headless Service); an ExternalName
   Service keeps its DNS name.
5. A Service port whose ``appProtocol`` is ``kubernetes.io/h2c`` (KEP-3726, "Standard
   Application Protocols": HTTP/2 over cleartext with prior knowledge) is spoken to in HTTP/2
   (``BackendProtocol.H2C``), whoever routes to it (Gateway API
   ``HTTPRouteBackendProtocolH2C``); any other value, or none, is HTTP/1.1. ``kubernetes.io/ws``
   needs nothing here: a WebSocket upgrade is HTTP/1.1 (RFC 6455).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

from pyrsistent import pmap, pvector

from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.objects import ServicePort
from coxswain.compile.snapshot import Backend, BackendProtocol, Endpoint

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.model.objects import EndpointSlice, Service
    from coxswain.compile.model.state import ClusterState

__all__ = [
    "EndpointsCache",
    "ServiceIndex",
    "endpoints_table",
    "index_services",
    "resolve_backend",
    "service_endpoints",
    "slice_endpoint_keys",
]

_H2C_APP_PROTOCOL: Final = "kubernetes.io/h2c"
_UNKNOWN: Final = object()


@dataclass(frozen=True, slots=True)
class ServiceIndex:
    """Services and their slices by ``(namespace, name)``, read through the state's indexes, so
    that a lookup costs the same whatever the cluster's size.

    A compile asks for the same few Services once per backend reference; ``found`` remembers
    each answer, in a plain dict, for this index's life (one compile, of one immutable state),
    since a persistent map's lookup costs several Python calls; ``resolved`` remembers
    ``resolve_backend``'s answers, so that every rule naming the same Service port and weight
    shares one backend record.
    """

    state: ClusterState
    found: dict[tuple[str, str], Service | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    resolved: dict[tuple[str, str, int | None, str | None, int], tuple[Backend, str | None]] = (
        field(default_factory=dict, init=False, repr=False, compare=False)
    )

    def service(self, namespace: str, name: str) -> Service | None:
        key = (namespace, name)
        known = self.found.get(key, _UNKNOWN)
        if known is not _UNKNOWN:
            return known  # type: ignore[return-value]
        try:
            service: Service | None = self.state.services[ObjectKey("Service", namespace, name)]
        except KeyError:
            service = None
        self.found[key] = service
        return service

    def slices(self, namespace: str, name: str) -> list[EndpointSlice]:
        """The Service's EndpointSlices, by name (only findings need an order)."""
        keys = self.state.slices_by_service.get((namespace, name), ())
        return [self.state.endpoint_slices[k] for k in sorted(keys, key=lambda k: k.name)]


def index_services(state: ClusterState) -> ServiceIndex:
    """The Service view of a state. Pure; constant time."""
    return ServiceIndex(state)


def resolve_backend(
    index: ServiceIndex,
    *,
    namespace: str,
    service: str,
    port_number: int | None,
    port_name: str | None,
    weight: int = 1,
) -> tuple[Backend, str | None]:
    """Resolve a Service reference.

    Returns:
        The backend, and None or a sentence saying why it is invalid.
    """
    target = index.service(namespace, service)  # asked every time: RecordedServices records it
    key = (namespace, service, port_number, port_name, weight)
    known = index.resolved.get(key)
    if known is None:
        known = index.resolved[key] = _resolved(target, *key)
    return known


def _resolved(
    target: Service | None,
    namespace: str,
    service: str,
    port_number: int | None,
    port_name: str | None,
    weight: int,
) -> tuple[Backend, str | None]:
    found = None if target is None else _service_port(target, port_number, port_name)
    if found is None:
        wanted = port_number if port_number is not None else repr(port_name)
        problem = (
            f"Service {namespace}/{service} does not exist"
            if target is None
            else f"Service {namespace}/{service} has no port {wanted}"
        )
        invalid = Backend(
            namespace=namespace, service=service, port=port_number or 0, weight=weight, valid=False
        )
        return invalid, problem
    protocol = (
        BackendProtocol.H2C if found.app_protocol == _H2C_APP_PROTOCOL else BackendProtocol.HTTP1
    )
    return Backend(
        namespace=namespace, service=service, port=found.port, weight=weight, protocol=protocol
    ), None


def _service_port(service: Service, number: int | None, name: str | None) -> ServicePort | None:
    for port in service.ports:
        if (number is not None and port.port == number) or (name is not None and port.name == name):
            return port
    if number is not None and service.type == "ExternalName" and not service.ports:
        # ExternalName Services often list no ports; the number is then the remote port.
        return ServicePort(name="", port=number)
    return None


class EndpointsCache(Protocol):
    """Where endpoint entries may be remembered between compiles (``compile.memo.CompileMemo``,
    which forgets a Service's entries when the Service or one of its slices changes); the
    answer must be what ``service_endpoints`` would give."""

    def endpoints(
        self, index: ServiceIndex, namespace: str, name: str, port_number: int
    ) -> PVector[Endpoint]:
        """``service_endpoints(index, namespace, name, port_number)``."""
        ...


def endpoints_table(
    index: ServiceIndex,
    backends: Iterable[Backend],
    cache: EndpointsCache | None = None,
    earlier: PMap[str, PVector[Endpoint]] | None = None,
) -> PMap[str, PVector[Endpoint]]:
    """The endpoints of every valid backend, keyed by ``namespace/service/port``. Pure.
    ``cache``: entries remembered from earlier compiles; ``earlier``: an earlier table, whose
    structure the new one shares (itself when every entry is the same object)."""
    entry = service_endpoints if cache is None else cache.endpoints
    table: dict[str, PVector[Endpoint]] = {}
    for backend in backends:
        key = backend.endpoints_key
        if not backend.valid or key in table:
            continue
        if backend.cluster_ip:
            value = _cluster_ip(index, backend)
            table[key] = earlier[key] if earlier and earlier.get(key) == value else value
        else:
            table[key] = entry(index, backend.namespace, backend.service, backend.port)
    if earlier is None:
        return pmap(table)
    evolver = earlier.evolver()
    for key, value in table.items():
        if earlier.get(key) is not value:
            evolver[key] = value
    if len(evolver) != len(table):  # some earlier keys are gone
        for key in earlier:
            if key not in table:
                del evolver[key]
    return evolver.persistent()


def _cluster_ip(index: ServiceIndex, backend: Backend) -> PVector[Endpoint]:
    service = index.service(backend.namespace, backend.service)
    if service is None or service.type == "ExternalName":
        return service_endpoints(index, backend.namespace, backend.service, backend.port)
    if not service.cluster_ip or service.cluster_ip == "None":
        return pvector()
    return pvector([Endpoint(service.cluster_ip, backend.port)])


def service_endpoints(
    index: ServiceIndex, namespace: str, name: str, port_number: int
) -> PVector[Endpoint]:
    """The endpoints table's entry of one Service port (rules 2 to 4). Pure."""
    return pvector(sorted(_endpoints(index, namespace, name, port_number)))


def _endpoints(index: ServiceIndex, namespace: str, name: str, port_number: int) -> set[Endpoint]:
    service = index.service(namespace, name)
    if service is None:
        return set()
    if service.type == "ExternalName":
        return {Endpoint(service.external_name, port_number)} if service.external_name else set()
    port = _service_port(service, port_number, None)
    if port is None:
        return set()
    found: set[Endpoint] = set()
    for endpoint_slice in index.slices(namespace, name):
        numbers = [p.port for p in endpoint_slice.ports if p.name == port.name]
        if not numbers:
            continue
        for endpoint in endpoint_slice.endpoints:
            if endpoint.ready:
                found.add(Endpoint(endpoint.address, numbers[0]))
    return found


def slice_endpoint_keys(
    endpoints: PMap[str, PVector[Endpoint]],
) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """The keys of an endpoints table a slice change may change, with their ports, by Service."""
    keys: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for key in endpoints:
        namespace, name, port, *cluster_ip = key.split("/")
        if not cluster_ip:  # a cluster IP is the Service's alone, no slice changes it
            keys.setdefault((namespace, name), []).append((key, int(port)))
    return keys
