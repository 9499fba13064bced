"""The ``coxswain`` command line.

Each subcommand is a thin shell: read input, call the pure core, print. Exit codes: 0 when the
command did its job (whatever diagnostics the input earned), 2 when the input or the flags could
not be used. Flag values are checked when the command line is parsed (:mod:`coxswain.cli_types`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from pyrsistent import pmap

from coxswain import __version__, cli_controller
from coxswain.cli_run import EXIT_OK, EXIT_UNREADABLE, run_until_done
from coxswain.cli_types import (
    VIP_SERVICE_TYPES,
    HelpFormatter,
    add_log_format,
    gateway,
    json_lines,
    port,
    port_share,
    scope,
    seconds,
    selector,
    vip_service_type,
)
from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.config import (
    DEFAULT_GATEWAY_CONTROLLER,
    DEFAULT_INGRESS_CONTROLLER,
    DEFAULT_SHARED_PORTS_PER_NAMESPACE,
    DEFAULT_SHARED_PROXY_SELECTOR,
)
from coxswain.compile.listing import diagnostic_data, infra_list, status_list
from coxswain.compile.model.places import locate
from coxswain.compile.provision import provision
from coxswain.compile.scope import parse_scope
from coxswain.compile.scope_check import scope_problem, serves_nothing
from coxswain.compile.snapshot_json import SnapshotFormatError, snapshot_from_data, snapshot_to_data
from coxswain.compile.tables import diagnostics_table, infra_table, routing_table, status_table
from coxswain.route import RequestHead, build_table, select
from coxswain.route.explain import explain
from coxswain.shell.output import dump_yaml
from coxswain.shell.sources import LoadError, located, read_manifests

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from coxswain.compile.scope import Scope
    from coxswain.shell.proxy import ProxyConfig
    from coxswain.shell.proxy_process import Feed

__all__ = ["main"]


_COMPILE_EPILOG = """\
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

--emit status prints the status Coxswain would write on every object it owns. Offline there are
no proxies to report what they bound and acknowledged, so every listener that compiled cleanly
counts as Programmed.

examples:
  kubectl get ingress,ingressclass,service,endpointslice,secret -A -o yaml > dump.yaml
  coxswain compile -f dump.yaml
  coxswain compile -f manifests/ -o table --emit diagnostics
  coxswain compile -f manifests/ --scope shop/payments -o table
"""

_ROUTE_EPILOG = """\
Explains the decision a proxy serving SNAPSHOT (the JSON of `coxswain compile`) would take for
one request arriving on PORT. The URL's host is the Host header unless -H 'Host: ...' overrides
it; --sni defaults to that host for https:// URLs. PORT is matched against the listeners'
target ports (listener_health[].target_port) and the Ingress ports (--ingress-http-port,
--ingress-https-port).

examples:
  coxswain compile -f examples/ > snapshot.json
  coxswain route --snapshot snapshot.json --port 80 GET http://demo.example.com/api/users
  coxswain route --snapshot snapshot.json --port 443 -o json GET https://demo.example.com/
"""


_PROXY_EPILOG = """\
Serves the snapshot in FILE (the JSON of `coxswain compile --scope ...`): Ingress ports
(shared pool) and every ready Gateway listener's target port. The file is re-read on SIGHUP and
when it is replaced (write a temporary file, then rename it); a file that cannot be used is
logged and the current snapshot stays. With --discovery HOST:PORT the snapshots come from the
controller's gRPC stream instead, over mutual TLS with the proxy's certificate (its SPIFFE
identity decides which scope it may subscribe to); a refused subscription exits 2, a lost
connection is retried while the last snapshot keeps serving. One JSON access-log line per
request goes to stderr. A configuration error exits 2 at once with its reason (a snapshot file
that cannot be used, a port of the first snapshot or the admin port that cannot be listened
on, TLS files that are not PEM), checked before --workers N starts any worker; SIGTERM or
SIGINT drains and exits 0. With --workers N, SIGHUP reaches every worker and a worker that
crashes is started again.

examples:
  coxswain compile -f examples/ > snapshot.json
  coxswain proxy --shared --snapshot snapshot.json --ingress-http-port 8080 \\
      --ingress-https-port 8443 --admin-port 9901
  coxswain proxy --gateway demo/web --discovery coxswain-controller:18000 \\
      --tls-cert tls.crt --tls-key tls.key --tls-ca ca.crt
