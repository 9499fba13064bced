"""The flags of a proxy's listeners and requests, shared by ``proxy`` and ``serve`` (``route``
takes the Ingress ports too), and the proxy settings they describe."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from coxswain.cli.types import add_log_format, count, networks, port, seconds
from coxswain.shell.dataplane.connection_limits import DEFAULT_MAX_CONNECTIONS

if TYPE_CHECKING:
    import argparse

    from coxswain.shell.dataplane.server import ProxyConfig

__all__ = [
    "TIMEOUT_FLAGS",
    "add_ingress_ports",
    "add_listener_flags",
    "proxy_config",
]

TIMEOUT_FLAGS: Final = (
    (
        "--client-header-timeout",
        60.0,
        "close a client that takes longer to send a request head, "
        "or stays idle this long between requests",
    ),
    ("--client-body-timeout", 60.0, "answer 408 when the request body stalls this long"),
    (
        "--client-send-timeout",
        60.0,
        "close a client that takes no response bytes for this long (a slow reader), "
        "and its upstream connection",
    ),
    ("--tls-handshake-timeout", 10.0, "close a client whose TLS handshake takes longer"),
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
    (
        "--upstream-send-timeout",
        60.0,
        "answer 504 (or cut the response) when the upstream takes no request bytes for this long",
    ),
    (
        "--mirror-timeout",
        30.0,
        "drop a mirrored request (RequestMirror) still running after this long",
    ),
    (
        "--lingering-timeout",
        5.0,
        "after an answer that closes a connection while the client may still be sending, "
        "read and drop what it sends for at most this long (so it can read the answer)",
    ),
    (
        "--tunnel-idle-timeout",
        3600.0,
        "close a WebSocket tunnel when no byte crossed it either way for this long",
    ),
    (
        "--stream-idle-timeout",
        600.0,
        "close a TLS or TCP listener's connection (TLSRoute, TCPRoute) when no byte crossed it "
        "either way for this long",
    ),
    (
        "--stream-drain-timeout",
        30.0,
        "close a layer-4 connection or UDP session this long after a snapshot removed its route",
    ),
    (
        "--udp-idle-timeout",
        60.0,
        "end a UDP session (UDPRoute) when no datagram crossed it either way for this long",
    ),
)


def add_listener_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of a proxy's listeners and requests, shared by ``proxy`` and ``serve``."""
    parser.add_argument("--bind", default="0.0.0.0", metavar="ADDR", help="address to listen on")
    add_ingress_ports(parser)
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
        "--max-connections",
        type=count(lowest=1),
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="client connections per process; at the limit the one idle longest is closed for "
        "room (lowered to what the open-file limit allows)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=count(lowest=0),
        default=None,
        metavar="N",
        help="answer 413 to a request body over N bytes (default: no limit)",
    )
    parser.add_argument(
        "--trusted-proxies",
        type=networks,
        default=(),
        metavar="CIDR[,CIDR]",
        help="peers whose X-Real-IP, Forwarded and X-Forwarded-* are kept (X-Forwarded-For "
        "appended to); from any other peer they are dropped and X-Real-IP and X-Forwarded-For "
        "are its address (default: none)",
    )
    parser.add_argument(
        "--pass-server-header",
        action="store_true",
        help="relay the backend's Server header instead of replacing it with "
        "'Server: coxswain' (which is then added only where the backend sent none)",
    )
    parser.add_argument(
        "--udp-max-sessions",
        type=count(lowest=1),
        default=16_384,
        metavar="N",
        help="UDP sessions per listener and process; a new client at the limit ends the least "
        "recently active session",
    )
    for flag, default, meaning in TIMEOUT_FLAGS:
        parser.add_argument(flag, type=seconds, default=default, metavar="SECONDS", help=meaning)
    add_log_format(parser)


def add_ingress_ports(parser: argparse.ArgumentParser) -> None:
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


def proxy_config(args: argparse.Namespace, *, reuse_port: bool) -> ProxyConfig:
    """The proxy's settings from the listener flags (:func:`add_listener_flags`)."""
    from coxswain.shell.dataplane.server import ProxyConfig
    from coxswain.shell.dataplane.streams import StreamSettings
    from coxswain.shell.dataplane.streams.udp import UdpSettings
    from coxswain.shell.dataplane.upstream import Timeouts

    return ProxyConfig(
        bind=args.bind,
        ingress_http_port=args.ingress_http_port,
        ingress_https_port=args.ingress_https_port,
        max_body_bytes=args.max_body_bytes,
        reuse_port=reuse_port,
        access_log=True,
        trusted_proxies=args.trusted_proxies,
        pass_server=args.pass_server_header,
        header_timeout=args.client_header_timeout,
        handshake_timeout=args.tls_handshake_timeout,
        max_connections=args.max_connections,
        timeouts=Timeouts(
            connect=args.upstream_connect_timeout,
            read=args.upstream_read_timeout,
            client_body=args.client_body_timeout,
            send=args.upstream_send_timeout,
            client_send=args.client_send_timeout,
            tunnel_idle=args.tunnel_idle_timeout,
            mirror=args.mirror_timeout,
            linger=args.lingering_timeout,
        ),
        streams=StreamSettings(
            max_connections=args.max_connections,
            hello_timeout=args.tls_handshake_timeout,
            connect_timeout=args.upstream_connect_timeout,
            idle_timeout=args.stream_idle_timeout,
            drain=args.stream_drain_timeout,
            udp=UdpSettings(idle_timeout=args.udp_idle_timeout, max_sessions=args.udp_max_sessions),
        ),
    )
