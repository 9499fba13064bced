"""``coxswain controller``: its flags (each with a ``COXSWAIN_*`` environment equivalent,
checked when the command line is parsed like the flag itself) and the run (the controller
itself is ``shell.controller``)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap

from coxswain.cli.ingress_defaults import INGRESS_DEFAULT_FLAGS, ingress_defaults
from coxswain.cli.run import EXIT_UNREADABLE, run_until_done
from coxswain.cli.types import (
    VIP_SERVICE_TYPES,
    FromEnvironment,
    HelpFormatter,
    add_log_format,
    boolean,
    class_names,
    count,
    json_lines,
    networks,
    port,
    port_share,
    seconds,
    selector,
    vip_service_type,
)
from coxswain.compile import CompileConfig
from coxswain.compile.config import (
    DEFAULT_GATEWAY_CONTROLLER,
    DEFAULT_INGRESS_CONTROLLER,
    DEFAULT_SHARED_PORTS_PER_NAMESPACE,
    DEFAULT_SHARED_PROXY_SELECTOR,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from coxswain.shell.controller import ControllerSettings

__all__ = ["add_parser"]


@dataclass(frozen=True, slots=True)
class _Flag:
    """One controller flag: its built-in default (as text), meaning, and type."""

    name: str
    default: str
    meaning: str
    type: Callable[[str], object] = str
    metavar: str | None = None
    shown: str = ""  # the default as --help says it, when not ``default`` itself

    @property
    def variable(self) -> str:
        """``--health-port`` → ``COXSWAIN_HEALTH_PORT``."""
        return "COXSWAIN_" + self.name[2:].upper().replace("-", "_")


_FLAGS: Final = (
    _Flag("--namespace", "coxswain-system",
          "the controller namespace: VIP Services, the Lease, the discovery CA",
          metavar="NAMESPACE", shown="$POD_NAMESPACE, else coxswain-system"),
    _Flag("--controller-name", DEFAULT_GATEWAY_CONTROLLER,
          "the GatewayClass controllerName served", metavar="NAME"),
    _Flag("--ingress-controller-name", DEFAULT_INGRESS_CONTROLLER,
          "the IngressClass spec.controller served", metavar="NAME"),
    _Flag("--ingress-class", "",
          "class names whose Ingresses are served whatever their IngressClass's controller, "
          "e.g. nginx to take over ingress-nginx's", class_names, "NAME[,NAME]", shown="none"),
    _Flag("--ingress-without-class", "false",
          "serve Ingresses that name no class even when no default IngressClass is ours",
          boolean, "true|false"),
    *(_Flag(f.name, f.default, f.meaning, f.type, f.metavar, f.shown)
      for f in INGRESS_DEFAULT_FLAGS),
    _Flag("--shared-proxy-selector",
          ",".join(f"{k}={v}" for k, v in DEFAULT_SHARED_PROXY_SELECTOR.items()),
          "the labels of the shared proxy pods, selected by every VIP Service",
          selector, "K=V[,K=V]"),
    _Flag("--shared-vip-service-type", "LoadBalancer",
          "the type of each shared Gateway's VIP Service (NodePort is refused)",
          vip_service_type, "{" + ",".join(VIP_SERVICE_TYPES) + "}"),
    _Flag("--shared-ports-per-namespace", str(DEFAULT_SHARED_PORTS_PER_NAMESPACE),
          "internal ports of the shared pool the Gateways of one namespace may hold",
          port_share, "N"),
    _Flag("--shared-proxy-service-account", "coxswain-proxy",
          "the shared proxy pool's ServiceAccount (its discovery identity) in --namespace",
          metavar="NAME"),
    _Flag("--discovery-address", "", "where dedicated proxies reach discovery",
          metavar="HOST:PORT", shown="coxswain-discovery.<namespace>.svc:<discovery-port>"),
    _Flag("--proxy-image", "coxswain:0.1.0", "the image of dedicated proxies", metavar="IMAGE"),
    _Flag("--proxy-trusted-proxies", "",
          "the --trusted-proxies of dedicated proxies whose CoxswainGatewayParameters set no "
          "trustedProxies: peers whose X-Real-IP, Forwarded and X-Forwarded-* are kept",
          networks, "CIDR[,CIDR]", shown="none"),
    _Flag("--gateway-address-ranges", "",
          "networks a Gateway's static spec.addresses may come from; each is given to the "
          "Gateway's Service as an external IP (GatewayStaticAddresses)",
          networks, "CIDR[,CIDR]", shown="none: static addresses are refused"),
    _Flag("--discovery-port", "18000", "the discovery server's port (gRPC, mutual TLS)",
          port(lowest=1), "PORT"),
    _Flag("--discovery-streams-per-identity", "1024",
          "discovery streams one proxy identity (ServiceAccount) may have open: one per worker "
          "of each of its pods; past it a new one is refused (RESOURCE_EXHAUSTED)",
          count(lowest=1), "N"),
    _Flag("--discovery-max-streams", "8192",
          "discovery streams the controller holds in all, whatever the identities; past it a "
          "new one is refused (RESOURCE_EXHAUSTED)", count(lowest=1), "N"),
    _Flag("--health-port", "9902", "/healthz, /readyz and /metrics (0: none)",
          port(lowest=0), "PORT"),
    _Flag("--kubeconfig", "", "a kubeconfig file", metavar="FILE",
          shown="the in-cluster configuration"),
    _Flag("--crd-probe-interval", "30", "seconds between looks for the Gateway API CRDs",
          seconds, "SECONDS"),
)  # fmt: skip

_DISABLE_GATEWAY_API: Final = _Flag(
    "--disable-gateway-api",
    "false",
    "Ingress only: watch, compile, report and provision nothing of the Gateway API",
)
_STATUS_ADDRESS: Final = _Flag("--status-address", "", "")

_CONTROLLER_EPILOG = """\
Every flag can also be set by its environment variable (shown with each flag); a flag on the
command line wins. A bad value, on the command line or in the environment, is refused with
exit code 2 before anything starts.

