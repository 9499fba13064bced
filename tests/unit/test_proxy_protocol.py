"""The PROXY protocol v2 header (coxswain.route.proxy_protocol): IPv4, IPv6, and the LOCAL
command where the addresses cannot be told."""

from __future__ import annotations

import socket

from coxswain.route.proxy_protocol import SIGNATURE, proxy_header


def test_ipv4_addresses_and_ports() -> None:
    header = proxy_header(("192.0.2.1", 40000), ("10.0.0.5", 443))
    assert header[:12] == SIGNATURE
    assert header[12:16] == b"\x21\x11\x00\x0c"
    assert header[16:] == (
        socket.inet_aton("192.0.2.1")
        + socket.inet_aton("10.0.0.5")
        + (40000).to_bytes(2, "big")
        + (443).to_bytes(2, "big")
    )


def test_ipv6_addresses_and_a_scope_id() -> None:
    header = proxy_header(("fe80::1%eth0", 1), ("2001:db8::2", 2))
    assert header[12:16] == b"\x21\x21\x00\x24"  # TCP over IPv6, 36 bytes
    assert header[16:32] == socket.inet_pton(socket.AF_INET6, "fe80::1")
    assert header[32:48] == socket.inet_pton(socket.AF_INET6, "2001:db8::2")


def test_mixed_or_unknown_addresses_give_the_local_command() -> None:
    assert proxy_header(("192.0.2.1", 1), ("::1", 2)) == SIGNATURE + b"\x20\x00\x00\x00"
    assert proxy_header(("", 0), ("", 0)) == SIGNATURE + b"\x20\x00\x00\x00"
