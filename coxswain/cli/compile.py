"""``coxswain compile``: its flags and its run, offline: read dumps, call the compiler, print
the snapshot, the status, the objects to provision or the findings."""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING, Any

from pyrsistent import pmap

from coxswain.cli.ingress_defaults import add_ingress_default_flags, ingress_defaults
from coxswain.cli.run import EXIT_OK, EXIT_UNREADABLE
from coxswain.cli.types import (
    VIP_SERVICE_TYPES,
    HelpFormatter,
    add_port_share_flag,
    class_names,
    networks,
    scope,
    selector,
    vip_service_type,
)
from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.config import (
    DEFAULT_GATEWAY_CONTROLLER,
    DEFAULT_INGRESS_CONTROLLER,
    DEFAULT_SHARED_PROXY_SELECTOR,
)
from coxswain.compile.ingress.migration import (
    migration_data,
    migration_report,
    migration_table,
)
from coxswain.compile.listing import diagnostic_data, infra_list, status_list
from coxswain.compile.model.places import Places, object_places, placed, placing
from coxswain.compile.model.state import build_state_once
from coxswain.compile.provision import provision
from coxswain.compile.scope_check import scope_problem, serves_nothing
from coxswain.compile.snapshot_json import snapshot_to_data
from coxswain.compile.tables import diagnostics_table, infra_table, routing_table, status_table
from coxswain.shell.output import dump_json, dump_yaml, json_pieces
from coxswain.shell.sources import LoadError, read_manifests, stream_bodies

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from coxswain.compile.model.state import ClusterState
    from coxswain.compile.scope import Scope

__all__ = ["add_parser"]


_EPILOG = """\
Reads Kubernetes objects from YAML or JSON dumps (multi-document files, `kind: List`, the output
of `kubectl get ... -o yaml`, directories read recursively, or `-` for standard input) and prints
what Coxswain would serve. Findings about the objects go to standard error as
`file:line: severity: Kind ns/name field: message (Reason)`; the exit code is 0 whenever the input
parsed, and 2 when it could not be read (a YAML syntax error is reported as file:line).

-o table prints, for people, the routing of the snapshot (one line per rule), the findings
(--emit diagnostics: where, severity, object, field, message), the conditions of every owned
object (--emit status) or the objects to apply and delete (--emit infra).

--scope NAMESPACE/NAME must name a dedicated Gateway of ours (one with its own proxy); another
name is refused with exit code 2, saying why. A scope that compiles to no route at all is
printed, and said on standard error. --emit status and --emit infra cover every object, and
take no --scope.

--emit migration reads a dump of a cluster that ingress-nginx serves (`kubectl get ingress -A
-o yaml`) and prints, for every Ingress whatever its class, each ingress-nginx annotation and
what Coxswain does with it: honoured, honoured-with-difference, ignored, not-yet, refused or
unknown, then a summary count (docs/migrating-from-ingress-nginx.md).

--emit status prints the status Coxswain would write on every object it owns. Offline there are
no proxies to report what they bound and acknowledged, so every listener that compiled cleanly
counts as Programmed.

examples:
  kubectl get ingress,ingressclass,service,endpointslice,secret -A -o yaml > dump.yaml
  coxswain compile -f dump.yaml
  coxswain compile -f manifests/ -o table --emit diagnostics
  coxswain compile -f manifests/ --scope shop/payments -o table
  kubectl get ingress -A -o yaml | coxswain compile -f - --emit migration -o table
"""


