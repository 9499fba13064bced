"""What the compiler is told about the installation it compiles for.

These are the values the controller takes from its flags (ARCHITECTURE §7) and the offline
tools from theirs; the compiler reads nothing from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_GATEWAY_CONTROLLER", "DEFAULT_INGRESS_CONTROLLER", "CompileConfig"]

DEFAULT_INGRESS_CONTROLLER: Final = "coxswain-labs.dev/ingress-controller"
DEFAULT_GATEWAY_CONTROLLER: Final = "coxswain-labs.dev/gateway-controller"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileConfig:
    """Installation settings the compiler depends on.

    Attributes:
        namespace: the controller's namespace, where the shared pool's VIP Services live.
        ingress_controller: ``IngressClass.spec.controller`` value that marks a class as ours.
        gateway_controller: ``GatewayClass.spec.controllerName`` value that marks a class as ours.
        ingress_http_port: the port Ingress HTTP traffic is advertised on (80).
        ingress_https_port: the port Ingress HTTPS traffic is advertised on (443); the key of
            the Ingress entries in the TLS store, and omitted from redirects when it is 443.
    """

    namespace: str = "coxswain-system"
    ingress_controller: str = DEFAULT_INGRESS_CONTROLLER
    gateway_controller: str = DEFAULT_GATEWAY_CONTROLLER
    ingress_http_port: int = 80
    ingress_https_port: int = 443
