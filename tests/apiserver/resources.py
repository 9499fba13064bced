"""The resource types the emulator serves, and the discovery documents that describe them.

Built-in types are the ones Coxswain reads or writes; custom types come from
`CustomResourceDefinition` objects, so tests can start with CRDs present, absent, or install them
while a controller runs. Discovery is served in the legacy (non-aggregated) JSON form, which the
`kubernetes` Python client (including `DynamicClient`) uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

Obj = dict[str, Any]

CRD_GROUP = "apiextensions.k8s.io"
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]


@dataclass(frozen=True)
class ResourceType:
    """One REST resource (``services``, ``httproutes.gateway.networking.k8s.io``...).

    `versions` are the served versions, preferred first; objects are stored once and served in
    any of them with only `apiVersion` rewritten (no conversion: Gateway API versions share a
    schema). `custom` marks CRD-backed types, which the real server treats differently (always a
    `generation`, no strategic merge patch, `kind`/`apiVersion` kept on list items).
    """

    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool
    status: bool = False
    short_names: tuple[str, ...] = ()
    custom: bool = False

    @property
    def key(self) -> tuple[str, str]:
        """The identity of the stored collection, independent of the served version."""
        return (self.group, self.plural)

    def api_version(self, version: str | None = None) -> str:
        """``v1`` for core, ``group/version`` otherwise; `version` defaults to the preferred one."""
        chosen = version or self.versions[0]
        return f"{self.group}/{chosen}" if self.group else chosen

    def discovery_entries(self) -> list[Obj]:
        """APIResourceList entries: the resource itself and its ``/status`` subresource."""
        main: Obj = {
            "name": self.plural,
            "singularName": self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": VERBS,
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        entries = [main]
        if self.status:
            entries.append(
                {
                    "name": f"{self.plural}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": STATUS_VERBS,
                }
            )
        return entries


def _builtin(
    api_version: str, plural: str, kind: str, namespaced: bool, status: bool, *short: str
) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(group, (version,), plural, kind, namespaced, status, short)


BUILTINS: tuple[ResourceType, ...] = (
    _builtin("v1", "namespaces", "Namespace", False, True, "ns"),
    _builtin("v1", "services", "Service", True, True, "svc"),
    _builtin("v1", "secrets", "Secret", True, False),
    _builtin("v1", "configmaps", "ConfigMap", True, False, "cm"),
    _builtin("v1", "serviceaccounts", "ServiceAccount", True, False, "sa"),
    _builtin("v1", "pods", "Pod", True, True, "po"),
    _builtin("discovery.k8s.io/v1", "endpointslices", "EndpointSlice", True, False),
    _builtin("networking.k8s.io/v1", "ingresses", "Ingress", True, True, "ing"),
    _builtin("networking.k8s.io/v1", "ingressclasses", "IngressClass", False, False),
    _builtin("apps/v1", "deployments", "Deployment", True, True, "deploy"),
    _builtin("coordination.k8s.io/v1", "leases", "Lease", True, False),
    _builtin("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, True),
    _builtin("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True, True, "pdb"),
    _builtin(
        f"{CRD_GROUP}/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        True,
        "crd",
        "crds",
    ),
)
CRD_KEY = (CRD_GROUP, "customresourcedefinitions")

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STABILITY = {None: 2, "beta": 1, "alpha": 0}


def _version_priority(version: str) -> tuple[int, int, int, int, str]:
    """Kubernetes version order: GA before beta before alpha, higher numbers first."""
    match = _VERSION.match(version)
    if match is None:
        return (1, 0, 0, 0, version)
    major, stability, minor = match.groups()
    return (0, -_STABILITY[stability], -int(major), -int(minor or 0), "")


def crd_resource_type(crd: Obj) -> ResourceType:
    """The resource a CRD defines: its served versions, scope and ``status`` subresource."""
    spec = crd["spec"]
    served = [v for v in spec["versions"] if v.get("served", True)]
    if not served:
        raise ValueError(f"CRD {crd['metadata']['name']} serves no version")
    served.sort(key=lambda v: _version_priority(v["name"]))
    names = spec["names"]
    return ResourceType(
        group=spec["group"],
        versions=tuple(v["name"] for v in served),
        plural=names["plural"],
        kind=names["kind"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        status=any("status" in (v.get("subresources") or {}) for v in served),
        short_names=tuple(names.get("shortNames", ())),
        custom=True,
    )


def api_versions(server_address: str) -> Obj:
    """``GET /api``: the core group's versions."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_doc(group: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def _group_versions(types: Iterable[ResourceType]) -> dict[str, list[str]]:
    """Named groups and their served versions, in priority order."""
    groups: dict[str, list[str]] = {}
    for rt in types:
        if rt.group:
            versions = groups.setdefault(rt.group, [])
            versions.extend(v for v in rt.versions if v not in versions)
    return {g: sorted(vs, key=_version_priority) for g, vs in sorted(groups.items())}


def api_group_list(types: Iterable[ResourceType]) -> Obj:
    """``GET /apis``: every named group, legacy `APIGroupList` form."""
    groups = [_group_doc(g, vs) for g, vs in _group_versions(types).items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(types: Iterable[ResourceType], group: str) -> Obj | None:
    """``GET /apis/<group>``: one `APIGroup`, or None when no type serves it."""
    versions = _group_versions(types).get(group)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def api_resource_list(types: Iterable[ResourceType], group: str, version: str) -> Obj | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>``: or None when nothing serves it."""
    served = [rt for rt in types if rt.group == group and version in rt.versions]
    if not served:
        return None
    resources = [entry for rt in served for entry in rt.discovery_entries()]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