"""


_SERVE_EPILOG = """\
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    handler: Any = args.handler
    code: int = handler(args)
    return code


class _Version(argparse.Action):
    """``--version``: the version and how the HTTP/1.1 codec runs (compiled or not). The
    codec is imported only when asked: every other command would pay for it (22 ms of the
    300 ms ``import coxswain.cli`` takes, ``python -X importtime``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from coxswain.shell.http1 import codec_build

        print(f"coxswain {__version__} (HTTP/1.1 codec {codec_build()})")  # stdout, as argparse's
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coxswain",
        description="Kubernetes Ingress and Gateway API controller and proxy.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show the version and the codec's build"
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    comp = commands.add_parser(
        "compile",
        help="compile YAML dumps offline and print the snapshot or the diagnostics",
        description="Compile Kubernetes objects offline into a Coxswain routing snapshot.",
        epilog=_COMPILE_EPILOG,
        formatter_class=HelpFormatter,
    )
    comp.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="append",
        nargs="+",
        required=True,
        metavar="PATH",
        help="file, directory or - (repeatable)",
    )
    comp.add_argument(
        "--scope",
        type=scope,
        metavar="shared|NAMESPACE/NAME",
        help="the snapshot's scope: the shared pool, or one dedicated Gateway (default: shared)",
    )
    comp.add_argument(
        "-o",
        "--output",
        default="json",
        choices=["json", "yaml", "table"],
        help="json or yaml: the data; table: aligned text for people, for every --emit",
    )
    comp.add_argument(
        "--emit",
        default="snapshot",
        choices=["snapshot", "status", "infra", "diagnostics"],
        help="snapshot: what the scope's proxy serves; status: the status of every owned "
        "object, as a List; infra: the objects the controller would own, as a List (deletions "
        "listed in the List's coxswain-labs.dev/delete annotation); diagnostics: the findings "
        "as data",
    )
    comp.add_argument(
        "--ingress-controller-name",
        default=DEFAULT_INGRESS_CONTROLLER,
        metavar="NAME",
        help="the IngressClass spec.controller served",
    )
    comp.add_argument(
        "--controller-name",
        default=DEFAULT_GATEWAY_CONTROLLER,
        metavar="NAME",
        help="the GatewayClass controllerName served",
    )
    comp.add_argument(
        "--namespace",
        default="coxswain-system",
        help="the controller namespace, where the VIP Services go",
    )
    comp.add_argument(
        "--shared-proxy-selector",
        type=selector,
        default=",".join(f"{k}={v}" for k, v in DEFAULT_SHARED_PROXY_SELECTOR.items()),
        metavar="K=V[,K=V]",
        help="labels of the shared proxy pods, selected by every VIP Service",
    )
    comp.add_argument(
        "--shared-vip-service-type",
        type=vip_service_type,
        default="LoadBalancer",
        metavar="{" + ",".join(VIP_SERVICE_TYPES) + "}",
        help="the type of each shared Gateway's VIP Service",
    )
    comp.add_argument(
        "--status-address",
        dest="status_addresses",
        action="append",
        default=[],
        metavar="ADDR",
        help="an address (IP or hostname) Ingresses report in status.loadBalancer (repeatable)",
    )
    comp.add_argument(
        "--shared-ports-per-namespace",
        type=port_share,
        default=DEFAULT_SHARED_PORTS_PER_NAMESPACE,
        metavar="N",
        help="internal ports of the shared pool the Gateways of one namespace may hold",
    )
    comp.add_argument(
        "--disable-gateway-api",
        action="store_true",
        help="Ingress only: compile, report and provision nothing of the Gateway API",
    )
    comp.set_defaults(handler=_compile)

    route = commands.add_parser(
        "route",
        help="explain which rule and backend a request would take",
        description="Explain the routing decision for one request against a snapshot.",
        epilog=_ROUTE_EPILOG,
        formatter_class=HelpFormatter,
    )
    route.add_argument("--snapshot", required=True, metavar="FILE", help="snapshot JSON")
    route.add_argument(
        "--port", required=True, type=port(lowest=1), help="the port the request arrives on"
    )
    route.add_argument("--sni", help="TLS server name (default: the URL's host for https)")
    route.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        default=[],
        metavar="'K: V'",
        help="a request header (repeatable)",
    )
    route.add_argument(
        "-o",
        "--output",
        default="text",
        choices=["text", "json"],
        help="text for people, or the decision as JSON",
    )
    _add_ingress_ports(route)
    route.add_argument("method", metavar="METHOD", help="the request method")
    route.add_argument("url", metavar="URL", help="an http:// or https:// URL")
    route.set_defaults(handler=_route)

    proxy = commands.add_parser(
        "proxy",
        help="serve traffic: a reverse proxy for one snapshot",
        description="Run the proxy data plane for the shared pool or one dedicated Gateway.",
        epilog=_PROXY_EPILOG,
        formatter_class=HelpFormatter,
    )
    served = proxy.add_mutually_exclusive_group(required=True)
    served.add_argument("--shared", action="store_true", help="serve the shared pool")
    served.add_argument(
        "--gateway", type=gateway, metavar="NAMESPACE/NAME", help="serve one dedicated Gateway"
    )
    source = proxy.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", metavar="FILE", help="snapshot JSON, re-read on change")
    source.add_argument(
        "--discovery",
        metavar="HOST:PORT",
        help="the controller's discovery server (gRPC over mutual TLS)",
    )
    proxy.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="discovery: this proxy's certificate (the three files are read again at each "
        "connection, so a renewed certificate needs no restart)",
    )
    proxy.add_argument("--tls-key", metavar="FILE", help="discovery: its private key")
    proxy.add_argument("--tls-ca", metavar="FILE", help="discovery: the CA of the server")
    proxy.add_argument(
        "--insecure-discovery",
        action="store_true",
        help="discovery in plaintext, no identity (development only)",
    )
    proxy.add_argument(
        "--node-id",
        default=os.environ.get("POD_NAME") or socket.gethostname(),
        help="this proxy's name in the controller's fleet (default: $POD_NAME or the host name)",
    )
    _add_listener_flags(proxy)
    proxy.add_argument(
        "--workers",
        type=int,
        default=_cpu_count(),
        metavar="N",
        help="worker processes sharing the ports through SO_REUSEPORT, restarted if they die; "
        "1 serves in this process (default: the CPUs this process may use, here %(default)s)",
    )
    proxy.add_argument(_WORKER_FLAG, action="store_true", help=argparse.SUPPRESS)
    proxy.set_defaults(handler=_proxy)

    serve = commands.add_parser(
        "serve",
        help="standalone: serve a folder of manifests, no cluster needed",
        description="Compile a folder of manifests, serve it with a shared proxy in this "
        "process, and (with --discovery-port) to other proxies over discovery.",
        epilog=_SERVE_EPILOG,
        formatter_class=HelpFormatter,
    )
    serve.add_argument(
        "--manifests",
        action="append",
        required=True,
        metavar="PATH",
        help="folder (read recursively) or file of manifests, re-read when it changes (repeatable)",
    )
    serve.add_argument(
        "--discovery-port",
        type=port(lowest=0),
        metavar="PORT",
        help="serve discovery on this port of --bind (0 picks one), for other proxies",
    )
    serve.add_argument(
        "--issue-certs",
        metavar="DIR",
        help="discovery: the CA folder (created on first run); proxy certificates go to "
        "DIR/proxies/<namespace>/<serviceaccount>/",
    )
    serve.add_argument(
        "--insecure-discovery",
        action="store_true",
        help="serve discovery in plaintext, to anyone (development only)",
    )
    serve.add_argument(
        "--namespace",
        default="coxswain-system",
        help="the controller namespace (the shared pool's identity lives there)",
    )
    serve.add_argument(
        "--shared-ports-per-namespace",
        type=port_share,
        default=DEFAULT_SHARED_PORTS_PER_NAMESPACE,
        metavar="N",
        help="internal ports of the shared pool the Gateways of one namespace may hold",
    )
    _add_listener_flags(serve)
    serve.set_defaults(handler=_serve)

    cli_controller.add_parser(commands).set_defaults(handler=_controller)
    return parser


def _add_listener_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of a proxy's listeners and requests, shared by ``proxy`` and ``serve``."""
    parser.add_argument("--bind", default="0.0.0.0", metavar="ADDR", help="address to listen on")
    _add_ingress_ports(parser)
    parser.add_argument(
        "--admin-port",
        type=port(lowest=0),
        default=9901,
        metavar="PORT",
        help="/healthz, /readyz and /metrics (0: none)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM, how long requests in flight may take to finish",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        metavar="N",
        help="answer 413 to a request body over N bytes (default: no limit)",
    )
    for flag, default, meaning in _TIMEOUT_FLAGS:
        parser.add_argument(flag, type=seconds, default=default, metavar="SECONDS", help=meaning)
    add_log_format(parser)


