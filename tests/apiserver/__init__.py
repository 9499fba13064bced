"""A Kubernetes API server emulator for controller tests (no kube-apiserver needed).

`ApiServer` speaks the real REST protocol over HTTP on 127.0.0.1 to the official `kubernetes`
client (typed APIs, `watch.Watch`, `DynamicClient`)::

    with ApiServer() as api, api.client() as client:
        api.install_crds(GATEWAY_API_CRDS, COXSWAIN_CRDS)
        kubernetes.client.CoreV1Api(client).create_namespaced_service("default", {...})
        api.fail(500, method="PATCH", path_prefix="/api/v1/namespaces/default/services")
        with api.outage():
            ...  # connections refused, then back on the same port
        assert [r for r in api.requests if r.path.endswith("/status")] == []

What is emulated and what is simplified is documented in `store` (object semantics),
`managed` (server-side apply), `patch` (patch formats) and `server` (HTTP).
"""

from .crds import COXSWAIN_CRDS, GATEWAY_API_CRDS
from .errors import ApiError
from .managed import Owner
from .resources import BUILTINS, ResourceType
from .server import ApiServer, Fault, RequestRecord
from .store import Store

__all__ = [
    "BUILTINS",
    "COXSWAIN_CRDS",
    "GATEWAY_API_CRDS",
    "ApiError",
    "ApiServer",
    "Fault",
    "Owner",
    "RequestRecord",
    "ResourceType",
    "Store",
]
