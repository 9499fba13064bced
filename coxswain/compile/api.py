"""``compile``: the pass order, and nothing else.

Passes (STYLE §4), each a function of explicit inputs:
1. select our Ingresses (classes);
2. TLS: the Ingress HTTPS port's certificates;
3. rules: virtual hosts, backends resolved;
4. endpoints for every backend used;
5. the snapshot, sealed with its content hash, and the diagnostics of every object read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain.compile.backends import endpoints_table, index_services
from coxswain.compile.config import CompileConfig
from coxswain.compile.diagnostics import Diagnostic, diagnostic_order
from coxswain.compile.ingress.certificates import ingress_certificates
from coxswain.compile.ingress.classes import select_ingresses
from coxswain.compile.ingress.rules import ingress_hosts
from coxswain.compile.snapshot import IngressTable, Snapshot
from coxswain.compile.snapshot_json import seal

if TYPE_CHECKING:
    from pyrsistent.typing import PVector

    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.scope import Scope

__all__ = ["CompileResult", "compile"]

_DEFAULT_CONFIG = CompileConfig()


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileResult:
    """The snapshot of one scope and every finding about the objects it was built from."""

    snapshot: Snapshot
    diagnostics: PVector[Diagnostic]


def compile(  # noqa: A001 - the name the architecture gives the core's one entry point
    state: ClusterState, scope: Scope, config: CompileConfig = _DEFAULT_CONFIG
) -> CompileResult:
    """Compile the routing slice of ``scope``. Pure: same inputs, same result; never raises."""
    ingresses, found = select_ingresses(state, config)
    certificates, tls_found, secrets_read = ingress_certificates(ingresses, state)
    services = index_services(state)
    hosts, rules_found, services_read = ingress_hosts(ingresses, services, certificates)
    backends = [
        rule.backend
        for vhost in hosts.values()
        for rule in (*vhost.paths, *((vhost.default,) if vhost.default else ()))
    ]
    snapshot = Snapshot(
        version="",
        scope=scope,
        ingress=IngressTable(
            http_port=config.ingress_http_port, https_port=config.ingress_https_port, hosts=hosts
        ),
        tls=pmap({config.ingress_https_port: certificates}) if certificates else pmap(),
        endpoints=endpoints_table(services, backends),
    )
    read = _read_objects(state, secrets_read, services_read)
    diagnostics = [
        *state.input_diagnostics,
        *found,
        *(d for i in ingresses for d in i.diagnostics),
        *tls_found,
        *rules_found,
        *read,
    ]
    return CompileResult(
        snapshot=seal(snapshot),
        diagnostics=pvector(sorted(set(diagnostics), key=diagnostic_order)),
    )


def _read_objects(
    state: ClusterState, secrets: set[ObjectKey], services: set[ObjectKey]
) -> list[Diagnostic]:
    """Decode findings of the Secrets, Services and EndpointSlices the snapshot was built from."""
    found: list[Diagnostic] = []
    for key in secrets:
        if (secret := state.secrets.get(key)) is not None:
            found.extend(secret.diagnostics)
    names = {(k.namespace, k.name) for k in services}
    for key in services:
        if (service := state.services.get(key)) is not None:
            found.extend(service.diagnostics)
    for key, endpoint_slice in state.endpoint_slices.items():
        if (key.namespace, endpoint_slice.service_name) in names:
            found.extend(endpoint_slice.diagnostics)
    return found
