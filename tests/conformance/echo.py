"""A local stand-in for the conformance suite's echo backend (``echo-basic``).

The Go tests decide which backend answered, in which namespace, and what request it received
from the JSON body the echo returns: ``path`` (the request target as received), ``host``,
``method``, ``proto``, ``headers`` (canonical names, Host excluded, as Go's ``http.Header``),
``namespace``, ``pod``. The pod name is ``<deployment>-<replicaset>-<pod>``, so that both the
``pod`` prefix check (``CompareRoundTrip``) and the weight tests' backend name (the name less
its last two ``-`` parts) find the Deployment. Like ``echo-basic`` it also:

- sets the response headers named by ``X-Echo-Set-Header`` (``name:value,name:value``);
- answers ``/status/NNN`` with status NNN;
- waits for the Go duration in a ``delay`` query parameter before answering (timeouts);
- under ``/retry/``, fails the first ``succeedAfter`` requests of each ``uuid`` (after the Go
  duration ``delayRetry``) with ``responseCode``, or without one by resetting the connection;
- echoes WebSocket messages on ``/ws`` (RFC 6455), as its ``websocket.Handler`` does;
- behind TLS, reports ``tls``: the SNI it received (``serverName``) and the client's
  certificate (``peerCertificates``, PEM); Go reports the whole chain the client sent, Python's
  ``ssl`` (before 3.13) its first certificate only, which is the whole chain of every client
  certificate of the suite (:mod:`.certificates`).

Every request is also appended to ``received``, the local equivalent of the echo's log that
the mirror tests read (``Echoing back request made to <path>``).

A cleartext connection that opens with the HTTP/2 preface is served over HTTP/2 (prior
knowledge, RFC 9113 §3.3), as echo-basic's h2c port is: each request answered with the same
JSON, ``proto`` ``HTTP/2.0``. Every port of a Service reaches one echo here, so its
``kubernetes.io/h2c`` port and its HTTP/1.1 ports are the same socket.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import json
import re
import socket
import ssl
import struct
from typing import Any, Final, cast
from urllib.parse import parse_qsl, urlsplit

import h2.config
import h2.connection
import h2.events
import h11
import trio

__all__ = [
    "canonical_header", "encode_frame", "go_duration", "pod_name", "serve_conformance_echo",
    "take_frame",
]  # fmt: skip

HTTP_PORT: Final = "3000"  # echo-basic's HTTP_PORT default, reported as ``httpPort``
_WEBSOCKET_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 §1.3
_PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # RFC 9113 §3.4
_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# The SNI of a TLS connection's handshake: set by the SNI callback, which runs inside the task
# that handshakes, the task serving that connection.
_handshake_sni: contextvars.ContextVar[str] = contextvars.ContextVar("echo_sni", default="")


def pod_name(deployment: str, namespace: str) -> str:
    """The pod name the echo of ``deployment`` reports: Deployment, ReplicaSet hash, pod hash."""
    digest = hashlib.sha256(f"{namespace}/{deployment}".encode()).hexdigest()
    return f"{deployment}-{digest[:9]}-{digest[9:14]}"


def canonical_header(name: str) -> str:
    """Go's ``textproto.CanonicalMIMEHeaderKey``: each ``-``-separated word capitalised."""
    return "-".join(word[:1].upper() + word[1:].lower() for word in name.split("-"))


def go_duration(text: str) -> float:
    """Seconds in a Go duration (``1s``, ``500ms``, ``1m30s``)."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


def _echo_headers(request: h11.Request) -> dict[str, list[str]]:
    headers: dict[str, list[str]] = {}
    for raw_name, raw_value in request.headers:
        name = canonical_header(raw_name.decode())
        if name != "Host":
            headers.setdefault(name, []).append(raw_value.decode("latin-1"))
    return headers


def _set_headers(headers: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The response headers ``X-Echo-Set-Header`` asks for, values of one name joined."""
    wanted: dict[str, str] = {}
    for value in headers.get("X-Echo-Set-Header", []):
        for item in value.split(","):
            name, _, content = item.strip().partition(":")
            if name:
                wanted[name] = f"{wanted[name]},{content.strip()}" if name in wanted else content
    return list(wanted.items())


async def _answer(
    stream: trio.abc.Stream, conn: h11.Connection, status: int, headers: list[tuple[str, str]],
    body: bytes, *, head: bool,
) -> None:  # fmt: skip
    response = conn.send(
        h11.Response(status_code=status, headers=[*headers, ("content-length", str(len(body)))])
    )
    if not head:
        response += conn.send(h11.Data(data=body))
    await stream.send_all(response + conn.send(h11.EndOfMessage()))


