"""Sending one conformance request to the proxy and capturing what came back.

As upstream's round tripper does (``conformance/utils/roundtripper/roundtripper.go``, v1.6.1):
one connection per request, redirects not followed, the Host header the test's or else the
Gateway's address (its port left out when it is the scheme's, ``CalculateHost``), the response
body read as the echo's JSON only when ``Content-Type`` is ``application/json`` (otherwise the
captured request has only the method sent), a redirect's ``Location`` resolved against the
request URL and split into scheme, host, port and path. Over HTTPS the client sends the SNI
the test names and verifies the certificate chain and that name, by the rules of Go's
``x509.VerifyHostname`` (a wildcard stands for exactly one leftmost label), and notes whether
the server asked for a client certificate (the suite's ``GetClientCertificateHook``): Python's
``ssl`` has no such hook, so the handshake's messages are read through CPython's
``SSLContext._msg_callback`` (its TLS message trace, undocumented but present since 3.8).
A case whose ``protocol`` is ``H2C_PRIOR_KNOWLEDGE`` is sent over HTTP/2 with prior knowledge
(RFC 9113 §3.3) on a cleartext connection, ``Host`` becoming ``:authority``, as upstream's
``H2CPriorKnowledgeProtocol`` transport does.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast
from urllib.parse import urljoin, urlsplit

from tests.conformance.cases import Redirect
from tests.integration.h2_client import H2Client

if TYPE_CHECKING:
    import trustme

    from tests.conformance.cases import Case

__all__ = ["H2C_PRIOR_KNOWLEDGE", "Captured", "Handshake", "Target", "calculate_host", "round_trip"]

H2C_PRIOR_KNOWLEDGE: Final = (
    "H2C_PRIOR_KNOWLEDGE"  # upstream roundtripper.H2CPriorKnowledgeProtocol
)

TIMEOUT: Final = 10.0  # upstream's RequestTimeout
_HANDSHAKE: Final = 22  # the handshake content type (RFC 8446 §5.1)
_CERTIFICATE_REQUEST: Final = 13  # the certificate_request handshake message (RFC 8446 §4)
_REDIRECTS: Final = frozenset({300, 301, 302, 303, 304, 305, 307, 308})


@dataclass(frozen=True, slots=True)
class Target:
    """Where a request goes: the proxy's port for a listener, and the Gateway's address with
    the listener's spec port (``gwAddr``); with ``trust`` the connection is TLS."""

    port: int
    gateway_address: str
    trust: trustme.CA | None = None


@dataclass(frozen=True, slots=True)
class Captured:
    """Upstream ``CapturedRequest`` (``request``, the echo's JSON) and ``CapturedResponse``
    (response headers by lower-case name)."""

    status: int
    headers: dict[str, list[str]]
    request: dict[str, Any]
    redirect: Redirect | None
    url: str


@dataclass(slots=True)
class Handshake:
    """What a TLS client saw of its handshake: whether the server asked for a certificate."""

    certificate_requested: bool = False

    def note(self, *message: Any) -> None:
        """``_msg_callback(connection, direction, version, content_type, msg_type, data)``."""
        _, direction, _, content_type, msg_type, _ = message
        if (direction, content_type, msg_type) == ("read", _HANDSHAKE, _CERTIFICATE_REQUEST):
            self.certificate_requested = True


def calculate_host(address: str, scheme: str) -> str:
    """``CalculateHost``: ``host:port`` without the port when it is the scheme's own."""
    host, _, port = address.rpartition(":")
    return host if (scheme, port) in {("http", "80"), ("https", "443")} else address


def _verify_name(sock: ssl.SSLSocket, name: str) -> None:
    names = [v for k, v in (sock.getpeercert() or {}).get("subjectAltName", ()) if k == "DNS"]
    labels = name.lower().split(".")
    for pattern in names:
        wanted = pattern.lower().split(".")
        if len(wanted) == len(labels) and all(
            w == got or (i == 0 and w == "*")
            for i, (w, got) in enumerate(zip(wanted, labels, strict=True))
        ):
            return
    raise ssl.SSLCertVerificationError(f"certificate for {names} is not valid for {name!r}")


