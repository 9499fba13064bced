"""What the compiler is told about the installation it compiles for.

These are the values the controller takes from its flags (docs/contracts.md, "Command
line") and the offline tools from theirs; the compiler reads nothing from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from pyrsistent import pmap

if TYPE_CHECKING:
    from pyrsistent.typing import PMap

__all__ = [
    "DEFAULT_GATEWAY_CONTROLLER",
    "DEFAULT_INGRESS_CONTROLLER",
    "DEFAULT_SHARED_PORTS_PER_NAMESPACE",
    "DEFAULT_SHARED_PROXY_SELECTOR",
    "CompileConfig",
    "IngressDefaults",
]

DEFAULT_INGRESS_CONTROLLER: Final = "coxswain-labs.dev/ingress-controller"
DEFAULT_GATEWAY_CONTROLLER: Final = "coxswain-labs.dev/gateway-controller"
DEFAULT_SHARED_PORTS_PER_NAMESPACE: Final = 64
DEFAULT_SHARED_PROXY_SELECTOR: Final = {
    "app.kubernetes.io/name": "coxswain",
    "app.kubernetes.io/component": "shared-proxy",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class IngressDefaults:
    """What ingress-nginx kept in its ConfigMap, for every Ingress that does not set the
    annotation (docs/migrating-from-ingress-nginx.md, "Global defaults").

    Attributes:
        body_size: ``proxy-body-size`` (ConfigMap ``proxy-body-size``), bytes; 0: no limit.
        connect_timeout: ``proxy-connect-timeout``, seconds; 0 keeps the proxy's own. So do
            the next two.
        read_timeout: ``proxy-read-timeout``.
        send_timeout: ``proxy-send-timeout``.
        ssl_redirect: ``ssl-redirect`` (ConfigMap ``ssl-redirect``).
        hsts: ConfigMap ``hsts``: HTTPS responses of a host with a certificate carry
            ``Strict-Transport-Security`` (RFC 6797 §6.1). Off unless asked for, unlike
            ingress-nginx: browsers remember the header for ``hsts_max_age`` seconds, so
            Coxswain does not commit its users' hosts to HTTPS on its own
            (docs/migrating-from-ingress-nginx.md, "Global defaults").
        hsts_max_age: ConfigMap ``hsts-max-age``, seconds (``max-age``).
        hsts_include_subdomains: ConfigMap ``hsts-include-subdomains`` (``includeSubDomains``).
        hsts_preload: ConfigMap ``hsts-preload`` (``preload``).
    """

    body_size: int = 0
    connect_timeout: float = 0
    read_timeout: float = 0
    send_timeout: float = 0
    ssl_redirect: bool = True
    hsts: bool = False
    hsts_max_age: int = 31536000
    hsts_include_subdomains: bool = True
    hsts_preload: bool = False

    @property
    def hsts_value(self) -> str:
        """The ``Strict-Transport-Security`` value (RFC 6797 §6.1), or "" when off; written
        as ingress-nginx writes it."""
        if not self.hsts:
            return ""
        value = f"max-age={self.hsts_max_age}"
        if self.hsts_include_subdomains:
            value += "; includeSubDomains"
        return value + "; preload" if self.hsts_preload else value


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileConfig:
    """Installation settings the compiler depends on.

    Attributes:
        namespace: the controller's namespace, where the shared pool's VIP Services live.
        gateway_api: False serves Ingress only (``--disable-gateway-api``): nothing of the
            Gateway API is compiled, reported or provisioned.
        gateway_api_channel: the release channel of the Gateway API CRDs installed,
            ``standard`` or ``experimental``: the GatewayClass status declares the features of
            the experimental fields only where they exist (the controller reads it from the
            HTTPRoute CRD; ``coxswain compile --gateway-api-channel``).
        ingress_controller: ``IngressClass.spec.controller`` value that marks a class as ours.
        ingress_class_names: class names whose Ingresses are ours whatever their IngressClass
            says (``--ingress-class``), e.g. ``nginx`` to take over ingress-nginx's Ingresses
            without editing them (docs/migrating-from-ingress-nginx.md, "Taking over").
        ingress_without_class: Ingresses that name no class are ours even when no default
            IngressClass is (``--ingress-without-class``).
        ingress_defaults: the annotations' values for Ingresses that set none
            (``--ingress-default-*``, ingress-nginx's ConfigMap keys).
        gateway_controller: ``GatewayClass.spec.controllerName`` value that marks a class as ours.
        ingress_http_port: the port Ingress HTTP traffic is advertised on (80).
        ingress_https_port: the port Ingress HTTPS traffic is advertised on (443); the key of
            the Ingress entries in the TLS store, and omitted from redirects when it is 443.
        shared_proxy_selector: the labels of the shared pool's pods; every VIP Service selects
            them (the chart passes its release's labels).
        shared_proxy_service_account: the shared pool's ServiceAccount in ``namespace``; its
            discovery identity is the one granted the SharedPool scope (the chart sets it).
        shared_vip_service_type: ``LoadBalancer`` or ``ClusterIP`` for VIP Services.
        proxy_image: the image of dedicated proxies unless their parameters name one.
        proxy_trusted_proxies: the ``--trusted-proxies`` of dedicated proxies whose parameters
            set no ``trustedProxies`` (``--proxy-trusted-proxies``): canonical network texts,
            checked by the flag; empty, they trust no peer.
        discovery_address: where dedicated proxies reach the discovery server.
        status_addresses: what our Ingresses report in ``status.loadBalancer``.
        gateway_address_ranges: the networks a Gateway's static ``spec.addresses`` may come
            from (``--gateway-address-ranges``), as canonical network texts; a static address
            is given to the Gateway's Service as an external IP, which captures that address's
            traffic cluster-wide, so none is given unless the installer names the ranges. With
            none, GatewayStaticAddresses is not declared.
        shared_ports_per_namespace: how many of the shared pool's internal ports (30000-32767,
            one per shared Gateway and listener port) the Gateways of one namespace may hold
            (``--shared-ports-per-namespace``), so that one tenant cannot take them all. The
            default, 64, is the listeners one Gateway may have (or 32 Gateways on ports 80 and
            443) and lets 43 namespaces use their whole share at once.
        serves_http2: whether the proxies serve HTTP/2 (with prior knowledge on HTTP
            listeners, by ALPN on HTTPS ones, and towards ``h2c`` backends), which gRPC needs
            (GEP-1016, "Transport"). Only then does the GatewayClass declare the GRPCRoute
            features and HTTPRouteBackendProtocolH2C (``gateway.status.HTTP2_FEATURES``):
            ``supportedFeatures`` says what the data plane serves, and GRPCRoutes are
            compiled, attached and reported either way. True, as Coxswain's proxy does; False
            only for a fleet of older proxies that speak HTTP/1.1 alone.
    """

    namespace: str = "coxswain-system"
    gateway_api: bool = True
    gateway_api_channel: str = "standard"
    ingress_controller: str = DEFAULT_INGRESS_CONTROLLER
    ingress_class_names: tuple[str, ...] = ()
    ingress_without_class: bool = False
    ingress_defaults: IngressDefaults = IngressDefaults()
    gateway_controller: str = DEFAULT_GATEWAY_CONTROLLER
    ingress_http_port: int = 80
    ingress_https_port: int = 443
    shared_proxy_selector: PMap[str, str] = field(
        default_factory=lambda: pmap(DEFAULT_SHARED_PROXY_SELECTOR)
    )
    shared_proxy_service_account: str = "coxswain-proxy"
    shared_vip_service_type: str = "LoadBalancer"
    proxy_image: str = "coxswain:0.1.0"
    proxy_trusted_proxies: tuple[str, ...] = ()
    discovery_address: str = "coxswain-discovery.coxswain-system.svc:18000"
    status_addresses: tuple[str, ...] = ()
    gateway_address_ranges: tuple[str, ...] = ()
    shared_ports_per_namespace: int = DEFAULT_SHARED_PORTS_PER_NAMESPACE
    serves_http2: bool = True
