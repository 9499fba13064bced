"""Desired status of our Ingresses: ``status.loadBalancer.ingress`` (networking.k8s.io/v1).

Rule: every Ingress of our classes reports the addresses the installation advertises
(``--status-address``, as ingress-nginx's ``--publish-status-address``): IP literals as ``ip``,
names as ``hostname``. Without any, the list is empty.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from coxswain.compile.ingress.classes import select_ingresses
from coxswain.compile.status import ObjectStatus

if TYPE_CHECKING:
    from coxswain.compile.config import CompileConfig
    from coxswain.compile.model.state import ClusterState

__all__ = ["ingress_statuses"]


def _entry(address: str) -> dict[str, str]:
    is_ip = ":" in address or all(part.isdigit() for part in address.split("."))
    return {"ip": address} if is_ip else {"hostname": address}


def ingress_statuses(state: ClusterState, config: CompileConfig) -> list[ObjectStatus]:
    """The status of every Ingress we own. Pure."""
    ingresses, _ = select_ingresses(state, config)
    balancer = {"ingress": [_entry(a) for a in config.status_addresses]}
    body = json.dumps({"loadBalancer": balancer}, sort_keys=True, separators=(",", ":"))
    return [
        ObjectStatus(
            api_version="networking.k8s.io/v1",
            kind="Ingress",
            namespace=i.meta.key.namespace,
            name=i.meta.key.name,
            generation=i.meta.generation,
            body=body,
        )
        for i in ingresses
    ]
