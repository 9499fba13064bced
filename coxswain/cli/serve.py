"""``coxswain serve``: its flags and its run: standalone Coxswain, a folder of manifests served
by a shared proxy in this process (the process itself is :mod:`coxswain.shell.serve`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from coxswain.cli.listeners import add_listener_flags, proxy_config
from coxswain.cli.run import EXIT_UNREADABLE, run_until_done
from coxswain.cli.types import HelpFormatter, add_port_share_flag, json_lines, port
from coxswain.compile import CompileConfig
from coxswain.shell.sources import LoadError

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser"]

_EPILOG = """\
Standalone Coxswain: the manifests in the folders (Ingress, Gateway API objects, Services,
EndpointSlices, Secrets, as for `coxswain compile`) are the cluster. They are compiled for every
scope whenever a file changes (an edit routes within a second; a file that does not parse is
reported as file:line and the last good manifests keep serving). A shared proxy runs in this
process: Ingresses on the Ingress ports, each Gateway listener on its internal port (30000-32767,
see `coxswain compile -o table`). With --discovery-port other proxies subscribe too; with
--issue-certs DIR the CA is created on first run and each proxy identity the manifests grant a
scope gets DIR/proxies/<namespace>/<serviceaccount>/{tls.crt,tls.key,ca.crt}.

examples:
  coxswain serve --manifests examples/ --bind 127.0.0.1 --ingress-http-port 8080 \\
      --ingress-https-port 8443 --admin-port 9901
  coxswain serve --manifests site/ --discovery-port 18000 --issue-certs certs/
  coxswain proxy --shared --discovery 127.0.0.1:18000 \\
      --tls-cert certs/proxies/coxswain-system/coxswain-proxy/tls.crt \\
      --tls-key certs/proxies/coxswain-system/coxswain-proxy/tls.key \\
      --tls-ca certs/proxies/coxswain-system/coxswain-proxy/ca.crt
"""


def add_parser(commands: Any) -> None:
    """Add ``serve`` to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="standalone: serve a folder of manifests, no cluster needed",
        description="Compile a folder of manifests, serve it with a shared proxy in this "
        "process, and (with --discovery-port) to other proxies over discovery.",
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--manifests",
        action="append",
        required=True,
        metavar="PATH",
        help="folder (read recursively) or file of manifests, re-read when it changes (repeatable)",
    )
    parser.add_argument(
        "--discovery-port",
        type=port(lowest=0),
        metavar="PORT",
        help="serve discovery on this port of --bind (0 picks one), for other proxies",
    )
    parser.add_argument(
        "--issue-certs",
        metavar="DIR",
        help="discovery: the CA folder (created on first run); proxy certificates go to "
        "DIR/proxies/<namespace>/<serviceaccount>/",
    )
    parser.add_argument(
        "--insecure-discovery",
        action="store_true",
        help="serve discovery in plaintext, to anyone (development only)",
    )
    parser.add_argument(
        "--namespace",
        default="coxswain-system",
        help="the controller namespace (the shared pool's identity lives there)",
    )
    add_port_share_flag(parser)
    add_listener_flags(parser)
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    """``coxswain serve`` (:mod:`coxswain.shell.serve`)."""
    from coxswain.shell.logs import install_logging
    from coxswain.shell.offload import share_the_lock
    from coxswain.shell.serve import DiscoverySettings, ServeSettings, run_serve

    problem = None
    if args.discovery_port is None and (args.issue_certs or args.insecure_discovery):
        problem = "--issue-certs and --insecure-discovery need --discovery-port"
    elif args.discovery_port is not None and not (args.issue_certs or args.insecure_discovery):
        problem = "--discovery-port needs --issue-certs DIR (or --insecure-discovery)"
    elif args.issue_certs and args.insecure_discovery:
        problem = "--issue-certs and --insecure-discovery exclude each other"
    if problem is not None:
        print(f"coxswain serve: {problem}", file=sys.stderr)
        return EXIT_UNREADABLE
    settings = ServeSettings(
        manifests=tuple(args.manifests),
        compile=CompileConfig(
            namespace=args.namespace, shared_ports_per_namespace=args.shared_ports_per_namespace
        ),
        proxy=proxy_config(args, reuse_port=False),
        admin_port=args.admin_port or None,
        drain_timeout=args.drain_timeout,
        discovery=None
        if args.discovery_port is None
        else DiscoverySettings(
            host=args.bind, port=args.discovery_port, certificates=args.issue_certs
        ),
    )
    install_logging(json_lines=json_lines(args))
    share_the_lock()
    return run_until_done("serve", lambda: run_serve(settings), (LoadError, OSError, ValueError))