async def _read_request(stream: trio.abc.Stream, conn: h11.Connection) -> h11.Request | None:
    """The next request with its body read (and dropped); None when the peer is done."""
    request: h11.Request | None = None
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(bytes(await stream.receive_some(65536)))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.EndOfMessage):
            return request
        elif not isinstance(event, h11.Data):
            return None


def _seen(
    target: str, host: str, method: str, proto: str, headers: dict[str, list[str]], *,
    deployment: str, namespace: str,
) -> dict[str, Any]:  # fmt: skip
    """The echo's JSON for one request."""
    return {
        "path": target,
        "host": host,
        "method": method,
        "proto": proto,
        "headers": headers,
        "httpPort": HTTP_PORT,
        "namespace": namespace,
        "ingress": "",
        "service": "",
        "pod": pod_name(deployment, namespace),
    }


async def _first_bytes(stream: trio.abc.Stream) -> bytes:
    """What the client sent first: enough to tell the HTTP/2 preface from HTTP/1.1."""
    data = b""
    while len(data) < len(_PREFACE) and _PREFACE.startswith(data):
        more = await stream.receive_some(65536)
        if not more:
            break
        data += more
    return data


async def _echo_h2(
    stream: trio.abc.Stream, first: bytes, *, deployment: str, namespace: str,
    received: list[dict[str, Any]],
) -> None:  # fmt: skip
    """The echo over HTTP/2 with prior knowledge: each request answered 200 with its JSON."""
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
    )
    conn.initiate_connection()
    heads: dict[int, list[tuple[str, str]]] = {}
    data = first
    while data:
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived) and event.stream_id:
                heads[event.stream_id] = cast("list[tuple[str, str]]", event.headers)
            elif isinstance(event, h2.events.DataReceived) and event.stream_id:
                conn.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id in heads:
                fields = heads.pop(event.stream_id)
                pseudo = {n: v for n, v in fields if n.startswith(":")}
                headers: dict[str, list[str]] = {}
                for name, value in fields:
                    if not name.startswith(":"):
                        headers.setdefault(canonical_header(name), []).append(value)
                seen = _seen(
                    pseudo.get(":path", ""), pseudo.get(":authority", ""),
                    pseudo.get(":method", ""), "HTTP/2.0", headers,
                    deployment=deployment, namespace=namespace,
                )  # fmt: skip
                received.append(seen)
                body = json.dumps(seen).encode()
                conn.send_headers(
                    event.stream_id,
                    [(":status", "200"), ("content-type", "application/json"),
                     ("content-length", str(len(body)))],
                )  # fmt: skip
                conn.send_data(event.stream_id, body, end_stream=True)
        await stream.send_all(conn.data_to_send())
        data = await stream.receive_some(65536)


async def _echo_connection(
    stream: trio.abc.Stream, *, deployment: str, namespace: str, received: list[dict[str, Any]],
    attempts: dict[str, int],
) -> None:  # fmt: skip
    conn = h11.Connection(h11.SERVER)
    first = b"" if isinstance(stream, trio.SSLStream) else await _first_bytes(stream)
    if first.startswith(_PREFACE):
        await _echo_h2(stream, first, deployment=deployment, namespace=namespace, received=received)
        return
    if first:  # (empty is the end of input to h11)
        conn.receive_data(first)
    while (request := await _read_request(stream, conn)) is not None:
        target = request.target.decode("latin-1")
        headers = _echo_headers(request)
        seen = _seen(
            target, dict(request.headers).get(b"host", b"").decode(), request.method.decode(),
            f"HTTP/{request.http_version.decode()}", headers,
            deployment=deployment, namespace=namespace,
        )  # fmt: skip
        if isinstance(stream, trio.SSLStream):
            peer = stream.getpeercert(binary_form=True)
            seen["tls"] = {
                "serverName": _handshake_sni.get(),
                "peerCertificates": [ssl.DER_cert_to_PEM_cert(peer)] if peer else [],
            }
        received.append(seen)
        path = urlsplit(target).path
        if path == "/ws" and "Sec-Websocket-Key" in headers:
            await _websocket(stream, conn, headers["Sec-Websocket-Key"][0])
            return
        head = request.method == b"HEAD"
        query = dict(parse_qsl(urlsplit(target).query))
        if path.startswith("/retry/") and attempts.get(query["uuid"], 0) < int(
            query["succeedAfter"]
        ):
            attempts[query["uuid"]] = attempts.get(query["uuid"], 0) + 1
            await trio.sleep(go_duration(query.get("delayRetry", "0s")))
            if "responseCode" not in query:
                _reset(stream)
                return
            await _answer(stream, conn, int(query["responseCode"]), [], b"", head=head)
        elif status := re.fullmatch(r"/status/(\d{3})", target):
            await _answer(stream, conn, int(status[1]), [], b"", head=head)
        else:
            delay = query.get("delay")
            if delay:
                await trio.sleep(go_duration(delay))
            answer = [
                *_set_headers(headers),
                ("content-type", "application/json"),
                ("x-content-type-options", "nosniff"),
            ]
            await _answer(stream, conn, 200, answer, json.dumps(seen).encode(), head=head)
        if conn.our_state is h11.MUST_CLOSE:
            return
        conn.start_next_cycle()