def _add_ingress_ports(parser: argparse.ArgumentParser) -> None:
    """The Ingress ports: where the proxy serves the Ingress table, and where an HTTP→HTTPS
    redirect sends a client that named a port (README, "Ingress")."""
    parser.add_argument(
        "--ingress-http-port",
        type=port(lowest=1),
        default=80,
        metavar="PORT",
        help="the port of Ingress HTTP",
    )
    parser.add_argument(
        "--ingress-https-port",
        type=port(lowest=1),
        default=443,
        metavar="PORT",
        help="the port of Ingress HTTPS",
    )


# --- compile ------------------------------------------------------------------------------------


def _compile(args: argparse.Namespace) -> int:
    if args.scope is not None and args.emit in ("status", "infra"):
        print(
            f"coxswain compile: --emit {args.emit} covers every object and takes no --scope",
            file=sys.stderr,
        )
        return EXIT_UNREADABLE
    paths = [p for group in args.paths for p in group]
    try:
        bodies = read_manifests(paths)
    except LoadError as err:
        print(err, file=sys.stderr)  # file:line: message, as compilers print it
        return EXIT_UNREADABLE
    config = CompileConfig(
        ingress_controller=args.ingress_controller_name,
        gateway_controller=args.controller_name,
        namespace=args.namespace,
        shared_proxy_selector=pmap(args.shared_proxy_selector),
        shared_vip_service_type=args.shared_vip_service_type,
        gateway_api=not args.disable_gateway_api,
        status_addresses=tuple(args.status_addresses),
        shared_ports_per_namespace=args.shared_ports_per_namespace,
    )
    state = build_state(bodies)
    if args.emit == "infra":
        desired = provision(state, config)
        for line in located(desired.diagnostics, bodies):
            print(line, file=sys.stderr)
        _print(args.output, infra_list(desired), lambda: infra_table(desired))
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
    found = result.diagnostics
    if args.emit == "diagnostics":
        placed = locate(found, bodies)
        _print(args.output, [diagnostic_data(d) for d in placed], lambda: diagnostics_table(placed))
    else:
        for line in located(found, bodies):
            print(line, file=sys.stderr)
        snapshot = result.snapshot
        _print(args.output, snapshot_to_data(snapshot), lambda: routing_table(snapshot))
    if serves_nothing(result.snapshot):
        print(
            f"coxswain compile: scope {scope} compiles to no route: its proxy would answer 404 "
            "to every request",
            file=sys.stderr,
        )
    return EXIT_OK


