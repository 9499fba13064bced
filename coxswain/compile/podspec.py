"""Pod templates of dedicated proxies: strategic merge of user templates, then pod security.

Rules:
1. ``strategic_merge(base, patch)`` merges maps recursively; lists of containers,
   initContainers, volumes, env, volumeMounts (by ``name``), tolerations (by ``key`` and
   ``operator``) and ports (by ``containerPort``) merge item by item; every other list, and every
   scalar, is replaced by the patch. This is the subset of Kubernetes strategic merge patch
   that pod templates need.
2. ``secure_pod(spec)`` sets the proxy's identity and pod security after the merge, over
   whatever the templates hold (``compile.pod_template_policy`` refuses templates that try):
   its own ServiceAccount without a token, a fixed non-root user and group (``PROXY_UID``, the
   image's user), seccomp ``RuntimeDefault``, no host namespaces, and on every container,
   sidecars and init containers included, no privilege escalation, a read-only root file
   system and every capability dropped (the proxy container keeps ``NET_BIND_SERVICE`` for
   ports below 1024). These are the Helm chart's settings for the shared pool
   (``coxswain.podSecurityContext`` and ``coxswain.containerSecurityContext``).
"""

from __future__ import annotations

import copy
from typing import Any, Final

from coxswain.compile.pod_template_policy import PROXY_CONTAINER

__all__ = ["PROXY_UID", "secure_pod", "strategic_merge"]

_MERGE_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "volumeMounts": ("name",),
    "tolerations": ("key", "operator"),
    "ports": ("containerPort",),
}
PROXY_UID: Final = 65532  # the image's ``USER`` (Dockerfile) and the chart's runAsUser
_PRIVILEGED_PORTS: Final = 1024
_HOST_NAMESPACES: Final = ("hostNetwork", "hostPID", "hostIPC", "hostUsers")


def strategic_merge(base: Any, patch: Any, field: str = "") -> Any:
    """``patch`` merged onto ``base`` (neither is modified). Pure."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = (
                strategic_merge(base[key], value, key) if key in base else copy.deepcopy(value)
            )
        return merged
    keys = _MERGE_KEYS.get(field)
    if keys is not None and isinstance(base, list) and isinstance(patch, list):
        merged_list = [copy.deepcopy(item) for item in base]
        for item in patch:
            if not isinstance(item, dict):
                merged_list.append(copy.deepcopy(item))
                continue
            identity = tuple(item.get(k) for k in keys)
            index = next(
                (
                    i
                    for i, old in enumerate(merged_list)
                    if isinstance(old, dict) and tuple(old.get(k) for k in keys) == identity
                ),
                None,
            )
            if index is None:
                merged_list.append(copy.deepcopy(item))
            else:
                merged_list[index] = strategic_merge(merged_list[index], item)
        return merged_list
    return copy.deepcopy(patch)


def secure_pod(spec: dict[str, Any], *, service_account: str, lowest_port: int) -> dict[str, Any]:
    """``spec`` with the controller's identity and pod security set over whatever it held. Pure.

    ``lowest_port`` is the lowest port the proxy binds: below 1024, the pod lowers
    ``net.ipv4.ip_unprivileged_port_start`` to it and the proxy container keeps
    ``NET_BIND_SERVICE``, as the Helm chart does for the shared pool.
    """
    spec = copy.deepcopy(spec)
    for flag in _HOST_NAMESPACES:
        spec.pop(flag, None)
    spec["serviceAccountName"] = service_account
    spec["automountServiceAccountToken"] = False
    pod_context: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": PROXY_UID,
        "runAsGroup": PROXY_UID,
        "fsGroup": PROXY_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    low = lowest_port < _PRIVILEGED_PORTS
    if low:
        pod_context["sysctls"] = [
            {"name": "net.ipv4.ip_unprivileged_port_start", "value": str(lowest_port)}
        ]
    spec["securityContext"] = pod_context
    for group in ("initContainers", "containers"):
        containers = spec.get(group)
        if not isinstance(containers, list):
            continue
        for container in containers:
            if isinstance(container, dict):
                proxy = group == "containers" and container.get("name") == PROXY_CONTAINER
                container["securityContext"] = _container_context(bind_low_ports=proxy and low)
    return spec


def _container_context(*, bind_low_ports: bool) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"drop": ["ALL"]}
    if bind_low_ports:
        capabilities["add"] = ["NET_BIND_SERVICE"]
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": capabilities,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
    }
