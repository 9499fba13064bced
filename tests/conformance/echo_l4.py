"""Local stand-ins for the conformance suite's layer-4 backends.

Upstream's TCPRoute, TLSRoute and UDPRoute tests reach three kinds of pods
(``conformance/echo-basic`` at v1.6.1, and the base manifests' ``coredns``):

- ``echo-basic`` with ``TCP_ECHO_SERVER`` (``tcpserver``): on connect it sends
  ``WelcomeMessage``, then answers each line: ``PING`` with ``PONG``, ``IS_TLS`` with ``true``
  or ``false``, ``TEST`` with a JSON line (``namespace``, ``service``, ``pod``, ``isTLS`` and,
  behind TLS, ``tls.serverName``, the SNI it received). It serves plain TCP on ``TCP_PORT``
  (3000) and, with ``TLS_SERVER_CERT``, TLS on ``TLS_PORT`` (8443): here two echoes, the TLS
  one named ``<deployment>#tls`` (:data:`TLS_SUFFIX`);
- ``echo-basic`` with ``UDP_ECHO_SERVER`` (``udpechoserver``): each datagram answered with the
  JSON ``request`` (the payload), ``namespace``, ``service``, ``pod``;
- ``coredns``: the test only needs an answer to its DNS query (``dns.Exchange`` succeeding),
  so the stand-in answers every query with its own question and ``NXDOMAIN`` (RFC 1035 §4.1.1:
  the query's ID, QR set, RCODE 3).

Pod names are :func:`.echo.pod_name`'s, so the prefix checks and weight tests find the
Deployment as they do for the HTTP echo.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Final

import trio

from tests.conformance.echo import pod_name, serve_conformance_echo
from tests.conformance.echo_grpc import serve_grpc_echo

__all__ = ["TLS_SUFFIX", "WELCOME", "Echo", "serve_scenario_echo"]

WELCOME: Final = b"Gateway API Test TCP Server\n"  # tcpserver.WelcomeMessage
TLS_SUFFIX: Final = "#tls"
_MAX_LINE: Final = 4096
# The SNI of a TLS connection's handshake: set by the SNI callback, which runs inside the task
# that handshakes, the task serving that connection.
_sni: contextvars.ContextVar[str] = contextvars.ContextVar("tcp_echo_sni", default="")


@dataclass(frozen=True, slots=True)
class Echo:
    """What stands in for a Deployment's pods: ``kind`` ``http`` (:mod:`.echo`), ``grpc``
    (:mod:`.echo_grpc`), ``tcp``, ``udp`` or ``dns``; ``service`` the ``SERVICE_NAME`` they
    report."""

    kind: str
    service: str = ""


async def serve_scenario_echo(
    echoes: dict[str, Echo],
    key: str,
    received: list[dict[str, Any]],
    *,
    tls: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The echo ``key`` of a scenario, of the kind ``echoes`` gives it (the harness's echo
    shape once ``echoes`` is bound)."""
    echo = echoes[key]
    if echo.kind == "tcp":
        await _serve_tcp_echo(key, echo.service, tls, task_status)
    elif echo.kind == "udp":
        await _serve_udp_echo(key, echo.service, task_status)
    elif echo.kind == "dns":
        await _serve_dns(task_status)
    elif echo.kind == "grpc":
        await serve_grpc_echo(key, task_status)
    else:
        await serve_conformance_echo(key, received, tls=tls, task_status=task_status)


def _context(key: str, service: str) -> dict[str, str]:
    namespace, deployment = key.removesuffix(TLS_SUFFIX).split("/")
    return {
        "namespace": namespace,
        "ingress": "",
        "service": service,
        "pod": pod_name(deployment, namespace),
    }


def _note_sni(_connection: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
    _sni.set(name or "")


async def _serve_tcp_echo(
    key: str, service: str, tls: ssl.SSLContext | None, task_status: trio.TaskStatus[int]
) -> None:
    """``tcpserver`` for Deployment ``key``; behind TLS with ``tls``."""
    if tls is not None:
        tls.sni_callback = _note_sni
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])

    async def handle(stream: trio.SocketStream) -> None:
        client: trio.abc.Stream = stream
        assertions: dict[str, Any] = {**_context(key, service), "isTLS": tls is not None}
        with contextlib.suppress(trio.BrokenResourceError, ssl.SSLError):
            async with stream:
                if tls is not None:
                    secured = trio.SSLStream(stream, tls, server_side=True)
                    await secured.do_handshake()
                    assertions["tls"] = {"serverName": _sni.get()}
                    client = secured
                await client.send_all(WELCOME)
                await _answer_lines(client, assertions)

    await trio.serve_listeners(handle, listeners)


async def _answer_lines(stream: trio.abc.Stream, assertions: dict[str, Any]) -> None:
    buffer = bytearray()
    while data := await stream.receive_some(_MAX_LINE):
        buffer += data
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer = bytearray(rest)
            if line == b"TEST":
                await stream.send_all(json.dumps(assertions).encode() + b"\n")
            elif line == b"IS_TLS":
                await stream.send_all(b"true\n" if "tls" in assertions else b"false\n")
            elif line == b"PING":
                await stream.send_all(b"PONG\n")
        if len(buffer) > _MAX_LINE:
            return


async def _udp_socket(task_status: trio.TaskStatus[int]) -> trio.socket.SocketType:
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    await sock.bind(("127.0.0.1", 0))
    task_status.started(sock.getsockname()[1])
    return sock


async def _serve_udp_echo(key: str, service: str, task_status: trio.TaskStatus[int]) -> None:
    """``udpechoserver`` for Deployment ``key``."""
    context = _context(key, service)
    with await _udp_socket(task_status) as sock:
        while True:
            data, address = await sock.recvfrom(1024)
            answer = {"request": data.decode(errors="replace"), **context}
            await sock.sendto(json.dumps(answer).encode(), address)


async def _serve_dns(task_status: trio.TaskStatus[int]) -> None:
    """A name server that answers every query NXDOMAIN (see the module docstring)."""
    with await _udp_socket(task_status) as sock:
        while True:
            data, address = await sock.recvfrom(512)
            if len(data) < 12:
                continue
            flags = int.from_bytes(data[2:4]) | 0x8000  # QR: a response
            flags = (flags & ~0x000F) | 0x0003  # RCODE 3, NXDOMAIN
            answer = data[:2] + flags.to_bytes(2) + data[4:6] + bytes(6) + data[12:]
            await sock.sendto(answer, address)
