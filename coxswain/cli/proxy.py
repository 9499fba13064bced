"""``coxswain proxy``: its flags and its run: one proxy process, or a supervisor of ``--workers N``
(the process itself is :mod:`coxswain.shell.proxy`)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from coxswain.cli.listeners import TIMEOUT_FLAGS, add_listener_flags, proxy_config
from coxswain.cli.run import EXIT_OK, EXIT_UNREADABLE, run_until_done
from coxswain.cli.types import HelpFormatter, gateway, json_lines
from coxswain.compile.scope import parse_scope

if TYPE_CHECKING:
    from coxswain.compile.scope import Scope
    from coxswain.shell.proxy import Feed

__all__ = ["add_parser"]

_EPILOG = """\
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

_WORKER_FLAG: Final = "--worker-of-supervisor"  # internal: a process of `--workers N`


def add_parser(commands: Any) -> None:
    """Add ``proxy`` to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "proxy",
        help="serve traffic: a reverse proxy for one snapshot",
        description="Run the proxy data plane for the shared pool or one dedicated Gateway.",
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
    )
    _add_source_flags(parser)
    add_listener_flags(parser)
    parser.add_argument(
        "--workers",
        type=int,
        default=_cpu_count(),
        metavar="N",
        help="worker processes sharing the ports through SO_REUSEPORT, restarted if they die; "
        "1 serves in this process (default: the CPUs this process may use, here %(default)s)",
    )
    parser.add_argument(_WORKER_FLAG, action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=_proxy)


def _add_source_flags(parser: argparse.ArgumentParser) -> None:
    """What the proxy serves (the shared pool or one Gateway) and where its snapshots come from
    (a file, or discovery with this proxy's identity)."""
    served = parser.add_mutually_exclusive_group(required=True)
    served.add_argument("--shared", action="store_true", help="serve the shared pool")
    served.add_argument(
        "--gateway", type=gateway, metavar="NAMESPACE/NAME", help="serve one dedicated Gateway"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", metavar="FILE", help="snapshot JSON, re-read on change")
    source.add_argument(
        "--discovery",
        metavar="HOST:PORT",
        help="the controller's discovery server (gRPC over mutual TLS)",
    )
    parser.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="discovery: this proxy's certificate (the three files are read again at each "
        "connection, so a renewed certificate needs no restart)",
    )
    parser.add_argument("--tls-key", metavar="FILE", help="discovery: its private key")
    parser.add_argument("--tls-ca", metavar="FILE", help="discovery: the CA of the server")
    parser.add_argument(
        "--insecure-discovery",
        action="store_true",
        help="discovery in plaintext, no identity (development only)",
    )
    parser.add_argument(
        "--node-id",
        default=os.environ.get("POD_NAME") or socket.gethostname(),
        help="this proxy's name in the controller's fleet (default: $POD_NAME or the host name)",
    )


def _proxy(args: argparse.Namespace) -> int:
    """``coxswain proxy``: one process, or with ``--workers N`` a supervisor of N, which first
    checks what it can so that a configuration error is reported once
    (coxswain/shell/dataplane/workers.py)."""
    from coxswain.shell.dataplane.listen import ListenError
    from coxswain.shell.dataplane.snapshot_file import SnapshotLoadError
    from coxswain.shell.dataplane.workers import supervise
    from coxswain.shell.discovery.client import DiscoveryRefusedError
    from coxswain.shell.logs import install_logging
    from coxswain.shell.offload import offload, share_the_lock
    from coxswain.shell.proxy import check_snapshot_file, run_until_terminated

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
    config = proxy_config(args, reuse_port=args.worker_of_supervisor)
    install_logging(json_lines=json_lines(args))
    if args.workers > 1 and not args.worker_of_supervisor:
        supervised: list[int] = []

        async def supervisor() -> None:
            if args.snapshot is not None:
                await offload(check_snapshot_file, args.snapshot, scope, config)
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
    share_the_lock()
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


def _feed(args: argparse.Namespace, scope: Scope) -> Feed:
    """Where the proxy's snapshots come from: ``--snapshot`` or ``--discovery``.

    Raises:
        ValueError: discovery without credentials (and without ``--insecure-discovery``).
        OSError: a credential file cannot be read.
    """
    from coxswain.shell.dataplane.workers import WORKER_SLOT_ENV
    from coxswain.shell.discovery.tls import CredentialFiles
    from coxswain.shell.proxy import discovery_feed, file_feed

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
    command += ["--max-connections", str(args.max_connections)]
    if args.max_body_bytes is not None:
        command += ["--max-body-bytes", str(args.max_body_bytes)]
    if args.trusted_proxies:
        command += ["--trusted-proxies", ",".join(str(n) for n in args.trusted_proxies)]
    for flag, _, _ in TIMEOUT_FLAGS:
        command += [flag, str(getattr(args, flag[2:].replace("-", "_")))]
    return [*command, _WORKER_FLAG]
