"""Infrastructure inputs: CoxswainGatewayParameters, and the Deployments and ServiceAccounts the
controller provisioned earlier (their readiness and labels drive mode switches).

``CoxswainGatewayParameters`` (gateway.coxswain-labs.dev/v1alpha1) tunes a dedicated proxy. Its
free-form blocks (``resources``, ``podTemplate``, ``autoscaling``) are kept as canonical JSON
text, immutable and comparable; the provisioning pass parses them when it merges. A field whose
bad value refuses the parameters whole (``trustedProxies``) is kept in ``invalid`` for the
placement pass, which refuses the Gateway or class naming it (``InvalidParameters``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pvector

from coxswain.compile.model.canonical import canonical_json
from coxswain.compile.model.trusted_proxies import trusted_proxies

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyrsistent.typing import PVector

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.fields import FieldReader
    from coxswain.compile.model.objects import Meta

__all__ = [
    "PARAMETERS_GROUP",
    "SERVICE_TYPES",
    "CoxswainGatewayParameters",
    "Deployment",
    "ServiceAccount",
    "decode_deployment",
    "decode_parameters",
    "decode_service_account",
]

PARAMETERS_GROUP: Final = "gateway.coxswain-labs.dev"
SERVICE_TYPES: Final = ("LoadBalancer", "ClusterIP", "NodePort")


@dataclass(frozen=True, slots=True, kw_only=True)
class CoxswainGatewayParameters:
    """Dedicated-proxy parameters; None means "not set here" (the next level decides).

    ``trusted_proxies`` are canonical network texts (an empty tuple trusts no peer);
    ``invalid`` the ``(field, why)`` of the values that make these parameters unusable.
    """

    meta: Meta
    replicas: int | None = None
    image: str | None = None
    service_type: str | None = None
    resources: str | None = None
    pod_template: str | None = None
    autoscaling: str | None = None
    trusted_proxies: tuple[str, ...] | None = None
    invalid: tuple[tuple[str, str], ...] = ()
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """A Deployment: whether at least one replica is ready (a dedicated proxy serving)."""

    meta: Meta
    ready: bool = False
    diagnostics: PVector[Diagnostic] = pvector()


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceAccount:
    """A ServiceAccount (only its identity and labels matter, to prune what we own)."""

    meta: Meta
    diagnostics: PVector[Diagnostic] = pvector()


def _block(fields: FieldReader, value: object, field: str) -> str | None:
    block = fields.mapping(value, field)
    return None if block is None else canonical_json(block)


def decode_parameters(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> CoxswainGatewayParameters:
    del raw
    service_type = fields.string(spec.get("serviceType"), "spec.serviceType")
    if service_type is not None and service_type not in SERVICE_TYPES:
        fields.problem(
            "spec.serviceType",
            "InvalidField",
            f"{service_type!r} is not one of {', '.join(SERVICE_TYPES)}; ignored",
        )
        service_type = None
    networks: tuple[str, ...] | None = None
    invalid: list[tuple[str, str]] = []
    if (listed := spec.get("trustedProxies")) is not None:
        networks, invalid = trusted_proxies(listed, "spec.trustedProxies")
    return CoxswainGatewayParameters(
        meta=meta,
        replicas=fields.integer(spec.get("replicas"), "spec.replicas", low=0, high=1000),
        image=fields.string(spec.get("image"), "spec.image") or None,
        service_type=service_type,
        resources=_block(fields, spec.get("resources"), "spec.resources"),
        pod_template=_block(fields, spec.get("podTemplate"), "spec.podTemplate"),
        autoscaling=_block(fields, spec.get("autoscaling"), "spec.autoscaling"),
        trusted_proxies=networks,
        invalid=tuple(invalid),
        diagnostics=fields.diagnostics(),
    )


def decode_deployment(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> Deployment:
    del spec
    status = fields.mapping(raw.get("status"), "status") or {}
    ready = fields.integer(status.get("readyReplicas"), "status.readyReplicas", low=0, high=2**31)
    return Deployment(meta=meta, ready=bool(ready), diagnostics=fields.diagnostics())


def decode_service_account(
    fields: FieldReader, meta: Meta, raw: Mapping[str, Any], spec: Mapping[str, Any]
) -> ServiceAccount:
    del raw, spec
    return ServiceAccount(meta=meta, diagnostics=fields.diagnostics())