Only the leader (a coordination.k8s.io/v1 Lease named coxswain-controller in --namespace)
writes status, provisions and serves discovery; a standby is live but not ready until it
takes over. The Gateway API CRDs are probed every 30 s (--crd-probe-interval): installing
them switches an Ingress-only controller to full mode without a restart.

examples:
  coxswain controller --namespace coxswain-system --shared-vip-service-type ClusterIP
  COXSWAIN_DISABLE_GATEWAY_API=true coxswain controller --kubeconfig ~/.kube/config
"""


def add_parser(commands: Any) -> None:
    """Add ``controller`` to ``commands`` (argparse's subparsers)."""
    controller: argparse.ArgumentParser = commands.add_parser(
        "controller",
        help="the Kubernetes controller: watch, compile, publish, write status, provision",
        description="Run the controller.",
        epilog=_CONTROLLER_EPILOG,
        formatter_class=HelpFormatter,
    )
    for flag in _FLAGS:
        builtin = flag.default
        if flag.name == "--namespace":
            builtin = os.environ.get("POD_NAMESPACE") or builtin
        controller.add_argument(
            flag.name,
            type=flag.type,
            default=_default(flag, builtin),
            metavar=flag.metavar,
            help=_help(flag, flag.shown or flag.default),
        )
    controller.add_argument(
        _STATUS_ADDRESS.name,
        dest="status_addresses",
        action="append",
        default=None,
        metavar="ADDR",
        help="an address Ingresses report in status.loadBalancer (repeatable; default: none; "
        f"environment: {_STATUS_ADDRESS.variable}, a comma-separated list)",
    )
    controller.add_argument(
        _DISABLE_GATEWAY_API.name,
        action=_Switch,
        type=boolean,
        default=_default(_DISABLE_GATEWAY_API, "false"),
        help=_help(_DISABLE_GATEWAY_API, "off", "true or false"),
    )
    add_log_format(controller)
    controller.set_defaults(handler=_controller)


def _default(flag: _Flag, builtin: str) -> str:
    """The flag's default: its variable's value when set (checked by the flag's type when the
    command line is parsed), else ``builtin``."""
    value = os.environ.get(flag.variable)
    return builtin if not value else FromEnvironment(value, flag.variable)


def _help(flag: _Flag, shown: str, takes: str = "") -> str:
    value = os.environ.get(flag.variable)
    now = f", set here to {value!r}" if value else ""
    takes = f" ({takes})" if takes else ""
    text = f"{flag.meaning} (default: {shown}; environment: {flag.variable}{takes}{now})"
    return text.replace("%", "%%")  # argparse formats help with %


class _Switch(argparse.Action):
    """A switch whose default may come from the environment: given, it is True; absent, its
    default is converted by ``type`` (:func:`coxswain.cli.types.boolean`) when it is text."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        default: object = False,
        type: Callable[[str], bool] | None = None,  # noqa: A002 - argparse's keyword
        help: str | None = None,  # noqa: A002 - argparse's keyword
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, type=type, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, True)


def _controller(args: argparse.Namespace) -> int:
    """``coxswain controller``: connect, run until SIGTERM (the flags were checked by the
    parser)."""
    from coxswain.shell.control.kube import connect
    from coxswain.shell.control.leader import LostLeadership
    from coxswain.shell.controller import run_until_terminated
    from coxswain.shell.logs import install_logging
    from coxswain.shell.offload import share_the_lock

    settings = _controller_settings(args)
    install_logging(json_lines=json_lines(args))
    try:
        kube = connect(args.kubeconfig or None)
    except Exception as err:  # noqa: BLE001 - the loaders raise several kinds; all mean "no cluster"
        print(f"coxswain controller: no cluster configuration: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    share_the_lock()
    code = run_until_done(
        "controller", lambda: run_until_terminated(kube, settings), (LostLeadership,)
    )
    return 1 if code == EXIT_UNREADABLE else code


def _controller_settings(args: argparse.Namespace) -> ControllerSettings:
    """The settings the (checked) flags describe."""
    from coxswain.shell.controller import ControllerSettings

    addresses = args.status_addresses
    if addresses is None:
        listed = os.environ.get(_STATUS_ADDRESS.variable, "")
        addresses = [a for a in listed.split(",") if a]
    namespace = args.namespace
    config = CompileConfig(
        ingress_controller=args.ingress_controller_name,
        ingress_class_names=args.ingress_class,
        ingress_without_class=args.ingress_without_class,
        ingress_defaults=ingress_defaults(args),
        gateway_controller=args.controller_name,
        namespace=namespace,
        shared_proxy_selector=pmap(args.shared_proxy_selector),
        shared_proxy_service_account=args.shared_proxy_service_account,
        shared_vip_service_type=args.shared_vip_service_type,
        gateway_api=not args.disable_gateway_api,
        status_addresses=tuple(addresses),
        shared_ports_per_namespace=args.shared_ports_per_namespace,
        proxy_image=args.proxy_image,
        proxy_trusted_proxies=tuple(map(str, args.proxy_trusted_proxies)),
        gateway_address_ranges=tuple(map(str, args.gateway_address_ranges)),
        discovery_address=args.discovery_address
        or f"coxswain-discovery.{namespace}.svc:{args.discovery_port}",
    )
    identity = f"{os.environ.get('POD_NAME') or socket.gethostname()}_{os.urandom(4).hex()}"
    return ControllerSettings(
        compile=config,
        identity=identity,
        discovery_port=args.discovery_port,
        discovery_streams_per_identity=args.discovery_streams_per_identity,
        discovery_max_streams=args.discovery_max_streams,
        health_port=args.health_port or None,
        crd_probe_every=args.crd_probe_interval,
    )
