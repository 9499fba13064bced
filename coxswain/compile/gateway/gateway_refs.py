"""The Gateway's own references and its top-level conditions beyond Accepted and Programmed.

Rules (Gateway API v1, ``GatewayConditionType``):
1. ``ResolvedRefs`` resolves the references that belong to no listener and sums up the
   listeners' (a positive-polarity summary). The backend client certificate
   (``spec.tls.backend.clientCertificateRef``) is resolved as a listener's certificate is: a
   ``kubernetes.io/tls`` Secret of the core group, from another namespace only under a
   ReferenceGrant. A reference another namespace does not grant is ``RefNotPermitted``; a
   missing, wrong-kind or malformed one ``InvalidClientCertificateRef``. Otherwise a listener
   whose ``ResolvedRefs`` is False makes it ``False/ListenersNotResolved``. None of these
   changes ``Accepted`` or ``Programmed`` ("This condition does not directly impact the
   Gateway's Accepted or Programmed conditions").
2. ``InsecureFrontendValidationMode`` is True, reason ``ConfigurationChanged``, while the
   frontend validation default or any per-port override is ``AllowInsecureFallback``, and
   absent otherwise ("removed as soon as FrontendValidationModeType is changed back").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.gateway.listeners import resolve_certificate
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.model.gateway_objects import Gateway
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.snapshot import Certificate

__all__ = ["GatewayRefs", "judge_gateway_refs"]

_INSECURE = "AllowInsecureFallback"


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayRefs:
    """The judgement of a Gateway's own references: its extra top-level conditions, the backend
    client certificate when it resolved, and the objects read to judge them."""

    conditions: tuple[Condition, ...]
    client_certificate: Certificate | None
    read: frozenset[ObjectKey]


def judge_gateway_refs(
    gateway: Gateway, listeners: Sequence[ListenerVerdict], state: ClusterState, grants: Grants
) -> GatewayRefs:
    """Rules 1 and 2 for one Gateway, whose listeners were judged. Pure."""
    read: set[ObjectKey] = set()
    certificate: Certificate | None = None
    resolved = Condition(type="ResolvedRefs", status=True, reason="ResolvedRefs")
    ref = gateway.backend_client_certificate
    unresolved = [v.listener.name for v in listeners if not v.resolved_refs.status]
    if ref is not None:
        reason, message, certificate = resolve_certificate(
            gateway.meta.key, ref, state, grants, read, invalid="InvalidClientCertificateRef"
        )
        if certificate is None:
            resolved = problem(
                "ResolvedRefs", reason, message, key=gateway.meta.key, field=ref.field
            )
    if resolved.status and unresolved:
        resolved = Condition(
            type="ResolvedRefs",
            status=False,
            reason="ListenersNotResolved",
            message=f"listeners with unresolved references: {', '.join(unresolved)}",
        )
    conditions = [resolved]
    modes = [gateway.frontend_default, *gateway.frontend_per_port.values()]
    if any(m is not None and m.mode == _INSECURE for m in modes):
        conditions.append(
            Condition(
                type="InsecureFrontendValidationMode",
                status=True,
                reason="ConfigurationChanged",
                message="frontend client-certificate validation admits clients without a "
                f"valid certificate ({_INSECURE})",
            )
        )
    return GatewayRefs(
        conditions=tuple(conditions), client_certificate=certificate, read=frozenset(read)
    )
