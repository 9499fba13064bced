"""compile.gateway.addresses: why a Gateway's static address cannot be used, exactly.

Each kind of address the API server refuses in a Service's ``spec.externalIPs`` is refused
alone, and an address outside ``--gateway-address-ranges`` names every range.
"""

from __future__ import annotations

import pytest

from coxswain.compile.config import CompileConfig
from coxswain.compile.gateway.addresses import judge_addresses
from coxswain.compile.model.decode import Decoded, decode_object

CONFIG = CompileConfig(gateway_address_ranges=("192.0.2.0/24", "198.51.100.0/24"))
NOT_EXTERNAL = "unspecified, loopback, link-local and multicast addresses cannot be external IPs"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("web", "it is not an IP address"),
        ("0.0.0.0", NOT_EXTERNAL),
        ("127.0.0.1", NOT_EXTERNAL),
        ("169.254.0.1", NOT_EXTERNAL),
        ("224.0.0.1", NOT_EXTERNAL),
        (
            "203.0.113.1",
            "it is outside the ranges this controller may assign (--gateway-address-ranges: "
            "192.0.2.0/24, 198.51.100.0/24)",
        ),
    ],
)
def test_an_unusable_static_address_says_why(value: str, why: str) -> None:
    found = decode_object(
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "web", "namespace": "app"},
            "spec": {
                "gatewayClassName": "coxswain",
                "addresses": [{"type": "IPAddress", "value": value}],
                "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
            },
        }
    )
    assert isinstance(found, Decoded)
    judged = judge_addresses(found.obj, CONFIG, None, [], {})
    assert judged.programmed is not None
    assert (judged.static, judged.programmed.reason, judged.programmed.message) == (
        (),
        "AddressNotUsable",
        f"address {value!r} cannot be used: {why}",
    )
