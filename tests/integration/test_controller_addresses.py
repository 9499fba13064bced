"""Static Gateway addresses through the controller and the API emulator, as the
GatewayStaticAddresses conformance scenario runs them: a Gateway asks for an address of a type no
Service can carry, one outside ``--gateway-address-ranges`` and a usable one; the entries are
removed one by one, and each step's conditions are those the scenario expects. At the end the
controller has given the usable address to the VIP Service as an external IP and the Gateway
reports it alone, Programmed once the shared proxy bound its port."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import trio

from coxswain.shell.control.kube import Kube
from coxswain.shell.controller import run_controller
from coxswain.shell.dataplane.server import ProxyConfig
from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer
from tests.integration.controller_harness import (
    NAMESPACE,
    PROXY,
    eventually,
    settings,
    start_shared_proxy,
)
from tests.integration.manifests import gateway, gateway_class
from tests.integration.proxy_harness import free_port

pytestmark = pytest.mark.fixed_ports  # the shared pool's internal port 30000 (tests/conftest.py)

INVALID = {"type": "test/fake-invalid-type", "value": "fake address teehee!"}
UNUSABLE = {"type": "IPAddress", "value": "203.0.113.9"}  # outside the ranges
USABLE = {"type": "IPAddress", "value": "192.0.2.10"}


def conditions(api: ApiServer) -> dict[str, tuple[str, str]]:
    body = api.get("Gateway", "static", "app") or {}
    found = (body.get("status") or {}).get("conditions") or []
    return {c["type"]: (c["status"], c["reason"]) for c in found}


def with_addresses(*addresses: dict[str, str]) -> dict[str, Any]:
    body = gateway("static", 8080)
    body["spec"]["addresses"] = list(addresses)
    return body


def test_the_static_address_scenario_step_by_step() -> None:
    async def main(api: ApiServer, kube: Kube) -> None:
        api.install_crds(GATEWAY_API_CRDS)
        api.put_object(gateway_class())
        api.put_object(with_addresses(INVALID, UNUSABLE, USABLE))
        ranged = replace(
            settings(),
            compile=replace(settings().compile, gateway_address_ranges=("192.0.2.0/24",)),
        )
        async with trio.open_nursery() as nursery:
            discovery = await nursery.start(run_controller, kube, ranged)
            config = ProxyConfig(
                bind=PROXY, ingress_http_port=free_port(), ingress_https_port=free_port()
            )
            await start_shared_proxy(nursery, api, discovery, config)
            await eventually(
                lambda: conditions(api).get("Accepted") == ("False", "UnsupportedAddress"),
                "an address type no Service carries: not accepted",
            )

            api.put_object(with_addresses(UNUSABLE, USABLE))
            await eventually(
                lambda: (
                    conditions(api).get("Accepted") == ("True", "Accepted")
                    and conditions(api).get("Programmed") == ("False", "AddressNotUsable")
                ),
                "accepted, but an address outside the ranges is not usable",
            )

            api.put_object(with_addresses(USABLE))
            await eventually(
                lambda: conditions(api).get("Programmed") == ("True", "Programmed"),
                "programmed with the usable address",
            )
            status = (api.get("Gateway", "static", "app") or {})["status"]
            assert status["addresses"] == [USABLE]
            vip = next(
                s
                for s in api.objects("Service", NAMESPACE)
                if s["metadata"].get("labels", {}).get("coxswain-labs.dev/role") == "shared-vip"
            )
            assert vip["spec"]["externalIPs"] == ["192.0.2.10"]
            features = (api.get("GatewayClass", "coxswain") or {})["status"]["supportedFeatures"]
            assert {"name": "GatewayStaticAddresses"} in features
            nursery.cancel_scope.cancel()

    with ApiServer() as api, api.client() as client:
        api.install_crds(COXSWAIN_CRDS)
        trio.run(main, api, Kube(client))
