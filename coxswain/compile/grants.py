"""Which proxy identity may subscribe to which scope (docs/contracts.md,
"The discovery protocol").

A proxy's discovery certificate names its ServiceAccount ``ns/name``. The grants are:

- the shared pool's ServiceAccount (``CompileConfig.shared_proxy_service_account`` in the
  controller's namespace) gets ``SharedPool``;
- each dedicated Gateway's ServiceAccount (``<gateway>-<class>`` in the Gateway's namespace,
  as :mod:`.provision` creates it) gets that Gateway's scope, and nothing else.

Anything else is refused (``PERMISSION_DENIED``). The grants follow the cluster: a Gateway
moved back to the shared pool loses its grant with the next state, so a leftover dedicated
proxy cannot keep reading its routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrsistent import pmap

from coxswain.compile.backends import index_services
from coxswain.compile.gateway.model import analyse_gateways
from coxswain.compile.scope import GatewayScope, Scope, SharedPool

if TYPE_CHECKING:
    from pyrsistent.typing import PMap

    from coxswain.compile.config import CompileConfig
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.state import ClusterState

__all__ = ["subscription_grants"]


def subscription_grants(
    state: ClusterState, config: CompileConfig, model: GatewayModel | None = None
) -> PMap[tuple[str, str], Scope]:
    """ServiceAccount ``(namespace, name)`` → the one scope it may subscribe to. Pure.

    ``model`` is ``analyse_gateways(state, config, ...)`` with no scope, when the caller has it
    already (the controller computes it once per round for grants, status and provision).
    """
    grants: dict[tuple[str, str], Scope] = {
        (config.namespace, config.shared_proxy_service_account): SharedPool()
    }
    if config.gateway_api:
        if model is None:
            model = analyse_gateways(state, config, index_services(state))
        for gateway in model.gateways:
            placed = model.placements.get(gateway.meta.key)
            if placed is not None and placed.dedicated:
                key = gateway.meta.key
                grants[(key.namespace, placed.name)] = GatewayScope(key.namespace, key.name)
    return pmap(grants)
