"""``provision``: every Kubernetes object the controller must own, and those it must delete.

Names and labels are in docs/contracts.md ("Owned objects"). Per Gateway the shared pool serves:
- a VIP Service in the controller namespace (``vip_service_name``), selecting the shared pool
  (``shared_proxy_selector``), each listener port mapped to its internal ``targetPort``, of
  type ``shared_vip_service_type``, carrying the Gateway's infrastructure labels and annotations
  (none when no listener has an internal port: the API refuses a Service without ports), and
  ``gateway.networking.k8s.io/gateway-name`` (GEP-1762) on every object made for a Gateway;
  the Gateway's usable static addresses are the ``externalIPs`` of whichever of its VIP or
  dedicated Service reaches it now (:mod:`coxswain.compile.gateway.addresses`);
- an identity ServiceAccount in the Gateway's namespace (GEP-1867), named like the VIP with
  ``-shared-sa``, infrastructure labels (reserved ``app.kubernetes.io/*`` keys dropped) and
  annotations, owner-referenced to the Gateway, token automount off, no RBAC.
Per dedicated Gateway: a Deployment, Service and ServiceAccount named ``<gateway>-<class>`` in
its namespace (and a HorizontalPodAutoscaler when ``autoscaling`` is set), owner-referenced to
the Gateway, from the merged parameters; its proxy trusts the merged ``trustedProxies`` (the
controller's ``proxy_trusted_proxies`` when no layer sets them) with forwarding fields.

Deletions: owned objects (label ``app.kubernetes.io/managed-by: coxswain`` and a role label)
that are no longer desired. The dedicated objects of a refused Gateway (missing or invalid
parameters) are neither updated nor deleted (``held``). Mode switches never leave a Gateway
unserved: a VIP Service stays while the shared pool still serves a Gateway (until its dedicated
proxy is ready), and the dedicated objects of a Gateway back in shared mode stay until the
shared pool serves it again (``shared_served``; offline, None, it is taken to).

Pure: objects are returned as API data (canonical JSON text), never applied here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pvector

from coxswain.compile.backends import index_services
from coxswain.compile.diagnostics import Diagnostic, diagnostic_order
from coxswain.compile.gateway.model import analyse_gateways
from coxswain.compile.gateway.placement import dedicated_name
from coxswain.compile.gateway.vip import VIP_SUFFIX, vip_service_name
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.pod_template_policy import reserved_key
from coxswain.compile.podspec import secure_pod, strategic_merge

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from pyrsistent.typing import PVector

    from coxswain.compile.config import CompileConfig
    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.gateway.placement import Placement
    from coxswain.compile.model.gateway_objects import Gateway
    from coxswain.compile.model.state import ClusterState

__all__ = ["DesiredObject", "DesiredObjects", "provision"]

MANAGED_BY: Final = ("app.kubernetes.io/managed-by", "coxswain")
ROLE: Final = "coxswain-labs.dev/role"
GATEWAY_ANNOTATION: Final = "coxswain-labs.dev/gateway"
ROLE_VIP: Final = "shared-vip"
ROLE_IDENTITY: Final = "shared-identity"
ROLE_DEDICATED: Final = "dedicated-proxy"
ADMIN_PORT: Final = 9901
TLS_MOUNT: Final = "/etc/coxswain/discovery"
_RESERVED_PREFIX: Final = "app.kubernetes.io/"
GATEWAY_NAME_LABEL: Final = "gateway.networking.k8s.io/gateway-name"
_LABEL_VALUE_MAX: Final = 63


@dataclass(frozen=True, slots=True, kw_only=True)
class DesiredObject:
    """One object to apply; ``body`` is its full manifest as canonical JSON."""

    api_version: str
    kind: str
    namespace: str
    name: str
    body: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DesiredObjects:
    """What the controller must own, what it must delete, and findings on the way.

    ``held`` are the (namespace, name) of the dedicated objects of refused Gateways (their
    parameters are missing or invalid): whatever runs under that name is left as it is, neither
    updated nor deleted, autoscalers included (the compiler's state does not hold those).
    """

    objects: PVector[DesiredObject]
    deletions: PVector[ObjectKey]
    diagnostics: PVector[Diagnostic]
    held: PVector[tuple[str, str]] = pvector()


def provision(
    state: ClusterState,
    config: CompileConfig,
    shared_served: Collection[str] | None = None,
    model: GatewayModel | None = None,
) -> DesiredObjects:
    """Every object to own and to delete. Pure.

    Args:
        state: the cluster.
        config: installation settings (namespace, selector, VIP type, image, discovery).
        shared_served: ``ns/name`` of the Gateways the shared pool has acked; None offline.
        model: the scope-less ``analyse_gateways`` of ``state``, when the caller has it.
    """
    if model is None:
        model = analyse_gateways(state, config, index_services(state))
    objects: list[dict[str, Any]] = []
    found: list[Diagnostic] = []
    held: set[tuple[str, str]] = set()
    for gateway in model.gateways:
        placed = model.placements.get(gateway.meta.key)
        if placed is None:  # refused: nothing is provisioned for it, nothing of it touched
            held.add((gateway.meta.key.namespace, dedicated_name(gateway)))
            continue
        if placed.in_shared_pool:
            vip = _vip_service(gateway, model, config)
            if vip["spec"]["ports"]:  # the API refuses a Service without ports
                objects.append(vip)
            if not placed.dedicated:
                objects.append(_identity(gateway))
        found.extend(d for layer in placed.layers for d in layer.diagnostics)
        if placed.dedicated:
            objects.extend(
                _dedicated(
                    gateway,
                    placed,
                    model.listeners[gateway.meta.key],
                    config,
                    _external_ips(gateway, model, dedicated=True),
                )
            )
    desired = {_key(o) for o in objects}
    deletions = _deletions(state, model, config, desired, shared_served, held)
    return DesiredObjects(
        objects=pvector(
            DesiredObject(
                api_version=o["apiVersion"],
                kind=o["kind"],
                namespace=o["metadata"].get("namespace", ""),
                name=o["metadata"]["name"],
                body=json.dumps(o, sort_keys=True, separators=(",", ":")),
            )
            for o in sorted(objects, key=_key)
        ),
        deletions=pvector(sorted(deletions)),
        diagnostics=pvector(sorted(found, key=diagnostic_order)),
        held=pvector(sorted(held)),
    )


def _key(manifest: Mapping[str, Any]) -> ObjectKey:
    meta = manifest["metadata"]
    return ObjectKey(manifest["kind"], meta.get("namespace", ""), meta["name"])


def _infra_labels(gateway: Gateway) -> dict[str, str]:
    """The Gateway's infrastructure labels, then ``gateway-name`` (GEP-1762: generated
    resources carry the Gateway's name; a name past a label value's 63 characters cannot)."""
    labels = {
        k: v for k, v in gateway.infrastructure_labels.items() if not k.startswith(_RESERVED_PREFIX)
    }
    if len(name := gateway.meta.key.name) <= _LABEL_VALUE_MAX:
        labels[GATEWAY_NAME_LABEL] = name
    return labels


def _metadata(
    gateway: Gateway, name: str, namespace: str, role: str, *, owned: bool
) -> dict[str, Any]:
    labels = {**_infra_labels(gateway), MANAGED_BY[0]: MANAGED_BY[1], ROLE: role}
    annotations = {**gateway.infrastructure_annotations, GATEWAY_ANNOTATION: gateway.meta.key.ref}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "annotations": annotations,
    }
    if owned:
        reference: dict[str, Any] = {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "name": gateway.meta.key.name,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        if gateway.meta.uid:
            reference["uid"] = gateway.meta.uid
        meta["ownerReferences"] = [reference]
    return meta


def _port_name(verdict: ListenerVerdict) -> str:
    return f"{verdict.listener.protocol.lower()}-{verdict.listener.port}"


def _transport(protocol: str) -> str:
    """The Service port protocol a listener protocol travels on: UDP for UDP listeners, TCP
    for every other (Kubernetes ``ServicePort.protocol``)."""
    return "UDP" if protocol == "UDP" else "TCP"


def _vip_service(gateway: Gateway, model: GatewayModel, config: CompileConfig) -> dict[str, Any]:
    key = gateway.meta.key
    ports: dict[int, dict[str, Any]] = {}
    for verdict in model.listeners[key]:
        target = model.ports.get((key.ref, verdict.listener.port))
        if target is not None:
            ports.setdefault(
                verdict.listener.port,
                {
                    "name": _port_name(verdict),
                    "port": verdict.listener.port,
                    "targetPort": target,
                    "protocol": _transport(verdict.listener.protocol),
                },
            )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(
            gateway,
            vip_service_name(key.namespace, key.name),
            config.namespace,
            ROLE_VIP,
            owned=False,
        ),
        "spec": {
            "type": config.shared_vip_service_type,
            "selector": dict(config.shared_proxy_selector),
            "ports": [ports[p] for p in sorted(ports)],
            **_external_ips(gateway, model, dedicated=False),
        },
    }


def _external_ips(gateway: Gateway, model: GatewayModel, *, dedicated: bool) -> dict[str, Any]:
    """``externalIPs``: the Gateway's usable static addresses, on the one Service that reaches
    it now (its dedicated proxy's once ready, else its VIP Service), so that no two Services
    claim an address (:mod:`coxswain.compile.gateway.addresses`)."""
    key = gateway.meta.key
    judged = model.addresses.get(key)
    placed = model.placements.get(key)
    if judged is None or not judged.static or placed is None:
        return {}
    if dedicated != (placed.dedicated and placed.ready):
        return {}
    return {"externalIPs": list(judged.static)}


def _identity(gateway: Gateway) -> dict[str, Any]:
    key = gateway.meta.key
    name = vip_service_name(key.namespace, key.name).removesuffix(VIP_SUFFIX) + "-shared-sa"
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(gateway, name, key.namespace, ROLE_IDENTITY, owned=True),
        "automountServiceAccountToken": False,
    }


def _merged(placed: Placement, config: CompileConfig) -> dict[str, Any]:
    """Per field: the Gateway's parameters over the class's over the defaults."""
    merged: dict[str, Any] = {
        "replicas": 1,
        "image": config.proxy_image,
        "serviceType": "LoadBalancer",
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        },
        "autoscaling": None,
        "trustedProxies": config.proxy_trusted_proxies,
        "podTemplates": [],
    }
    for layer in placed.layers:  # class first, then the Gateway
        for name, value in (
            ("replicas", layer.replicas),
            ("image", layer.image),
            ("serviceType", layer.service_type),
            ("trustedProxies", layer.trusted_proxies),
            ("resources", None if layer.resources is None else json.loads(layer.resources)),
            ("autoscaling", None if layer.autoscaling is None else json.loads(layer.autoscaling)),
        ):
            if value is not None:
                merged[name] = value
        if layer.pod_template is not None:
            merged["podTemplates"].append(json.loads(layer.pod_template))
    return merged


def _dedicated(
    gateway: Gateway,
    placed: Placement,
    listeners: list[ListenerVerdict],
    config: CompileConfig,
    external_ips: dict[str, Any],
) -> list[dict[str, Any]]:
    key = gateway.meta.key
    params = _merged(placed, config)
    name = placed.name
    selector = {"app.kubernetes.io/name": "coxswain-proxy", "app.kubernetes.io/instance": name}
    transports = {v.listener.port: _transport(v.listener.protocol) for v in listeners}
    ports = sorted(transports)
    container = {
        "name": "proxy",
        "image": params["image"],
        "args": [
            "proxy",
            "--gateway",
            key.ref,
            "--discovery",
            config.discovery_address,
            "--tls-cert",
            f"{TLS_MOUNT}/tls.crt",
            "--tls-key",
            f"{TLS_MOUNT}/tls.key",
            "--tls-ca",
            f"{TLS_MOUNT}/ca.crt",
            "--admin-port",
            str(ADMIN_PORT),
            *(
                ("--trusted-proxies", ",".join(params["trustedProxies"]))
                if params["trustedProxies"]
                else ()
            ),
        ],
        "ports": [
            *(
                {"name": f"listener-{p}", "containerPort": p, "protocol": transports[p]}
                for p in ports
            ),
            {"name": "admin", "containerPort": ADMIN_PORT, "protocol": "TCP"},
        ],
        "resources": params["resources"],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": ADMIN_PORT}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": ADMIN_PORT}},
        "volumeMounts": [
            {"name": "discovery-tls", "mountPath": TLS_MOUNT, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},  # scratch space (TLS helpers), as in the chart
        ],
    }
    pod_annotations = _pod_safe(gateway.infrastructure_annotations)
    template: dict[str, Any] = {
        "metadata": {
            "labels": {**_pod_safe(_infra_labels(gateway)), **selector},
            **({"annotations": pod_annotations} if pod_annotations else {}),
        },
        "spec": {
            "containers": [container],
            "volumes": [
                {"name": "discovery-tls", "secret": {"secretName": f"{name}-discovery-tls"}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
            ],
        },
    }
    for patch in params["podTemplates"]:
        template = strategic_merge(template, patch)
    template["metadata"] = {
        **template.get("metadata", {}),
        "labels": {**template.get("metadata", {}).get("labels", {}), **selector},
    }
    template["spec"] = secure_pod(
        template.get("spec", {}), service_account=name, lowest_port=min(ports, default=ADMIN_PORT)
    )
    deployment_spec: dict[str, Any] = {
        "selector": {"matchLabels": selector},
        "template": template,
    }
    autoscaling = params["autoscaling"]
    if autoscaling is None:
        deployment_spec["replicas"] = params["replicas"]
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _metadata(gateway, name, key.namespace, ROLE_DEDICATED, owned=True),
            "spec": deployment_spec,
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _metadata(gateway, name, key.namespace, ROLE_DEDICATED, owned=True),
            "spec": {
                "type": params["serviceType"],
                "selector": selector,
                "ports": [
                    {
                        "name": f"listener-{p}",
                        "port": p,
                        "targetPort": p,
                        "protocol": transports[p],
                    }
                    for p in ports
                ],
                **external_ips,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _metadata(gateway, name, key.namespace, ROLE_DEDICATED, owned=True),
            "automountServiceAccountToken": False,
        },
    ]
    if isinstance(autoscaling, dict):
        objects.append(_autoscaler(gateway, name, autoscaling, params["replicas"]))
    return objects


def _pod_safe(keyed: Mapping[str, str]) -> dict[str, str]:
    """``keyed`` without the keys of the domains Kubernetes reads pod security from (AppArmor and
    seccomp annotations) or Coxswain owns: the Gateway's infrastructure labels and annotations
    reach the proxy's pods as a template's would, under the same rule."""
    return {k: v for k, v in keyed.items() if not reserved_key(k)}


def _autoscaler(
    gateway: Gateway, name: str, autoscaling: Mapping[str, Any], replicas: int
) -> dict[str, Any]:
    metrics = []
    for resource, field in (
        ("cpu", "targetCPUUtilizationPercentage"),
        ("memory", "targetMemoryUtilizationPercentage"),
    ):
        target = autoscaling.get(field)
        if isinstance(target, int) and not isinstance(target, bool):
            metrics.append(
                {
                    "type": "Resource",
                    "resource": {
                        "name": resource,
                        "target": {"type": "Utilization", "averageUtilization": target},
                    },
                }
            )
    low = autoscaling.get("minReplicas", replicas)
    high = autoscaling.get("maxReplicas", max(low if isinstance(low, int) else 1, 1))
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(
            gateway, name, gateway.meta.key.namespace, ROLE_DEDICATED, owned=True
        ),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": low,
            "maxReplicas": high,
            "metrics": metrics
            or [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 80},
                    },
                }
            ],
        },
    }


def _deletions(
    state: ClusterState,
    model: GatewayModel,
    config: CompileConfig,
    desired: set[ObjectKey],
    shared_served: Collection[str] | None,
    held: Collection[tuple[str, str]],
) -> set[ObjectKey]:
    """Owned objects no longer desired, minus those a mode switch still needs and those of
    refused Gateways (``held``)."""
    dedicated_now = {k.ref for k, p in model.placements.items() if p.dedicated}
    existing = [
        *(s.meta for s in state.services.values()),
        *(a.meta for a in state.service_accounts.values()),
        *(d.meta for d in state.deployments.values()),
    ]
    gone: set[ObjectKey] = set()
    for meta in existing:
        if meta.labels.get(MANAGED_BY[0]) != MANAGED_BY[1] or meta.key in desired:
            continue
        role = meta.labels.get(ROLE)
        if role == ROLE_VIP and meta.key.namespace != config.namespace:
            continue
        if role == ROLE_DEDICATED:
            if (meta.key.namespace, meta.key.name) in held:
                continue  # its Gateway is refused: what runs is left as it is
            owner = meta.annotations.get(GATEWAY_ANNOTATION, "")
            back_in_pool = owner not in dedicated_now
            if back_in_pool and shared_served is not None and owner not in shared_served:
                continue  # the shared pool does not serve it yet: keep the dedicated proxy
        if role in (ROLE_VIP, ROLE_IDENTITY, ROLE_DEDICATED):
            gone.add(meta.key)
    return gone