def add_parser(commands: Any) -> None:
    """Add ``compile`` to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "compile",
        help="compile YAML dumps offline and print the snapshot or the diagnostics",
        description="Compile Kubernetes objects offline into a Coxswain routing snapshot.",
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
    )
    _add_input_output(parser)
    _add_compile_config(parser)
    parser.set_defaults(handler=_compile)


def _add_input_output(parser: argparse.ArgumentParser) -> None:
    """What is read, for which scope, and what is printed how."""
    parser.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="append",
        nargs="+",
        required=True,
        metavar="PATH",
        help="file, directory or - (repeatable)",
    )
    parser.add_argument(
        "--scope",
        type=scope,
        metavar="shared|NAMESPACE/NAME",
        help="the snapshot's scope: the shared pool, or one dedicated Gateway (default: shared)",
    )
    parser.add_argument(
        "-o",
        "--output",
        default="json",
        choices=["json", "yaml", "table"],
        help="json or yaml: the data; table: aligned text for people, for every --emit",
    )
    parser.add_argument(
        "--emit",
        default="snapshot",
        choices=["snapshot", "status", "infra", "diagnostics", "migration"],
        help="snapshot: what the scope's proxy serves; status: the status of every owned "
        "object, as a List; infra: the objects the controller would own, as a List (deletions "
        "listed in the List's coxswain-labs.dev/delete annotation); diagnostics: the findings "
        "as data; migration: every ingress-nginx annotation of every Ingress, whatever its "
        "class, and what Coxswain does with it (docs/migrating-from-ingress-nginx.md)",
    )


def _add_compile_config(parser: argparse.ArgumentParser) -> None:
    """The compiler's settings, as the controller's flags set them in a cluster."""
    parser.add_argument(
        "--ingress-controller-name",
        default=DEFAULT_INGRESS_CONTROLLER,
        metavar="NAME",
        help="the IngressClass spec.controller served",
    )
    parser.add_argument(
        "--ingress-class",
        type=class_names,
        default=(),
        metavar="NAME[,NAME]",
        help="class names whose Ingresses are served whatever their IngressClass's controller "
        "(e.g. nginx, to see the takeover of ingress-nginx's Ingresses)",
    )
    parser.add_argument(
        "--ingress-without-class",
        action="store_true",
        help="serve Ingresses that name no class even when no default IngressClass is ours",
    )
    add_ingress_default_flags(parser)
    parser.add_argument(
        "--controller-name",
        default=DEFAULT_GATEWAY_CONTROLLER,
        metavar="NAME",
        help="the GatewayClass controllerName served",
    )
    parser.add_argument(
        "--namespace",
        default="coxswain-system",
        help="the controller namespace, where the VIP Services go",
    )
    parser.add_argument(
        "--shared-proxy-selector",
        type=selector,
        default=",".join(f"{k}={v}" for k, v in DEFAULT_SHARED_PROXY_SELECTOR.items()),
        metavar="K=V[,K=V]",
        help="labels of the shared proxy pods, selected by every VIP Service",
    )
    parser.add_argument(
        "--shared-vip-service-type",
        type=vip_service_type,
        default="LoadBalancer",
        metavar="{" + ",".join(VIP_SERVICE_TYPES) + "}",
        help="the type of each shared Gateway's VIP Service",
    )
    parser.add_argument(
        "--status-address",
        dest="status_addresses",
        action="append",
        default=[],
        metavar="ADDR",
        help="an address (IP or hostname) Ingresses report in status.loadBalancer (repeatable)",
    )
    add_port_share_flag(parser)
    parser.add_argument(
        "--proxy-trusted-proxies",
        type=networks,
        default=(),
        metavar="CIDR[,CIDR]",
        help="the --trusted-proxies of dedicated proxies whose CoxswainGatewayParameters set no "
        "trustedProxies (default: none)",
    )
    parser.add_argument(
        "--gateway-address-ranges",
        type=networks,
        default=(),
        metavar="CIDR[,CIDR]",
        help="networks a Gateway's static spec.addresses may come from (default: none, "
        "static addresses are refused)",
    )
    parser.add_argument(
        "--disable-gateway-api",
        action="store_true",
        help="Ingress only: compile, report and provision nothing of the Gateway API",
    )
    parser.add_argument(
        "--gateway-api-channel",
        choices=("standard", "experimental"),
        default="standard",
        help="the Gateway API CRDs' channel the cluster has: the GatewayClass status "
        "declares the experimental features only with experimental (default: standard)",
    )


def _compile(args: argparse.Namespace) -> int:
    """One pass that allocates millions of objects which live until it ends or are let go by
    reference counting, so the cyclic collector is off while it runs: it would scan every
    survivor at least once (2.5 of 25 CPU seconds at 100,000 rules, docs/benchmarks.md; 40%
    of a 30,000-rule compile at its default young threshold) and found 6 objects of cyclic
    garbage there in all. It is turned back on on return."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _compile_all(args)
    finally:
        if enabled:
            gc.enable()