def _print(output: str, data: object, table: Callable[[], str]) -> None:
    """``data`` as JSON or YAML, or ``table()`` for ``-o table``."""
    if output == "table":
        sys.stdout.write(table())
    elif output == "yaml":
        sys.stdout.write(dump_yaml(data))
    else:
        sys.stdout.write(json.dumps(data, sort_keys=True, indent=2) + "\n")


# --- route --------------------------------------------------------------------------------------


def _route(args: argparse.Namespace) -> int:
    try:
        with open(args.snapshot, encoding="utf-8") as file:
            snapshot = snapshot_from_data(json.load(file))
    except (OSError, ValueError) as err:  # SnapshotFormatError and JSON errors are ValueErrors
        kind = "is not a snapshot" if isinstance(err, SnapshotFormatError) else "cannot be read"
        print(f"coxswain route: {args.snapshot} {kind}: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    url = urlsplit(args.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        print(f"coxswain route: {args.url!r} is not an http:// or https:// URL", file=sys.stderr)
        return EXIT_UNREADABLE
    headers: list[tuple[str, str]] = []
    for line in args.headers:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            print(f"coxswain route: -H {line!r} is not 'Name: value'", file=sys.stderr)
            return EXIT_UNREADABLE
        headers.append((name.strip(), value.strip()))
    host = next((v for n, v in headers if n.lower() == "host"), url.netloc.rpartition("@")[2])
    if not any(n.lower() == "host" for n, _ in headers):
        headers.insert(0, ("Host", host))
    tls = url.scheme == "https"
    head = RequestHead(
        port=args.port,
        method=args.method.upper(),
        target=(url.path or "/") + (f"?{url.query}" if url.query else ""),
        host=host,
        tls=tls,
        sni=args.sni or (url.hostname if tls else None),
        headers=tuple(headers),
    )
    table = build_table(
        snapshot,
        ingress_http_port=args.ingress_http_port,
        ingress_https_port=args.ingress_https_port,
    )
    decision = select(table, head)
    data = explain(table, head, headers, decision)
    if args.output == "json":
        sys.stdout.write(json.dumps(data, sort_keys=True, indent=2) + "\n")
    else:
        sys.stdout.write(_route_text(data))
    return EXIT_OK


def _route_text(data: dict[str, Any]) -> str:
    lines = [
        f"status:   {data['status'] if data['status'] is not None else 'forwarded'}",
        f"reason:   {data['reason']}",
    ]
    if (route := data["route"]) is not None:
        lines.append(
            f"route:    {route['kind']} {route['namespace']}/{route['name']} {route['rule']}"
        )
    several = len(data["backends"]) > 1
    for backend in data["backends"]:
        endpoints = ", ".join(backend["endpoints"]) or "none ready"
        state = "" if backend["valid"] else " (invalid)"
        if several:
            state += f" weight {backend['weight']}"
        lines.append(
            f"backend:  {backend['namespace']}/{backend['service']}:{backend['port']}{state}"
            f" -> {endpoints}"
        )
    if (redirect := data["redirect"]) is not None:
        lines.append(f"location: {redirect['location']}")
    lines.append(f"upstream: {data['host']} {data['path']}")
    return "\n".join(lines) + "\n"


# --- proxy --------------------------------------------------------------------------------------

_WORKER_FLAG: Final = "--worker-of-supervisor"  # internal: a process of `--workers N`
_TIMEOUT_FLAGS: Final = (
    (
        "--client-header-timeout",
        60.0,
        "close a client that takes longer to send a request head, "
        "or stays idle this long between requests",
    ),
    ("--client-body-timeout", 60.0, "answer 408 when the request body stalls this long"),
    (
        "--upstream-connect-timeout",
        10.0,
        "give up on an endpoint that does not accept a "
        "connection within this time, and try the next",
    ),
    (
        "--upstream-read-timeout",
        60.0,
        "answer 504 (or cut the response) when the upstream "
        "sends nothing for this long; a route's own timeouts bound the whole exchange",
    ),
)


def _proxy(args: argparse.Namespace) -> int:
    """``coxswain proxy``: one process, or with ``--workers N`` a supervisor of N, which first
    checks what it can so that a configuration error is reported once
    (coxswain/shell/workers.py)."""
    import trio  # only the proxy needs it; the offline commands start faster without

    from coxswain.shell.discovery_client import DiscoveryRefusedError
    from coxswain.shell.listen import ListenError
    from coxswain.shell.logs import install_logging
    from coxswain.shell.proxy_process import check_snapshot_file, run_until_terminated
    from coxswain.shell.snapshot_file import SnapshotLoadError
    from coxswain.shell.workers import supervise

    scope = parse_scope("shared" if args.shared else args.gateway)
    if scope is None:
        print("coxswain proxy: --gateway takes NS/NAME", file=sys.stderr)
        return EXIT_UNREADABLE
    if args.workers < 1:
        print("coxswain proxy: --workers takes a number from 1", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        feed = _feed(args, scope)
    except (OSError, ValueError) as err:
        print(f"coxswain proxy: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    config = _proxy_config(args, reuse_port=args.worker_of_supervisor)
    install_logging(json_lines=json_lines(args))
    if args.workers > 1 and not args.worker_of_supervisor:
        supervised: list[int] = []

        async def supervisor() -> None:
            if args.snapshot is not None:
                await trio.to_thread.run_sync(check_snapshot_file, args.snapshot, scope, config)
            supervised.append(
                await supervise(
                    _worker_command(args),
                    args.workers,
                    drain_timeout=args.drain_timeout,
                    admin_bind=args.bind,
                    admin_port=args.admin_port or None,
                )
            )

        code = run_until_done("proxy", supervisor, (SnapshotLoadError, ListenError))
        return code or next(iter(supervised), EXIT_OK)
    return run_until_done(
        "proxy",
        lambda: run_until_terminated(
            feed,
            scope,
            config,
            admin_port=args.admin_port or None,
            drain_timeout=args.drain_timeout,
            supervised=args.worker_of_supervisor,
        ),
        (SnapshotLoadError, ListenError, DiscoveryRefusedError),
    )


def _proxy_config(args: argparse.Namespace, *, reuse_port: bool) -> ProxyConfig:
    """The proxy's settings from the listener flags (:func:`_add_listener_flags`)."""
    from coxswain.shell.proxy import ProxyConfig
    from coxswain.shell.upstream import Timeouts

    return ProxyConfig(
        bind=args.bind,
        ingress_http_port=args.ingress_http_port,
        ingress_https_port=args.ingress_https_port,
        max_body_bytes=args.max_body_bytes,
        reuse_port=reuse_port,
        access_log=True,
        header_timeout=args.client_header_timeout,
        timeouts=Timeouts(
            connect=args.upstream_connect_timeout,
            read=args.upstream_read_timeout,
            client_body=args.client_body_timeout,
        ),
    )


def _feed(args: argparse.Namespace, scope: Scope) -> Feed:
    """Where the proxy's snapshots come from: ``--snapshot`` or ``--discovery``.

    Raises:
        ValueError: discovery without credentials (and without ``--insecure-discovery``).
        OSError: a credential file cannot be read.
    """
    from coxswain.shell.discovery_tls import CredentialFiles
    from coxswain.shell.proxy_process import discovery_feed, file_feed
    from coxswain.shell.workers import WORKER_SLOT_ENV

    if args.snapshot is not None:
        return file_feed(args.snapshot, scope)
    files = (args.tls_cert, args.tls_key, args.tls_ca)
    if args.insecure_discovery:
        credentials = None
    elif None in files:
        raise ValueError(
            "--discovery needs --tls-cert, --tls-key and --tls-ca (or --insecure-discovery)"
        )
    else:
        cert, key, ca = (Path(name) for name in files)
        credentials = CredentialFiles(cert, key, ca)  # read again at each connection attempt
    node_id = args.node_id
    if args.worker_of_supervisor and (slot := os.environ.get(WORKER_SLOT_ENV)):
        node_id = f"{node_id}-{slot}"  # one stream per worker, each its own fleet entry
    return discovery_feed(args.discovery, scope, node_id=node_id, credentials=credentials)


def _cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask, which container CPU sets and
    ``taskset`` narrow), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _worker_command(args: argparse.Namespace) -> list[str]:
    """The command line of one worker: this command's options, one process, reuse-port."""
    command = [sys.executable, "-m", "coxswain", "proxy"]
    command += ["--shared"] if args.shared else ["--gateway", args.gateway]
    if args.snapshot is not None:
        command += ["--snapshot", args.snapshot]
    else:
        command += ["--discovery", args.discovery, "--node-id", args.node_id]
        command += ["--insecure-discovery"] if args.insecure_discovery else []
        for flag, value in (
            ("--tls-cert", args.tls_cert),
            ("--tls-key", args.tls_key),
            ("--tls-ca", args.tls_ca),
        ):
            if value is not None:
                command += [flag, value]
    command += ["--bind", args.bind]
    command += ["--ingress-http-port", str(args.ingress_http_port)]
    command += ["--ingress-https-port", str(args.ingress_https_port)]
    command += ["--admin-port", str(args.admin_port), "--drain-timeout", str(args.drain_timeout)]
    command += ["--log-format", args.log_format]
    if args.max_body_bytes is not None:
        command += ["--max-body-bytes", str(args.max_body_bytes)]
    for flag, _, _ in _TIMEOUT_FLAGS:
        command += [flag, str(getattr(args, flag[2:].replace("-", "_")))]
    return [*command, _WORKER_FLAG]


# --- serve --------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    """``coxswain serve`` (:mod:`coxswain.shell.serve`)."""
    from coxswain.shell.logs import install_logging
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
        proxy=_proxy_config(args, reuse_port=False),
        admin_port=args.admin_port or None,
        drain_timeout=args.drain_timeout,
        discovery=None
        if args.discovery_port is None
        else DiscoverySettings(
            host=args.bind, port=args.discovery_port, certificates=args.issue_certs
        ),
    )
    install_logging(json_lines=json_lines(args))
    return run_until_done("serve", lambda: run_serve(settings), (LoadError, OSError, ValueError))


# --- controller ---------------------------------------------------------------------------------


def _controller(args: argparse.Namespace) -> int:
    """``coxswain controller`` (:mod:`coxswain.cli_controller`)."""
    return cli_controller.run(args)
