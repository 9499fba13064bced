"""A dedicated proxy's ``trustedProxies`` at their bounds (``compile.model.trusted_proxies``;
docs/dedicated-proxies.md): at most 64 networks, each at most 64 characters read as a network."""

from __future__ import annotations

import ipaddress

import pytest

from coxswain.compile.model.trusted_proxies import MAX_TRUSTED_PROXIES, trusted_proxies

FIELD = "spec.trustedProxies"


def test_64_networks_are_read_and_65_refused() -> None:
    networks = [f"10.0.{i}.0/24" for i in range(MAX_TRUSTED_PROXIES + 1)]
    assert MAX_TRUSTED_PROXIES == 64
    assert trusted_proxies(networks[:64], FIELD) == (tuple(networks[:64]), [])
    assert trusted_proxies(networks, FIELD) == ((), [(FIELD, "lists 65 networks; at most 64")])


@pytest.mark.parametrize("length", [64, 65])
def test_an_entry_of_64_characters_is_read_as_a_network_and_a_longer_one_is_not(
    length: int,
) -> None:
    item = "1" * length
    networks, problems = trusted_proxies([item], FIELD)
    assert networks == ()
    if length == 64:  # ipaddress's own reason, quoting the value
        with pytest.raises(ValueError, match="does not appear") as err:
            ipaddress.ip_network(item)
        assert problems == [(f"{FIELD}[0]", str(err.value))]
    else:
        assert len(problems) == 1
        assert problems[0][1].endswith(" is not an IPv4 or IPv6 network")