def _compile_all(args: argparse.Namespace) -> int:
    if args.scope is not None and args.emit in ("status", "infra", "migration"):
        print(
            f"coxswain compile: --emit {args.emit} covers every object and takes no --scope",
            file=sys.stderr,
        )
        return EXIT_UNREADABLE
    paths = [p for group in args.paths for p in group]
    try:
        state, places = _read_state(paths)
    except LoadError as err:
        print(err, file=sys.stderr)  # file:line: message, as compilers print it
        return EXIT_UNREADABLE
    config = CompileConfig(
        ingress_controller=args.ingress_controller_name,
        ingress_class_names=args.ingress_class,
        ingress_without_class=args.ingress_without_class,
        ingress_defaults=ingress_defaults(args),
        gateway_controller=args.controller_name,
        namespace=args.namespace,
        shared_proxy_selector=pmap(args.shared_proxy_selector),
        shared_vip_service_type=args.shared_vip_service_type,
        gateway_api=not args.disable_gateway_api,
        gateway_api_channel=args.gateway_api_channel,
        status_addresses=tuple(args.status_addresses),
        shared_ports_per_namespace=args.shared_ports_per_namespace,
        proxy_trusted_proxies=tuple(map(str, args.proxy_trusted_proxies)),
        gateway_address_ranges=tuple(map(str, args.gateway_address_ranges)),
    )
    if args.emit == "infra":
        desired = provision(state, config)
        for finding in placed(desired.diagnostics, places):
            print(finding, file=sys.stderr)
        _print(args.output, infra_list(desired), lambda: infra_table(desired))
        return EXIT_OK
    if args.emit == "migration":
        ingresses = list(state.ingresses.values())
        entries = migration_report(ingresses)
        _print(
            args.output,
            migration_data(entries, len(ingresses)),
            lambda: migration_table(entries, len(ingresses)),
        )
        return EXIT_OK
    if args.emit == "status":
        statuses = status(state, config)
        _print(args.output, status_list(statuses), lambda: status_table(statuses))
        return EXIT_OK
    scope: Scope = args.scope or SharedPool()
    if (problem := scope_problem(state, scope, config)) is not None:
        print(f"coxswain compile: --scope {scope}: {problem}", file=sys.stderr)
        return EXIT_UNREADABLE
    result = compile(state, scope, config)
    found = placed(result.diagnostics, places)
    snapshot = result.snapshot
    empty = serves_nothing(snapshot)
    # Neither is read again: their memory is free before the snapshot's data and text are built.
    del state, result
    if args.emit == "diagnostics":
        _print(args.output, [diagnostic_data(d) for d in found], lambda: diagnostics_table(found))
    else:
        for finding in found:
            print(finding, file=sys.stderr)
        if args.output == "json":
            # The data holds all that is written: the snapshot goes before its text is made.
            data = snapshot_to_data(snapshot)
            del snapshot
            pieces = json_pieces(data)
            del data
            sys.stdout.flush()
            sys.stdout.buffer.writelines(pieces)
        else:
            _print(args.output, snapshot_to_data(snapshot), lambda: routing_table(snapshot))
    if empty:
        print(
            f"coxswain compile: scope {scope} compiles to no route: its proxy would answer 404 "
            "to every request",
            file=sys.stderr,
        )
    return EXIT_OK


def _read_state(paths: list[str]) -> tuple[ClusterState, Places]:
    """The state of the bodies under ``paths`` and where each object is, the bodies decoded
    as they are read and let go: only the state and that index outlive them (the bodies of a
    100,000-rule dump are 380 MB, and the arenas they leave were the command's peak,
    docs/benchmarks.md). An input holding two bodies of one key is read again and held whole,
    as ``build_state`` chooses between them by both bodies.

    Raises:
        LoadError: a path cannot be read or holds a syntax error.
    """
    places: Places = {}
    state = build_state_once(placing(stream_bodies(paths), places))
    if state is not None:
        return state, places
    bodies = read_manifests(paths)
    return build_state(bodies), object_places(bodies)


def _print(output: str, data: object, table: Callable[[], str]) -> None:
    """``data`` as JSON or YAML, or ``table()`` for ``-o table``."""
    if output == "table":
        sys.stdout.write(table())
    elif output == "yaml":
        sys.stdout.write(dump_yaml(data))
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(dump_json(data))
