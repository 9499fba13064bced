"""What a dedicated proxy's ``podTemplate`` may set: an allow-list, checked before anything
is provisioned.

Why: the controller creates the dedicated proxy's pods with its own cluster-wide rights, so a
template must not give whoever writes a ``CoxswainGatewayParameters`` a pod they could not
create themselves (docs/dedicated-proxies.md, "What a pod template may set"). Every field not
listed here is refused, the Gateway API's answer to malformed parameters: ``Accepted=False``
with reason ``InvalidParameters`` on the object holding the ``parametersRef`` (GatewayClass and
Gateway ``parametersRef``, GEP-1867), and nothing is provisioned for it.

Rules:
1. A template may set pod ``metadata.labels`` and ``metadata.annotations`` (string values, keys
   outside the ``kubernetes.io``, ``k8s.io`` and ``coxswain-labs.dev`` domains: those belong to
   Kubernetes, which reads security settings from them, or to Coxswain); scheduling
   (``nodeSelector``, ``affinity``, ``tolerations``, ``topologySpreadConstraints``,
   ``priorityClassName``), ``terminationGracePeriodSeconds``, ``imagePullSecrets``, volumes of
   the kinds ``emptyDir``, ``configMap``, ``secret``, ``downwardAPI`` and ``projected`` (of
   ``configMap``, ``secret`` and ``downwardAPI`` sources), and containers and init containers.
2. A container may set its image and command, environment (values, or references to ConfigMaps,
   Secrets and its own pod's fields), resources (requests and limits), ports (no ``hostPort``),
   volume mounts (no mount propagation), probes and lifecycle hooks (no ``host``: the kubelet
   would make those requests from the node), and ``restartPolicy`` (native sidecars). The
   ``proxy`` container is the controller's wiring: a template may only add environment,
   resources, volume mounts and the pull policy to it (its image is ``spec.image``).
3. ``securityContext``, the ServiceAccount, token automount, host namespaces, ``nodeName``,
   ``runtimeClassName`` and everything else are the controller's (``podspec.secure_pod``) or
   not for a template: refused wherever they appear.

Secrets: the pods run in the Gateway's namespace, so a reference reaches only that namespace's
Secrets, which any pod there may mount; writing a template is therefore as strong as creating a
(restricted, credential-less) pod in that namespace, and is documented as such.

Pure and linear in the size of the template.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["PROXY_CONTAINER", "RESERVED_DOMAINS", "forbidden_fields", "reserved_key"]

PROXY_CONTAINER: Final = "proxy"
RESERVED_DOMAINS: Final = ("kubernetes.io", "k8s.io", "coxswain-labs.dev")


@dataclass(frozen=True, slots=True)
class _Open:
    """Any value: a subtree with nothing in it that escalates (scheduling, quantities, refs)."""


@dataclass(frozen=True, slots=True)
class _Scalar:
    """A string, number, boolean or null."""


@dataclass(frozen=True, slots=True)
class _Strings:
    """A mapping of strings to strings; with ``owned_keys`` refused, keys outside
    ``RESERVED_DOMAINS`` only (a pod's labels and annotations, not a node selector)."""

    owned_keys: bool = False


@dataclass(frozen=True, slots=True)
class _Fields:
    """A mapping with only these keys."""

    allowed: Mapping[str, _Schema]


@dataclass(frozen=True, slots=True)
class _List:
    """A list of items of one schema."""

    item: _Schema


@dataclass(frozen=True, slots=True)
class _Containers:
    """A list of containers, the one named ``proxy`` held to ``proxy``."""

    other: _Fields
    proxy: _Fields


_Schema = _Open | _Scalar | _Strings | _Fields | _List | _Containers

_OPEN: Final = _Open()
_SCALAR: Final = _Scalar()
_SCALARS: Final = _List(_SCALAR)

_HTTP_GET: Final = _Fields(
    {"path": _SCALAR, "port": _SCALAR, "scheme": _SCALAR, "httpHeaders": _List(_OPEN)}
)
_EXEC: Final = _Fields({"command": _SCALARS})
_PROBE: Final = _Fields(
    {
        "exec": _EXEC,
        "httpGet": _HTTP_GET,
        "tcpSocket": _Fields({"port": _SCALAR}),
        "grpc": _Fields({"port": _SCALAR, "service": _SCALAR}),
        **dict.fromkeys(
            (
                "initialDelaySeconds",
                "periodSeconds",
                "timeoutSeconds",
                "successThreshold",
                "failureThreshold",
                "terminationGracePeriodSeconds",
            ),
            _SCALAR,
        ),
    }
)
_HANDLER: Final = _Fields(
    {"exec": _EXEC, "httpGet": _HTTP_GET, "sleep": _Fields({"seconds": _SCALAR})}
)
_ENV: Final = _List(
    _Fields(
        {
            "name": _SCALAR,
            "value": _SCALAR,
            "valueFrom": _Fields(
                {
                    "configMapKeyRef": _OPEN,
                    "secretKeyRef": _OPEN,
                    "fieldRef": _OPEN,
                    "resourceFieldRef": _OPEN,
                }
            ),
        }
    )
)
_ENV_FROM: Final = _List(_Fields({"prefix": _SCALAR, "configMapRef": _OPEN, "secretRef": _OPEN}))
_RESOURCES: Final = _Fields({"requests": _OPEN, "limits": _OPEN})
_MOUNTS: Final = _List(
    _Fields({"name": _SCALAR, "mountPath": _SCALAR, "readOnly": _SCALAR, "subPath": _SCALAR})
)
_PROXY: Final = _Fields(
    {
        "name": _SCALAR,
        "env": _ENV,
        "envFrom": _ENV_FROM,
        "resources": _RESOURCES,
        "volumeMounts": _MOUNTS,
        "imagePullPolicy": _SCALAR,
    }
)
_CONTAINER: Final = _Fields(
    {
        **_PROXY.allowed,
        "image": _SCALAR,
        "command": _SCALARS,
        "args": _SCALARS,
        "workingDir": _SCALAR,
        "ports": _List(_Fields({"name": _SCALAR, "containerPort": _SCALAR, "protocol": _SCALAR})),
        "readinessProbe": _PROBE,
        "livenessProbe": _PROBE,
        "startupProbe": _PROBE,
        "lifecycle": _Fields({"postStart": _HANDLER, "preStop": _HANDLER}),
        "restartPolicy": _SCALAR,
    }
)
_KEY_TO_PATH: Final = _Fields({"items": _OPEN, "defaultMode": _SCALAR})
_VOLUME_SOURCES: Final = {
    "configMap": _Fields({**_KEY_TO_PATH.allowed, "name": _SCALAR, "optional": _SCALAR}),
    "secret": _Fields({**_KEY_TO_PATH.allowed, "secretName": _SCALAR, "optional": _SCALAR}),
    "downwardAPI": _KEY_TO_PATH,
}
_VOLUME: Final = _Fields(
    {
        "name": _SCALAR,
        "emptyDir": _Fields({"medium": _SCALAR, "sizeLimit": _SCALAR}),
        **_VOLUME_SOURCES,
        "projected": _Fields(
            {
                "defaultMode": _SCALAR,
                "sources": _List(
                    _Fields(
                        {
                            "configMap": _Fields(
                                {"name": _SCALAR, "items": _OPEN, "optional": _SCALAR}
                            ),
                            "secret": _Fields(
                                {"name": _SCALAR, "items": _OPEN, "optional": _SCALAR}
                            ),
                            "downwardAPI": _Fields({"items": _OPEN}),
                        }
                    )
                ),
            }
        ),
    }
)
_TEMPLATE: Final = _Fields(
    {
        "metadata": _Fields(
            {"labels": _Strings(owned_keys=True), "annotations": _Strings(owned_keys=True)}
        ),
        "spec": _Fields(
            {
                "nodeSelector": _Strings(),
                "affinity": _OPEN,
                "tolerations": _List(_OPEN),
                "topologySpreadConstraints": _List(_OPEN),
                "priorityClassName": _SCALAR,
                "terminationGracePeriodSeconds": _SCALAR,
                "imagePullSecrets": _List(_Fields({"name": _SCALAR})),
                "volumes": _List(_VOLUME),
                "containers": _Containers(other=_CONTAINER, proxy=_PROXY),
                "initContainers": _List(_CONTAINER),
            }
        ),
    }
)


def reserved_key(key: str) -> bool:
    """Whether a label or annotation key is in a domain of ``RESERVED_DOMAINS`` (the domain is
    the part before ``/``; subdomains count)."""
    domain, slash, _ = key.rpartition("/")
    return bool(slash) and any(
        domain == reserved or domain.endswith(f".{reserved}") for reserved in RESERVED_DOMAINS
    )


def forbidden_fields(template: object, path: str = "spec.podTemplate") -> list[tuple[str, str]]:
    """Each field of ``template`` a pod template may not set: (field path, why). Pure."""
    return list(_check(template, _TEMPLATE, path))


def _check(value: object, schema: _Schema, path: str) -> Iterator[tuple[str, str]]:
    match schema:
        case _Open():
            return
        case _Scalar():
            if isinstance(value, dict | list):
                yield path, "must be a single value"
        case _Strings(owned_keys):
            if not isinstance(value, dict):
                yield path, "must be a mapping of strings"
                return
            for key, item in value.items():
                if owned_keys and reserved_key(key):
                    yield f"{path}[{key}]", "is in a domain Kubernetes or Coxswain reserves"
                elif not isinstance(item, str):
                    yield f"{path}[{key}]", "must be a string"
        case _Fields(allowed):
            if not isinstance(value, dict):
                yield path, "must be a mapping"
                return
            for key, item in value.items():
                inner = allowed.get(key)
                if inner is None:
                    yield f"{path}.{key}", "may not be set by a pod template"
                else:
                    yield from _check(item, inner, f"{path}.{key}")
        case _List(item_schema):
            if not isinstance(value, list):
                yield path, "must be a list"
                return
            for index, item in enumerate(value):
                yield from _check(item, item_schema, f"{path}[{index}]")
        case _Containers(other, proxy):
            if not isinstance(value, list):
                yield path, "must be a list"
                return
            for index, item in enumerate(value):
                is_proxy = isinstance(item, dict) and item.get("name") == PROXY_CONTAINER
                yield from _check(item, proxy if is_proxy else other, f"{path}[{index}]")