def _reset(stream: trio.abc.Stream) -> None:
    """Close with a reset (SO_LINGER 0), as the echo's hijacked connection does."""
    tcp = stream if isinstance(stream, trio.SocketStream) else None
    if tcp is not None:
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _websocket(stream: trio.abc.Stream, conn: h11.Connection, key: str) -> None:
    """Accept the upgrade (RFC 6455 §4.2.2), then send every data frame back unmasked."""
    accept = base64.b64encode(hashlib.sha1(key.encode() + _WEBSOCKET_GUID).digest())
    switch = h11.InformationalResponse(
        status_code=101,
        headers=[("upgrade", "websocket"), ("connection", "Upgrade"),
                 ("sec-websocket-accept", accept)],
    )  # fmt: skip
    await stream.send_all(conn.send(switch))
    buffer = bytearray(conn.trailing_data[0])
    while True:
        frame = take_frame(buffer)
        if frame is None:
            data = await stream.receive_some(65536)
            if not data:
                return
            buffer += data
            continue
        opcode, payload = frame
        if opcode == 0x8:  # close
            return
        await stream.send_all(encode_frame(opcode, payload))


def take_frame(buffer: bytearray) -> tuple[int, bytes] | None:
    """Take one whole frame (opcode, unmasked payload) off ``buffer``; None if incomplete."""
    if len(buffer) < 2:
        return None
    length, offset = buffer[1] & 0x7F, 2
    if length == 126:
        length, offset = int.from_bytes(buffer[2:4]), 4
    elif length == 127:
        length, offset = int.from_bytes(buffer[2:10]), 10
    masked = buffer[1] & 0x80
    mask = bytes(buffer[offset : offset + 4]) if masked else b"\0\0\0\0"
    start = offset + (4 if masked else 0)
    if len(buffer) < start + length:
        return None
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(buffer[start : start + length]))
    opcode = buffer[0] & 0x0F
    del buffer[: start + length]
    return opcode, payload


def encode_frame(opcode: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """One final frame (RFC 6455 §5.2); a client masks its frames with ``mask``."""
    size, bit = len(payload), 0x80 if mask else 0
    if size < 126:
        head = bytes([0x80 | opcode, bit | size])
    elif size < 1 << 16:
        head = bytes([0x80 | opcode, bit | 126]) + size.to_bytes(2)
    else:
        head = bytes([0x80 | opcode, bit | 127]) + size.to_bytes(8)
    if mask is None:
        return head + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _note_sni(_connection: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
    _handshake_sni.set(name or "")


async def serve_conformance_echo(
    key: str,
    received: list[dict[str, Any]],
    *,
    tls: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The echo of Deployment ``key`` (``namespace/name``) on a port of its own, behind TLS
    with ``tls``; the shape of the harness's ``serve_echo``."""
    namespace, deployment = key.split("/")
    attempts: dict[str, int] = {}
    if tls is not None:
        tls.sni_callback = _note_sni
    tcp = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(tcp[0].socket.getsockname()[1])
    listeners: list[trio.abc.Listener[Any]] = (
        list(tcp) if tls is None else [trio.SSLListener(lis, tls) for lis in tcp]
    )

    async def handle(stream: trio.abc.Stream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, h11.RemoteProtocolError):
            async with stream:
                await _echo_connection(
                    stream, deployment=deployment, namespace=namespace, received=received,
                    attempts=attempts,
                )  # fmt: skip

    await trio.serve_listeners(handle, listeners)
