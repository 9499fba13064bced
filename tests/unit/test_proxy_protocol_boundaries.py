"""The PROXY protocol v2 header at its edges (coxswain.route.proxy_protocol): an address's
zone is dropped before it is read, even an empty one, on either side."""

from __future__ import annotations

from coxswain.route.proxy_protocol import SIGNATURE, proxy_header


def test_an_empty_zone_is_dropped_from_either_address() -> None:
    header = proxy_header(("fe80::1%", 1), ("fe80::2%", 2))
    assert header == (
        SIGNATURE
        + b"\x21\x21\x00\x24"
        + bytes.fromhex("fe80" + "0" * 27 + "1")
        + bytes.fromhex("fe80" + "0" * 27 + "2")
        + b"\x00\x01\x00\x02"
    )
