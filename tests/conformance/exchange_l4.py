"""The conformance suite's layer-4 clients, against the proxy's port of a listener.

As upstream's helpers do (v1.6.1): ``conformance/utils/tcp`` (``WaitForValidTCPResponse``: the
welcome line, ``PING``, ``IS_TLS``, ``TEST``; ``EchoSendOnce``: the welcome then ``TEST``, for
the pod), ``conformance/utils/tls`` (``MakeTLSConnectionAndExpectEventuallyConnectionRejection``:
a TLS handshake with a name and no trusted CA, rejected when the connection ends or resets
during it), ``conformance/utils/udp`` (``ExpectEchoResponseFromBackend``: one datagram, its
JSON answer) and the UDPRoute test's DNS query (``dns.Exchange``: an answer with the query's
ID). One attempt each: the proxy has applied the snapshot before a step runs, where upstream
retries until its data plane converges.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
from typing import TYPE_CHECKING, Any, Final

from tests.conformance.echo_l4 import WELCOME

if TYPE_CHECKING:
    import trustme

__all__ = ["dns_answered", "tcp_checks", "tcp_pod", "tls_rejected", "udp_echo"]

TIMEOUT: Final = 10.0  # upstream's RequestTimeout
_PROBE: Final = b"gateway-api-conformance-udp-echo"


class _Lines:
    """Lines read off a stream socket, as Go's ``bufio.Reader.ReadString('\\n')``."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def line(self) -> bytes:
        while b"\n" not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError(f"the connection ended after {self.buffer!r}")
            self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"

    def ask(self, command: bytes) -> bytes:
        self.sock.sendall(command + b"\n")
        return self.line()


def _connect(port: int, sni: str | None, trust: trustme.CA | None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    if sni is None:
        return sock
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if trust is not None:
        trust.configure_trust(context)
    return context.wrap_socket(sock, server_hostname=sni)


def tcp_checks(
    port: int,
    expected: dict[str, Any],
    *,
    sni: str | None = None,
    trust: trustme.CA | None = None,
) -> str | None:
    """``WaitForValidTCPResponse`` once, over TLS with ``sni`` (the chain verified against
    ``trust``): None, or what was wrong. ``expected``: ``backend`` (the pod's prefix),
    ``namespace``, ``backend_is_tls``, ``hostname`` (the SNI the backend saw, when set)."""
    try:
        with _connect(port, sni, trust) as sock:
            lines = _Lines(sock)
            if (welcome := lines.line()) != WELCOME:
                return f"welcome {welcome!r}"
            if (pong := lines.ask(b"PING")) != b"PONG\n":
                return f"PING answered {pong!r}"
            is_tls = lines.ask(b"IS_TLS").rstrip(b"\n").decode()
            payload = json.loads(lines.ask(b"TEST"))
    except (OSError, ValueError) as err:
        return f"the exchange failed: {err!r}"
    problems = []
    if is_tls != str(bool(expected.get("backend_is_tls"))).lower():
        problems.append(f"IS_TLS {is_tls}")
    if payload.get("namespace") != expected["namespace"]:
        problems.append(f"namespace {payload.get('namespace')!r}")
    if not str(payload.get("pod", "")).startswith(f"{expected['backend']}-"):
        problems.append(f"pod {payload.get('pod')!r}")
    hostname = expected.get("hostname", "")
    if hostname and (payload.get("tls") or {}).get("serverName") != hostname:
        problems.append(f"SNI at the backend {payload.get('tls')!r}")
    return "; ".join(problems) or None


def tcp_pod(port: int) -> str:
    """``EchoSendOnce``: the pod that answered ``TEST`` on a new connection."""
    with _connect(port, None, None) as sock:
        lines = _Lines(sock)
        if (welcome := lines.line()) != WELCOME:
            raise ConnectionError(f"welcome {welcome!r}")
        return str(json.loads(lines.ask(b"TEST"))["pod"])


def tls_rejected(port: int, sni: str) -> str | None:
    """None when a TLS handshake naming ``sni`` ends in the connection's EOF or reset."""
    try:
        with _connect(port, sni, None):
            return "the handshake completed"
    except (ssl.SSLEOFError, ConnectionResetError, ConnectionAbortedError):
        return None
    except ssl.SSLZeroReturnError:
        return None
    except OSError as err:
        return f"not a rejection: {err!r}"


def udp_echo(port: int) -> dict[str, Any] | str:
    """The JSON answer of the UDP echo behind the listener, or what went wrong."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(("127.0.0.1", port))
        try:
            sock.send(_PROBE)
            answer: dict[str, Any] = json.loads(sock.recv(1024))
        except (OSError, ValueError) as err:
            return f"no echo: {err!r}"
    if answer.get("request") != _PROBE.decode():
        return f"the echo got {answer.get('request')!r}"
    return answer


def dns_answered(port: int, name: str) -> str | None:
    """None when a query for the A record of ``name`` is answered (RFC 1035 §4.1)."""
    ident = os.urandom(2)
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split("."))
    query = ident + b"\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + question + b"\x00\x00\x01\x00\x01"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(("127.0.0.1", port))
        try:
            sock.send(query)
            answer = sock.recv(512)
        except OSError as err:
            return f"no answer: {err!r}"
    if answer[:2] != ident or not answer[2] & 0x80:
        return f"not an answer to the query: {answer[:4]!r}"
    return None
