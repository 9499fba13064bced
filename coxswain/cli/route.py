"""``coxswain route``: its flags and its run, offline: explain the decision a proxy serving a
snapshot would take for one request, or for one gRPC call (``--grpc``)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from coxswain.cli.listeners import add_ingress_ports
from coxswain.cli.route_stream import explain_stream, print_stream, stream_protocol
from coxswain.cli.run import EXIT_OK, EXIT_UNREADABLE
from coxswain.cli.types import HelpFormatter, port
from coxswain.compile.snapshot_json import SnapshotFormatError, snapshot_from_data
from coxswain.http2.request import CONNECT_REFUSED, request_head
from coxswain.route import RequestHead, build_table, select
from coxswain.route.explain import explain
from coxswain.route.grpc_status import GrpcCode

if TYPE_CHECKING:
    import argparse
    from urllib.parse import SplitResult

__all__ = ["add_parser"]

_EPILOG = """\
Explains the decision a proxy serving SNAPSHOT (the JSON of `coxswain compile`) would take for
one request arriving on PORT. The URL's host is the Host header unless -H 'Host: ...' overrides
it; --sni defaults to that host for https:// URLs. PORT is matched against the listeners'
target ports (listener_health[].target_port) and the Ingress ports (--ingress-http-port,
--ingress-https-port).

With --http2 the request comes over HTTP/2: its fields are checked as the proxy checks a
stream's (names in lower case, no connection-specific field; a malformed request is reset),
the Host is :authority and several cookies are joined. With --grpc SERVICE/METHOD the request
is a gRPC call (GRPCRoute, GEP-1016) over HTTP/2: POST /SERVICE/METHOD with content-type
application/grpc to the URL's host, which is then the URL alone; where the proxy would answer
the call itself, the gRPC status it sends is shown.

When PORT is a TLS, TCP or UDP listener's (TLSRoute, TCPRoute, UDPRoute), no request is given:
the connection's route and backends are explained, for TLS by the server name --sni.

examples:
  coxswain compile -f examples/ > snapshot.json
  coxswain route --snapshot snapshot.json --port 80 GET http://demo.example.com/api/users
  coxswain route --snapshot snapshot.json --port 443 -o json GET https://demo.example.com/
  coxswain route --snapshot snapshot.json --port 80 --grpc helloworld.Greeter/SayHello \\
      http://grpc.example.com
  coxswain route --snapshot snapshot.json --port 30002 --sni db.example.com
"""
_USAGE = (
    "%(prog)s --snapshot FILE --port PORT [--sni NAME] [-H 'K: V']... [-o {text,json}]\n"
    "       [--http2] [--ingress-http-port PORT] [--ingress-https-port PORT]\n"
    "       (METHOD URL | --grpc SERVICE/METHOD URL | nothing, for a TLS, TCP or UDP port)"
)
_GRPC_HEADERS: Final = (("Content-Type", "application/grpc"), ("TE", "trailers"))
"""What every gRPC call carries (gRPC over HTTP/2, "Requests")."""


def add_parser(commands: Any) -> None:
    """Add ``route`` to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "route",
        help="explain which rule and backend a request would take",
        description="Explain the routing decision for one request against a snapshot.",
        epilog=_EPILOG,
        usage=_USAGE,
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
    parser.add_argument(
        "--grpc",
        metavar="SERVICE/METHOD",
        help="explain a gRPC call of this method (then give the URL alone); over HTTP/2",
    )
    parser.add_argument(
        "--http2",
        action="store_true",
        help="the request comes over HTTP/2: its fields are checked as the proxy checks a "
        "stream's (a malformed one is reset)",
    )
    add_ingress_ports(parser)
    parser.add_argument(
        "request",
        nargs="*",
        metavar="METHOD URL",
        help="the request method and an http:// or https:// URL; with --grpc, the URL alone",
    )
    parser.set_defaults(handler=_route)


