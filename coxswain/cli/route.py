"""``coxswain route``: its flags and its run, offline: explain the decision a proxy serving a
snapshot would take for one request."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from coxswain.cli.listeners import add_ingress_ports
from coxswain.cli.run import EXIT_OK, EXIT_UNREADABLE
from coxswain.cli.types import HelpFormatter, port
from coxswain.compile.snapshot_json import SnapshotFormatError, snapshot_from_data
from coxswain.route import RequestHead, build_table, select
from coxswain.route.explain import explain

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser"]

_EPILOG = """\
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


def add_parser(commands: Any) -> None:
    """Add ``route`` to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "route",
        help="explain which rule and backend a request would take",
        description="Explain the routing decision for one request against a snapshot.",
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--snapshot", required=True, metavar="FILE", help="snapshot JSON")
    parser.add_argument(
        "--port", required=True, type=port(lowest=1), help="the port the request arrives on"
    )
    parser.add_argument("--sni", help="TLS server name (default: the URL's host for https)")
    parser.add_argument(
        "-H",
        "--header",
        dest="headers",
        action="append",
        default=[],
        metavar="'K: V'",
        help="a request header (repeatable)",
    )
    parser.add_argument(
        "-o",
        "--output",
        default="text",
        choices=["text", "json"],
        help="text for people, or the decision as JSON",
    )
    add_ingress_ports(parser)
    parser.add_argument("method", metavar="METHOD", help="the request method")
    parser.add_argument("url", metavar="URL", help="an http:// or https:// URL")
    parser.set_defaults(handler=_route)


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
        if (tls := backend["tls"]) is not None:
            lines.append(f"tls:      {_tls_line(tls)}")
    if (redirect := data["redirect"]) is not None:
        lines.append(f"location: {redirect['location']}")
    lines.append(f"upstream: {data['host']} {data['path']}")
    lines.extend(f"cors:     {name}: {value}" for name, value in data["cors_headers"].items())
    return "\n".join(lines) + "\n"


def _tls_line(tls: dict[str, Any]) -> str:
    """A backend's TLS (BackendTLSPolicy) in one line: SNI, trust, names, client certificate."""
    if tls["problem"] is not None:
        return str(tls["problem"])
    names = ", ".join(tls["subject_alt_names"]) or tls["server_name"]
    client = tls["client_certificate"] or "none"
    return (
        f"SNI {tls['server_name']}, trusting the {tls['trust'].replace('_', ' ')}, "
        f"verifying {names}, client certificate {client} ({tls['policy']})"
    )
