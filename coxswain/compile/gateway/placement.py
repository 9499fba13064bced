"""Where each of our Gateways is served: the shared pool, or a dedicated proxy.

The models are described in docs/architecture.md, "Deployment models".

Rules:
1. A Gateway is dedicated when ``spec.infrastructure.parametersRef`` names a
   ``CoxswainGatewayParameters`` in its namespace, or its GatewayClass's ``spec.parametersRef``
   names one (with a namespace). Any other kind, a missing namespace on the class's reference,
   or a missing object is ``Accepted=False/InvalidParameters`` on the object holding the
   reference (GEP-1867 / GatewayClass ``parametersRef``), and nothing is provisioned for it.
   So is a ``podTemplate`` that sets a field outside the allow-list
   (``compile.pod_template_policy``), or a ``trustedProxies`` that is not a short list of
   networks (``compile.model.trusted_proxies``): the refusal names the object holding the
   reference, and a diagnostic per refused field names the parameters object and the field's
   path.
2. Parameters merge per field: the Gateway's over the class's over the defaults; pod templates
   are applied in that order by strategic merge (``provision``).
3. A dedicated proxy's objects are named ``<gateway>-<gatewayclass>`` (cut and hashed to fit a
   DNS label). The shared pool keeps serving a dedicated Gateway until that Deployment has a
   ready replica; then the Gateway leaves the SharedPool snapshot.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.infra_objects import PARAMETERS_GROUP
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.pod_template_policy import forbidden_fields
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.model.gateway_objects import Gateway, GatewayClass, ObjectRef
    from coxswain.compile.model.infra_objects import CoxswainGatewayParameters
    from coxswain.compile.model.state import ClusterState

__all__ = [
    "PARAMETERS_KIND",
    "Placement",
    "class_parameters",
    "dedicated_name",
    "fit_name",
    "place_gateway",
]

PARAMETERS_KIND: Final = (PARAMETERS_GROUP, "CoxswainGatewayParameters")
_LABEL_MAX: Final = 63
_FIELDS_REPORTED: Final = 10  # refused fields given a diagnostic each; the rest are counted
_FIELDS_NAMED: Final = 3  # of which the condition's message names these
_PATH_SHOWN: Final = 120  # characters of a path in the message (map keys are the user's)


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """How one Gateway is served.

    ``layers`` are the parameters that apply, least specific first (class, then Gateway);
    empty for a shared Gateway. ``name`` names the dedicated objects; ``ready`` says whether the
    dedicated Deployment has a ready replica.
    """

    layers: tuple[CoxswainGatewayParameters, ...] = ()
    name: str = ""
    ready: bool = False

    @property
    def dedicated(self) -> bool:
        return bool(self.layers)

    @property
    def in_shared_pool(self) -> bool:
        """Served by the shared pool: shared, or dedicated with no ready proxy yet."""
        return not self.layers or not self.ready


def fit_name(name: str, limit: int = _LABEL_MAX) -> str:
    """``name`` if it fits a DNS label, else a prefix and 8 hex of its SHA-256 (never invalid)."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: limit - 9].rstrip('-')}-{digest}"


def dedicated_name(gateway: Gateway) -> str:
    """``<gateway>-<gatewayclass>``, fitted to 63 characters."""
    return fit_name(f"{gateway.meta.key.name}-{gateway.class_name}")


def _lookup(
    ref: ObjectRef, namespace: str | None, state: ClusterState, owner: ObjectKey
) -> CoxswainGatewayParameters | Condition:
    def refusal(message: str) -> Condition:
        return problem(
            "Accepted",
            "InvalidParameters",
            f"{owner.kind} parametersRef {message}",
            key=owner,
            field=ref.field,
        )

    group = ref.group or "core"
    if (ref.group, ref.kind) != PARAMETERS_KIND:
        return refusal(
            f"{group}/{ref.kind} {ref.name}: only {PARAMETERS_KIND[0]}/{PARAMETERS_KIND[1]} is "
            "supported",
        )
    if namespace is None:
        return refusal(f"{ref.kind} {ref.name}: a namespace is required")
    found = state.parameters.get(ObjectKey("CoxswainGatewayParameters", namespace, ref.name))
    if found is None:
        return refusal(f"{ref.kind} {namespace}/{ref.name} does not exist")
    if found.invalid:
        return _refused_fields(refusal, found, list(found.invalid), "invalid")
    forbidden = (
        [] if found.pod_template is None else forbidden_fields(json.loads(found.pod_template))
    )
    if forbidden:
        return _refused_fields(refusal, found, forbidden, "its podTemplate may not set")
    return found


def _refused_fields(
    refusal: Callable[[str], Condition],
    parameters: CoxswainGatewayParameters,
    refused: list[tuple[str, str]],
    what: str,
) -> Condition:
    """The refusal of parameters for some of their fields (``(path, why)``): the owner's
    condition, ``what`` and the first few fields, plus a diagnostic on the parameters object
    for each of the first ``_FIELDS_REPORTED``."""
    shown = [path[:_PATH_SHOWN] for path, _ in refused[:_FIELDS_NAMED]]
    more = len(refused) - len(shown)
    listed = ", ".join(shown) + (f" and {more} more" if more else "")
    owner = refusal(f"{parameters.meta.key.kind} {parameters.meta.key.ref}: {what} {listed}")
    detail = tuple(
        Diagnostic(
            key=parameters.meta.key,
            field=path,
            severity=Severity.ERROR,
            reason="InvalidParameters",
            message=f"{why}; nothing is provisioned from these parameters",
        )
        for path, why in refused[:_FIELDS_REPORTED]
    )
    return replace(owner, diagnostics=(*owner.diagnostics, *detail))


def class_parameters(
    gateway_class: GatewayClass, state: ClusterState
) -> CoxswainGatewayParameters | Condition | None:
    """The class's parameters, a refusal, or None when it names none. Pure."""
    ref = gateway_class.parameters_ref
    if ref is None:
        return None
    return _lookup(ref, ref.namespace, state, gateway_class.meta.key)


def place_gateway(
    gateway: Gateway,
    from_class: CoxswainGatewayParameters | None,
    state: ClusterState,
) -> Placement | Condition:
    """Where ``gateway`` is served, or why it is refused. Pure."""
    layers: list[CoxswainGatewayParameters] = [] if from_class is None else [from_class]
    ref = gateway.parameters_ref
    if ref is not None:
        own = _lookup(ref, gateway.meta.key.namespace, state, gateway.meta.key)
        if isinstance(own, Condition):
            return own
        layers.append(own)
    if not layers:
        return Placement()
    name = dedicated_name(gateway)
    deployment = state.deployments.get(ObjectKey("Deployment", gateway.meta.key.namespace, name))
    return Placement(
        layers=tuple(layers), name=name, ready=deployment is not None and deployment.ready
    )
