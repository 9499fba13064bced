"""Pod templates of dedicated proxies: strategic merge of user templates, then pod security.

Rules:
1. ``strategic_merge(base, patch)`` merges maps recursively; lists of containers,
   initContainers, volumes, env, volumeMounts (by ``name``), tolerations (by ``key`` and
   ``operator``) and ports (by ``containerPort``) merge item by item; every other list, and every
   scalar, is replaced by the patch. This is the subset of Kubernetes strategic merge patch
   that pod templates need.
2. ``secure_pod(spec)`` re-asserts the proxy's pod security after the merge, whatever the
   templates asked for: ``runAsNonRoot``, no privilege escalation, a read-only root file system,
   every capability dropped (``NET_BIND_SERVICE`` is the one that may stay, for ports below
   1024), no ``privileged``, no ``hostNetwork``/``hostPID``/``hostIPC`` and no ``hostPort``. What
   it removes is returned so that it can be reported.
"""

from __future__ import annotations

import copy
from typing import Any, Final

__all__ = ["secure_pod", "strategic_merge"]

_MERGE_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "volumeMounts": ("name",),
    "tolerations": ("key", "operator"),
    "ports": ("containerPort",),
}
_ALLOWED_CAPABILITIES: Final = frozenset({"NET_BIND_SERVICE"})


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


def secure_pod(spec: dict[str, Any], *, bind_low_ports: bool) -> tuple[dict[str, Any], list[str]]:
    """Pod security re-asserted on a pod spec. Pure.

    Returns:
        The secured spec, and a sentence for each thing removed or overridden.
    """
    spec = copy.deepcopy(spec)
    dropped: list[str] = []
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.pop(flag, False):
            dropped.append(f"spec.{flag}")
    pod_context = spec.get("securityContext")
    if not isinstance(pod_context, dict):
        pod_context = {}
    if pod_context.get("runAsNonRoot") is False:
        dropped.append("spec.securityContext.runAsNonRoot: false")
    if pod_context.get("runAsUser") == 0:
        dropped.append("spec.securityContext.runAsUser: 0")
        pod_context.pop("runAsUser")
    pod_context["runAsNonRoot"] = True
    pod_context.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    spec["securityContext"] = pod_context
    for group in ("initContainers", "containers"):
        containers = spec.get(group)
        if not isinstance(containers, list):
            continue
        for index, container in enumerate(containers):
            if isinstance(container, dict):
                where = f"spec.{group}[{container.get('name', index)}]"
                dropped.extend(_secure_container(container, where, bind_low_ports=bind_low_ports))
    return spec, dropped


def _secure_container(container: dict[str, Any], where: str, *, bind_low_ports: bool) -> list[str]:
    dropped: list[str] = []
    context = container.get("securityContext")
    if not isinstance(context, dict):
        context = {}
    if context.pop("privileged", False):
        dropped.append(f"{where}.securityContext.privileged")
    if context.get("allowPrivilegeEscalation") is True:
        dropped.append(f"{where}.securityContext.allowPrivilegeEscalation")
    if context.get("readOnlyRootFilesystem") is False:
        dropped.append(f"{where}.securityContext.readOnlyRootFilesystem: false")
    if context.get("runAsUser") == 0:
        dropped.append(f"{where}.securityContext.runAsUser: 0")
        context.pop("runAsUser")
    context["allowPrivilegeEscalation"] = False
    context["readOnlyRootFilesystem"] = True
    context["runAsNonRoot"] = True
    capabilities = context.get("capabilities")
    added = capabilities.get("add", []) if isinstance(capabilities, dict) else []
    kept = [c for c in added if c in _ALLOWED_CAPABILITIES] if isinstance(added, list) else []
    dropped.extend(f"{where}.securityContext.capabilities.add {c}" for c in added if c not in kept)
    if bind_low_ports and "NET_BIND_SERVICE" not in kept:
        kept.append("NET_BIND_SERVICE")
    context["capabilities"] = {"drop": ["ALL"], **({"add": kept} if kept else {})}
    container["securityContext"] = context
    ports = container.get("ports")
    if isinstance(ports, list):
        for port in ports:
            if isinstance(port, dict) and port.pop("hostPort", None) is not None:
                dropped.append(f"{where}.ports[{port.get('containerPort')}].hostPort")
    return dropped