def _route(args: argparse.Namespace) -> int:
    try:
        with open(args.snapshot, encoding="utf-8") as file:
            snapshot = snapshot_from_data(json.load(file))
    except (OSError, ValueError) as err:  # SnapshotFormatError and JSON errors are ValueErrors
        kind = "is not a snapshot" if isinstance(err, SnapshotFormatError) else "cannot be read"
        print(f"coxswain route: {args.snapshot} {kind}: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    protocol = stream_protocol(snapshot, args.port)
    if protocol is not None:
        if args.request:
            print(
                f"coxswain route: port {args.port} is a {protocol} listener's: give no request",
                file=sys.stderr,
            )
            return EXIT_UNREADABLE
        print_stream(explain_stream(snapshot, args.port, protocol, args.sni), args.output)
        return EXIT_OK
    wanted = _wanted(args)
    if isinstance(wanted, str):
        print(f"coxswain route: {wanted}", file=sys.stderr)
        return EXIT_UNREADABLE
    method, url, target, headers = wanted
    host = next((v for n, v in headers if n.lower() == "host"), url.netloc.rpartition("@")[2])
    if not any(n.lower() == "host" for n, _ in headers):
        headers.insert(0, ("Host", host))
    protocol = "HTTP/2" if args.http2 or args.grpc else "HTTP/1.1"
    if protocol == "HTTP/2":
        checked = _as_stream(method, url.scheme, host, target, headers)
        if isinstance(checked, str):
            return _reset(checked, args.output)
        headers = checked
    tls = url.scheme == "https"
    head = RequestHead(
        port=args.port,
        method=method,
        target=target,
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
    data = {"protocol": protocol, **explain(table, head, headers, decision)}
    if args.output == "json":
        sys.stdout.write(json.dumps(data, sort_keys=True, indent=2) + "\n")
    else:
        sys.stdout.write(_route_text(data))
    return EXIT_OK


def _wanted(
    args: argparse.Namespace,
) -> tuple[str, SplitResult, str, list[tuple[str, str]]] | str:
    """The request the flags describe: method, URL, target and header fields; or why there is
    none."""
    request: list[str] = args.request
    if len(request) != (1 if args.grpc else 2):
        return "give METHOD URL, or --grpc SERVICE/METHOD and the URL alone"
    url = urlsplit(request[-1])
    if url.scheme not in ("http", "https") or not url.hostname:
        return f"{request[-1]!r} is not an http:// or https:// URL"
    headers: list[tuple[str, str]] = []
    for line in args.headers:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            return f"-H {line!r} is not 'Name: value'"
        headers.append((name.strip(), value.strip()))
    if not args.grpc:
        target = (url.path or "/") + (f"?{url.query}" if url.query else "")
        return request[0].upper(), url, target, headers
    service, slash, name = args.grpc.partition("/")
    if not (service and slash and name) or "/" in name:
        return f"--grpc {args.grpc!r} is not SERVICE/METHOD"
    if url.path not in ("", "/") or url.query:
        return f"{request[-1]!r}: with --grpc the URL names no path or query"
    given = {n.lower() for n, _ in headers}
    headers.extend((n, v) for n, v in _GRPC_HEADERS if n.lower() not in given)
    return "POST", url, f"/{service}/{name}", headers


def _as_stream(
    method: str, scheme: str, host: str, target: str, headers: list[tuple[str, str]]
) -> list[tuple[str, str]] | str:
    """The fields as an HTTP/2 stream's header list gives them to routing (Host first, cookies
    joined), checked as the proxy checks them; or why the proxy resets the stream."""
    fields = [
        (b":method", method.encode("latin-1")),
        (b":scheme", scheme.encode("latin-1")),
        (b":authority", host.encode("latin-1", "replace")),
        (b":path", target.encode("latin-1", "replace")),
        *(
            (n.lower().encode("latin-1", "replace"), v.encode("latin-1", "replace"))
            for n, v in headers
            if n.lower() != "host"
        ),
    ]
    head = request_head(fields, ended=False)
    if isinstance(head, str):
        return head
    return [(n.decode("latin-1"), v.decode("latin-1")) for n, v in head.headers]


def _reset(reason: str, output: str) -> int:
    """A request the proxy does not route: a malformed stream it resets, or a CONNECT it answers
    501."""
    status = 501 if reason == CONNECT_REFUSED else None
    if output == "json":
        data = {"protocol": "HTTP/2", "status": status, "reset": status is None, "reason": reason}
        sys.stdout.write(json.dumps(data, sort_keys=True, indent=2) + "\n")
    else:
        what = f"{status}" if status else "stream reset (PROTOCOL_ERROR)"
        sys.stdout.write(f"protocol: HTTP/2\nstatus:   {what}\nreason:   {reason}\n")
    return EXIT_OK


def _route_text(data: dict[str, Any]) -> str:
    status = "forwarded" if data["status"] is None else str(data["status"])
    if (code := data["grpc_status"]) is not None:
        status = f"grpc-status {code} {GrpcCode(code).name} (for the proxy's {status})"
    lines = [
        f"protocol: {data['protocol']}",
        f"status:   {status}",
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
        if backend["protocol"] != "http1":
            state += f" {backend['protocol']}"
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
    sni = tls["server_name"] if tls["sni"] else "none"
    if tls["trust"] == "none":  # ingress-nginx's proxy-ssl-verify off
        return f"SNI {sni}, certificate unchecked, client certificate {client} ({tls['policy']})"
    return (
        f"SNI {sni}, trusting the {tls['trust'].replace('_', ' ')}, "
        f"verifying {names}, client certificate {client} ({tls['policy']})"
    )
