"""Which Gateway API release the cluster has installed: its channel and bundle version.

The upstream CRDs carry both as annotations (``gateway.networking.k8s.io/channel``:
``standard`` or ``experimental``; ``gateway.networking.k8s.io/bundle-version``, e.g.
``v1.6.1``). The controller reads them from the HTTPRoute CRD at start and at every CRD probe,
so installing the experimental CRDs, or moving to another release, is seen without a restart:
the GatewayClass status then declares what that channel's fields allow
(``compile.gateway.status.supported_features``). The one grant this needs is ``get`` on that
CRD by name (docs/security.md, "RBAC").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from coxswain.shell.control.kube import ApiFailure, Unreachable

if TYPE_CHECKING:
    from coxswain.shell.control.kube import Kube

__all__ = ["HTTPROUTE_CRD", "GatewayApiRelease", "read_release", "release_of"]

HTTPROUTE_CRD: Final = "httproutes.gateway.networking.k8s.io"
_PATH: Final = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{HTTPROUTE_CRD}"
_CHANNEL: Final = "gateway.networking.k8s.io/channel"
_VERSION: Final = "gateway.networking.k8s.io/bundle-version"
_VERSION_MAX: Final = 64  # characters of a version kept for the log and the metric


@dataclass(frozen=True, slots=True)
class GatewayApiRelease:
    """``channel`` is ``experimental`` or ``standard`` (anything else is read as standard);
    ``version`` the bundle version, or ``unknown``."""

    channel: str = "standard"
    version: str = "unknown"


def release_of(crd: dict[str, Any]) -> GatewayApiRelease:
    """The release a CRD object's annotations name; what is missing or malformed is
    ``standard`` and ``unknown``. Pure."""
    metadata = crd.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return GatewayApiRelease()
    channel = "experimental" if annotations.get(_CHANNEL) == "experimental" else "standard"
    version = annotations.get(_VERSION)
    if not isinstance(version, str) or not version.isprintable() or not version:
        version = "unknown"
    return GatewayApiRelease(channel, version[:_VERSION_MAX])


async def read_release(kube: Kube) -> GatewayApiRelease | None:
    """The installed release, or None when the CRD cannot be read now (absent, forbidden, the
    API unreachable): the caller keeps what it knew."""
    try:
        return release_of(await kube.request("GET", _PATH))
    except (ApiFailure, Unreachable):
        return None