def _connect(
    target: Target, case: Case, leaves: dict[str, trustme.LeafCert], handshake: Handshake
) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection("127.0.0.1", target.port, timeout=TIMEOUT)
    if target.trust is None:
        return conn
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = False  # checked below, by Go's rules
    if case.protocol == "H2":
        context.set_alpn_protocols(["h2"])
    target.trust.configure_trust(context)
    cast("Any", context)._msg_callback = handshake.note
    if case.client_cert:
        leaves[case.client_cert].configure_cert(context)
    raw = socket.create_connection(("127.0.0.1", target.port), timeout=TIMEOUT)
    try:
        sock = context.wrap_socket(raw, server_hostname=case.server_name or None)
        _verify_name(sock, case.server_name)
    except BaseException:
        raw.close()
        raise
    conn.sock = sock
    return conn


def round_trip(
    target: Target,
    case: Case,
    leaves: dict[str, trustme.LeafCert] | None = None,
    handshake: Handshake | None = None,
) -> Captured:
    """Send ``case``'s request to ``target`` and capture the exchange; ``leaves`` holds the
    certificate the client presents (``case.client_cert``), ``handshake`` gets what the TLS
    handshake showed."""
    scheme = "http" if target.trust is None else "https"
    url_host = calculate_host(target.gateway_address, scheme)
    headers = {"Host": case.host or url_host, **case.headers}
    headers["X-Echo-Set-Header"] = ",".join(
        f"{k}:{v}" for k, v in case.backend_set_response_headers.items()
    )
    body = case.body.encode() if case.body else None
    if case.protocol == H2C_PRIOR_KNOWLEDGE:
        status, fields, data = _h2_exchange(H2Client(target.port), case, headers, body)
    else:
        conn = _connect(target, case, leaves or {}, handshake or Handshake())
        try:
            if case.protocol == "H2":
                status, fields, data = _h2_exchange(_over_tls(conn), case, headers, body)
            else:
                conn.request(case.method, case.path, body=body, headers=headers)
                response = conn.getresponse()
                status, fields, data = response.status, response.getheaders(), response.read()
        finally:
            conn.close()
    captured_headers: dict[str, list[str]] = {}
    for name, value in fields:
        captured_headers.setdefault(name.lower(), []).append(value)
    request: dict[str, Any] = {"method": case.method}
    if captured_headers.get("content-type") == ["application/json"]:
        request = json.loads(data)
    url = f"{scheme}://{url_host}{case.path}"
    redirect = None
    if status in _REDIRECTS:
        location = urlsplit(urljoin(url, captured_headers.get("location", [""])[0]))
        port = "" if location.port is None else str(location.port)
        redirect = Redirect(
            scheme=location.scheme, host=location.hostname or "", port=port, path=location.path
        )
    return Captured(status, captured_headers, request, redirect, url)


def _over_tls(conn: http.client.HTTPConnection) -> H2Client:
    """An HTTP/2 client on the TLS connection ``_connect`` made, which chose ``h2`` by ALPN."""
    sock = conn.sock
    assert isinstance(sock, ssl.SSLSocket)
    assert sock.selected_alpn_protocol() == "h2"
    return H2Client(0, sock=sock)


def _h2_exchange(
    client: H2Client, case: Case, headers: dict[str, str], body: bytes | None
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The request over HTTP/2: the Host is ``:authority``, the other fields lower-cased
    (RFC 9113 §8.3.1, §8.2); the status, the fields and the body."""
    fields = [(n.lower(), v) for n, v in headers.items() if n.lower() != "host" and v]
    try:
        stream = client.send(
            case.method, case.path, authority=headers["Host"], headers=fields, body=body
        )
        (response,) = client.wait(stream)
    finally:
        client.close()
    if response.reset is not None:
        raise ConnectionError(f"the proxy reset the stream ({response.reset})")
    return response.status, list(response.headers.items()), response.body
