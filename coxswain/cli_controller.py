"""``coxswain controller``: its flags (each with a ``COXSWAIN_*`` environment equivalent),
their checks, and the run (ARCHITECTURE §7; the controller itself is ``shell.controller``)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import TYPE_CHECKING, Any, Final

from pyrsistent import pmap

from coxswain.cli_run import EXIT_UNREADABLE, run_until_done
from coxswain.compile import CompileConfig
from coxswain.compile.config import (
    DEFAULT_GATEWAY_CONTROLLER,
    DEFAULT_INGRESS_CONTROLLER,
    DEFAULT_SHARED_PROXY_SELECTOR,
)
from coxswain.compile.labels import parse_selector

if TYPE_CHECKING:
    from coxswain.shell.controller import ControllerSettings

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add the ``controller`` subcommand to ``commands`` (argparse's subparsers)."""
    controller: argparse.ArgumentParser = commands.add_parser(
        "controller",
        help="the Kubernetes controller: watch, compile, publish, write status, provision",
        description="Run the controller. Every flag can also be set by the environment "
        "variable COXSWAIN_<FLAG> (e.g. COXSWAIN_NAMESPACE, COXSWAIN_DISABLE_GATEWAY_API=true); "
        "a flag on the command line wins.",
        epilog=_CONTROLLER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for flag, default, meaning in _CONTROLLER_FLAGS:
        controller.add_argument(flag, default=_env(flag, default), help=meaning)
    controller.add_argument(
        "--status-address",
        dest="status_addresses",
        action="append",
        default=None,
        metavar="ADDR",
        help="an address Ingresses report in status.loadBalancer (repeatable; "
        "COXSWAIN_STATUS_ADDRESS takes a comma-separated list)",
    )
    controller.add_argument(
        "--disable-gateway-api",
        action="store_true",
        default=_env("--disable-gateway-api", "false").lower() in ("1", "true", "yes"),
        help="Ingress only: watch, compile, report and provision nothing of the Gateway API",
    )
    return controller


_CONTROLLER_FLAGS: Final = (
    ("--namespace", os.environ.get("POD_NAMESPACE") or "coxswain-system",
     "the controller namespace: VIP Services, the Lease, the discovery CA"),
    ("--controller-name", DEFAULT_GATEWAY_CONTROLLER, "the GatewayClass controllerName served"),
    ("--ingress-controller-name", DEFAULT_INGRESS_CONTROLLER,
     "the IngressClass spec.controller served"),
    ("--shared-proxy-selector",
     ",".join(f"{k}={v}" for k, v in DEFAULT_SHARED_PROXY_SELECTOR.items()),
     "K=V[,K=V]: the labels of the shared proxy pods, selected by every VIP Service"),
    ("--shared-vip-service-type", "LoadBalancer",
     "LoadBalancer or ClusterIP: the type of each shared Gateway's VIP Service"),
    ("--shared-proxy-service-account", "coxswain-proxy",
     "the shared proxy pool's ServiceAccount (its discovery identity) in --namespace"),
    ("--discovery-address", "",
     "HOST:PORT where dedicated proxies reach discovery "
     "(default: coxswain-discovery.<namespace>.svc:<discovery-port>)"),
    ("--proxy-image", "coxswain:0.1.0", "the image of dedicated proxies"),
    ("--discovery-port", "18000", "the discovery server's port (gRPC, mutual TLS)"),
    ("--health-port", "9902", "/healthz, /readyz and /metrics"),
    ("--kubeconfig", "", "a kubeconfig file (default: the in-cluster configuration)"),
    ("--crd-probe-interval", "30", "seconds between looks for the Gateway API CRDs"),
)  # fmt: skip

_CONTROLLER_EPILOG = """\
Only the leader (a coordination.k8s.io/v1 Lease named coxswain-controller in --namespace)
writes status, provisions and serves discovery; a standby is live but not ready until it
takes over. The Gateway API CRDs are probed every 30 s (--crd-probe-interval): installing
them switches an Ingress-only controller to full mode without a restart.

examples:
  coxswain controller --namespace coxswain-system --shared-vip-service-type ClusterIP
  COXSWAIN_DISABLE_GATEWAY_API=true coxswain controller --kubeconfig ~/.kube/config
"""


def _env(flag: str, default: str) -> str:
    """The value of ``COXSWAIN_<FLAG>`` (``--health-port`` → ``COXSWAIN_HEALTH_PORT``)."""
    return os.environ.get("COXSWAIN_" + flag[2:].upper().replace("-", "_"), default)


def run(args: argparse.Namespace) -> int:
    """``coxswain controller``: check the flags, connect, run until SIGTERM."""
    from coxswain.shell.controller import run_until_terminated
    from coxswain.shell.kube import connect
    from coxswain.shell.leader import LostLeadership
    from coxswain.shell.logs import install_logging

    problem, settings = _controller_settings(args)
    if settings is None:
        print(f"coxswain controller: {problem}", file=sys.stderr)
        return EXIT_UNREADABLE
    install_logging()
    try:
        kube = connect(args.kubeconfig or None)
    except Exception as err:  # noqa: BLE001 - the loaders raise several kinds; all mean "no cluster"
        print(f"coxswain controller: no cluster configuration: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    code = run_until_done(
        "controller", lambda: run_until_terminated(kube, settings), (LostLeadership,)
    )
    return 1 if code == EXIT_UNREADABLE else code


def _controller_settings(args: argparse.Namespace) -> tuple[str, ControllerSettings | None]:
    """The settings the flags describe, or what is wrong with them."""
    from coxswain.shell.controller import ControllerSettings

    selector = parse_selector(args.shared_proxy_selector)
    if selector is None:
        return "--shared-proxy-selector takes comma-separated key=value labels", None
    if args.shared_vip_service_type == "NodePort":
        return (
            "--shared-vip-service-type NodePort is refused: every shared Gateway needs its "
            "listener ports on its own address, and a NodePort Service can neither keep them "
            "nor give each Gateway an address (use LoadBalancer, or ClusterIP behind your own "
            "load balancer)",
            None,
        )
    if args.shared_vip_service_type not in ("LoadBalancer", "ClusterIP"):
        return "--shared-vip-service-type takes LoadBalancer or ClusterIP", None
    try:
        discovery_port, health_port = int(args.discovery_port), int(args.health_port)
    except ValueError:
        return "--discovery-port and --health-port take port numbers", None
    try:
        probe = float(args.crd_probe_interval)
    except ValueError:
        probe = -1.0
    if not probe > 0:
        return "--crd-probe-interval takes a number of seconds above 0", None
    addresses = args.status_addresses
    if addresses is None:
        addresses = [a for a in _env("--status-address", "").split(",") if a]
    namespace = args.namespace
    config = CompileConfig(
        ingress_controller=args.ingress_controller_name,
        gateway_controller=args.controller_name,
        namespace=namespace,
        shared_proxy_selector=pmap(selector),
        shared_proxy_service_account=args.shared_proxy_service_account,
        shared_vip_service_type=args.shared_vip_service_type,
        gateway_api=not args.disable_gateway_api,
        status_addresses=tuple(addresses),
        proxy_image=args.proxy_image,
        discovery_address=args.discovery_address
        or f"coxswain-discovery.{namespace}.svc:{discovery_port}",
    )
    identity = f"{os.environ.get('POD_NAME') or socket.gethostname()}_{os.urandom(4).hex()}"
    return "", ControllerSettings(
        compile=config,
        identity=identity,
        discovery_port=discovery_port,
        health_port=health_port or None,
        crd_probe_every=probe,
    )
