"""The installed Gateway API release read from the HTTPRoute CRD, and the features each channel
declares."""

from __future__ import annotations

import pytest

from coxswain.compile import CompileConfig
from coxswain.compile.gateway.status import (
    EXPERIMENTAL_FEATURES,
    HTTP2_FEATURES,
    SUPPORTED_FEATURES,
    supported_features,
)
from coxswain.shell.control.gateway_api_release import GatewayApiRelease, release_of

CHANNEL = "gateway.networking.k8s.io/channel"
VERSION = "gateway.networking.k8s.io/bundle-version"


@pytest.mark.parametrize(
    ("metadata", "release"),
    [
        ({"annotations": {CHANNEL: "experimental", VERSION: "v1.6.1"}}, ("experimental", "v1.6.1")),
        ({"annotations": {CHANNEL: "standard", VERSION: "v1.4.0"}}, ("standard", "v1.4.0")),
        ({"annotations": {CHANNEL: "Experimental"}}, ("standard", "unknown")),
        ({"annotations": {VERSION: 5}}, ("standard", "unknown")),
        ({"annotations": {VERSION: "v1\n.6"}}, ("standard", "unknown")),
        ({"annotations": {VERSION: "v" * 100}}, ("standard", "v" * 64)),
        ({"annotations": ["x"]}, ("standard", "unknown")),
        ({}, ("standard", "unknown")),
        ("metadata", ("standard", "unknown")),
    ],
)
def test_the_release_is_read_from_the_crd_annotations(metadata, release):
    assert release_of({"metadata": metadata}) == GatewayApiRelease(*release)


def test_the_experimental_channel_adds_its_features_to_the_standard_ones():
    standard = supported_features(CompileConfig())
    experimental = supported_features(CompileConfig(gateway_api_channel="experimental"))
    assert standard == sorted((*SUPPORTED_FEATURES, *HTTP2_FEATURES))
    assert experimental == sorted((*SUPPORTED_FEATURES, *HTTP2_FEATURES, *EXPERIMENTAL_FEATURES))
    assert not set(SUPPORTED_FEATURES) & set(EXPERIMENTAL_FEATURES)


def test_static_addresses_are_declared_only_where_ranges_are_given():
    """A Gateway's static address needs a range the installer set aside
    (``--gateway-address-ranges``); without one, GatewayStaticAddresses is not declared."""
    assert "GatewayStaticAddresses" not in supported_features(CompileConfig())
    ranged = CompileConfig(gateway_address_ranges=("192.0.2.0/24",))
    assert supported_features(ranged) == sorted(
        (*SUPPORTED_FEATURES, *HTTP2_FEATURES, "GatewayStaticAddresses")
    )
