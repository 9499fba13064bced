"""The Kubernetes resources the controller reads and writes, each defined once.

Where each lives in the REST API (:class:`~.kube.Resource`): the informers watch them
(:mod:`.informers`), the provisioner applies and deletes them (:mod:`.provisioner`), the status
writer patches their ``status`` (:mod:`.status_writer`), the leader election renews its Lease
(:mod:`.leader`). Versions are the ones the chart's RBAC and the API emulator's tests hold the
controller to.
"""

from __future__ import annotations

from typing import Final

from coxswain.shell.control.kube import Resource

__all__ = [
    "BACKEND_TLS_POLICY",
    "CONFIG_MAP",
    "DEPLOYMENT",
    "ENDPOINT_SLICE",
    "GATEWAY",
    "GATEWAY_CLASS",
    "GATEWAY_PARAMETERS",
    "GRPC_ROUTE",
    "HORIZONTAL_POD_AUTOSCALER",
    "HTTP_ROUTE",
    "INGRESS",
    "INGRESS_CLASS",
    "LEASE",
    "LISTENER_SET",
    "NAMESPACE",
    "POD_DISRUPTION_BUDGET",
    "REFERENCE_GRANT",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "TCP_ROUTE",
    "TLS_ROUTE",
    "UDP_ROUTE",
]

_GATEWAY_API: Final = "gateway.networking.k8s.io"

SERVICE: Final = Resource("", "v1", "services", "Service", True)
SECRET: Final = Resource("", "v1", "secrets", "Secret", True)
NAMESPACE: Final = Resource("", "v1", "namespaces", "Namespace", False)
CONFIG_MAP: Final = Resource("", "v1", "configmaps", "ConfigMap", True)
SERVICE_ACCOUNT: Final = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
ENDPOINT_SLICE: Final = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)
INGRESS: Final = Resource("networking.k8s.io", "v1", "ingresses", "Ingress", True)
INGRESS_CLASS: Final = Resource("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False)
GATEWAY_CLASS: Final = Resource(_GATEWAY_API, "v1", "gatewayclasses", "GatewayClass", False)
GATEWAY: Final = Resource(_GATEWAY_API, "v1", "gateways", "Gateway", True)
HTTP_ROUTE: Final = Resource(_GATEWAY_API, "v1", "httproutes", "HTTPRoute", True)
GRPC_ROUTE: Final = Resource(_GATEWAY_API, "v1", "grpcroutes", "GRPCRoute", True)
TLS_ROUTE: Final = Resource(_GATEWAY_API, "v1", "tlsroutes", "TLSRoute", True)
TCP_ROUTE: Final = Resource(_GATEWAY_API, "v1", "tcproutes", "TCPRoute", True)
UDP_ROUTE: Final = Resource(_GATEWAY_API, "v1", "udproutes", "UDPRoute", True)
LISTENER_SET: Final = Resource(_GATEWAY_API, "v1", "listenersets", "ListenerSet", True)
BACKEND_TLS_POLICY: Final = Resource(
    _GATEWAY_API, "v1", "backendtlspolicies", "BackendTLSPolicy", True
)
REFERENCE_GRANT: Final = Resource(
    _GATEWAY_API, "v1beta1", "referencegrants", "ReferenceGrant", True
)
GATEWAY_PARAMETERS: Final = Resource(
    "gateway.coxswain-labs.dev",
    "v1alpha1",
    "coxswaingatewayparameters",
    "CoxswainGatewayParameters",
    True,
)
DEPLOYMENT: Final = Resource("apps", "v1", "deployments", "Deployment", True)
HORIZONTAL_POD_AUTOSCALER: Final = Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True
)
POD_DISRUPTION_BUDGET: Final = Resource(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True
)
LEASE: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
