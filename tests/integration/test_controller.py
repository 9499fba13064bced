"""The controller against the API emulator, in one process.

The official client talks real HTTP to the emulator; the controller runs under trio; a real
proxy (in process) subscribes over discovery with the certificate the controller issued into
a Secret. Checked: leadership, the CA and certificate Secrets, compiled snapshots reaching the
proxy, status written (Accepted, then Programmed once the proxy bound and acked), VIP Services
applied and pruned, no status write when nothing changed, Gateway API CRDs installed after
start, and API faults survived.
"""

from __future__ import annotations

import base64
import http.client
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
import trio

from coxswain.shell.control.kube import Kube
from coxswain.shell.controller import run_controller
from coxswain.shell.dataplane.server import ProxyConfig
from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer
from tests.apiserver.crds import GATEWAY_API_CHART

from .controller_harness import (
    NAMESPACE,
    PROXY,
    TIMEOUT,
    credentials,
    eventually,
    settings,
    start_shared_proxy,
)
from .manifests import (
    backend,
    default_ingress,
    gateway,
    gateway_class,
    grpc_route,
    http_route,
    ingress_class,
)
from .proxy_harness import free_port, serve_echo

pytestmark = pytest.mark.fixed_ports  # the shared pool's internal port 30000 (tests/conftest.py)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


def objects(backend_port: int) -> list[dict[str, Any]]:
    return [ingress_class(), default_ingress("echo"), *backend("echo", backend_port)]


def gateway_objects() -> list[dict[str, Any]]:
    return [gateway_class(), gateway("web", 80), http_route("shop", "web", "echo")]


def condition(body: dict[str, Any] | None, kind: str) -> str | None:
    for item in ((body or {}).get("status") or {}).get("conditions") or []:
        if item["type"] == kind:
            return str(item["status"])
    return None


async def served(port: int, host: str) -> None:
    """Wait until a GET through the proxy answers 200 (from a thread: the proxy and the
    backends run on this trio loop)."""
    with trio.fail_after(TIMEOUT):
        while await trio.to_thread.run_sync(get, port, host) != 200:  # noqa: ASYNC110
            await trio.sleep(0.05)


def get(port: int, host: str) -> int:
    try:
        conn = http.client.HTTPConnection(PROXY, port, timeout=5)
        conn.request("GET", "/", headers={"Host": host})
        status = conn.getresponse().status
        conn.close()
    except OSError:
        return 0
    return status


HTTPROUTE_CRD_FILE = "gateway.networking.k8s.io_httproutes.yaml"


def run(main: Callable[[ApiServer, Kube], Awaitable[None]]) -> None:
    with ApiServer() as api, api.client() as client:
        api.install_crds(COXSWAIN_CRDS)
        trio.run(main, api, Kube(client))


def test_ingress_only_then_gateway_api_installed_then_programmed_with_a_proxy() -> None:
    async def main(api: ApiServer, kube: Kube) -> None:
        async with trio.open_nursery() as nursery:
            backend = await nursery.start(serve_echo, "echo")
            for body in objects(backend):
                api.put_object(body)
            discovery = await nursery.start(run_controller, kube, settings())
            lease = api.get("Lease", "coxswain-controller", NAMESPACE)
            assert lease is not None
            assert lease["spec"]["holderIdentity"] == "controller-a"
            ca = api.get("Secret", "coxswain-discovery-ca", NAMESPACE)
            assert ca is not None
            # the root the proxies' certificates chain to, kept with its key
            assert set(ca["data"]) == {"ca.crt", "ca.key"}
            assert base64.b64decode(ca["data"]["ca.crt"]) == credentials(api).ca_pem
            # Ingress-only: the Ingress is served, reported, and a proxy can subscribe
            http_port = free_port()
            config = ProxyConfig(
                bind=PROXY, ingress_http_port=http_port, ingress_https_port=free_port()
            )
            await start_shared_proxy(nursery, api, discovery, config)
            await served(http_port, "a.example.com")

            # meanwhile the probe asks each group version once a round, not once per resource
            await trio.sleep(0.5)  # two probes or more (crd_probe_every 0.2 s)
            asked = Counter(r.path for r in api.requests if r.path.startswith("/apis/gateway"))
            v1, v1beta1 = (asked[f"/apis/gateway.networking.k8s.io/{v}"] for v in ("v1", "v1beta1"))
            assert v1 >= 2
            assert v1 <= v1beta1 + 1  # three v1 resources and one v1beta1 are probed

            # the Gateway API appears: full mode without a restart
            api.install_crds(GATEWAY_API_CRDS)
            for body in gateway_objects():
                api.put_object(body)
            await eventually(
                lambda: condition(api.get("Gateway", "web", "app"), "Programmed") == "True",
                "the Gateway is Programmed once the proxy bound its port and acked",
            )
            gateway = api.get("Gateway", "web", "app")
            assert condition(gateway, "Accepted") == "True"
            assert gateway is not None
            assert gateway["status"]["listeners"][0]["attachedRoutes"] == 1
            route = api.get("HTTPRoute", "shop", "app")
            assert route is not None
            assert route["status"]["parents"][0]["conditions"][0]["status"] == "True"
            # GRPCRoutes are watched, compiled and reported: this one is younger than the
            # HTTPRoute that serves every host of the listener, or as old (timestamps have
            # seconds) and after it by name (GEP-1016, "Cross Serving")
            rpc = grpc_route("telemetry", "web", {"backendRefs": [{"name": "echo", "port": 80}]})
            api.put_object(rpc)

            def grpc_accepted() -> tuple[object, object]:
                body = api.get("GRPCRoute", "telemetry", "app") or {}
                parents = (body.get("status") or {}).get("parents") or [{"conditions": [{}]}]
                accepted = parents[0]["conditions"][0]
                return accepted.get("status"), accepted.get("reason")

            await eventually(
                lambda: grpc_accepted() == ("False", "HostnameConflict"), "the GRPCRoute's status"
            )
            vips = [
                s
                for s in api.objects("Service", NAMESPACE)
                if s["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by") == "coxswain"
            ]
            assert len(vips) == 1
            await served(30000, "x.example.com")

            # the experimental channel's CRDs replace the standard ones: the GatewayClass
            # declares the features of their fields, without a restart
            def features() -> set[str]:
                body = api.get("GatewayClass", "coxswain") or {}
                return {f["name"] for f in body.get("status", {}).get("supportedFeatures", [])}

            assert "HTTPRouteCORS" in features()
            assert "HTTPRouteRetry" not in features()
            api.install_crds(GATEWAY_API_CHART / "experimental" / HTTPROUTE_CRD_FILE)
            await eventually(
                lambda: {"HTTPRouteRetry", "HTTPRouteDestinationPortMatching"} <= features(),
                "the experimental features are declared",
            )
            api.install_crds(GATEWAY_API_CRDS / HTTPROUTE_CRD_FILE)
            await eventually(lambda: "HTTPRouteRetry" not in features(), "and withdrawn")

            # nothing changes: no status write, even when every watch is dropped
            writes = len([r for r in api.requests if r.path.endswith("/status")])
            stamp = gateway["status"]["conditions"][0]["lastTransitionTime"]
            api.drop_watches()
            await trio.sleep(1.0)
            assert len([r for r in api.requests if r.path.endswith("/status")]) == writes
            # a change to the route: its status and the Gateway's keep their timestamps
            api.fail(500, method="PATCH", times=2)  # faults are retried at the next round
            route = gateway_objects()[2]
            route["spec"]["hostnames"] = ["shop.example.com"]
            api.put_object(route)

            def reported_generation() -> object:
                body = api.get("HTTPRoute", "shop", "app") or {}
                parents = (body.get("status") or {}).get("parents") or [{"conditions": [{}]}]
                return parents[0]["conditions"][0].get("observedGeneration")

            await eventually(lambda: reported_generation() == 2, "the new generation is reported")
            gateway = api.get("Gateway", "web", "app")
            assert gateway is not None
            assert gateway["status"]["conditions"][0]["lastTransitionTime"] == stamp

            # the Gateway goes: its VIP Service is pruned
            api.delete_object("Gateway", "web", "app")
            await eventually(
                lambda: (
                    not any(
                        s["metadata"].get("labels", {}).get("coxswain-labs.dev/role")
                        == "shared-vip"
                        for s in api.objects("Service", NAMESPACE)
                    )
                ),
                "the VIP Service is pruned",
            )
            nursery.cancel_scope.cancel()

    run(main)


def test_a_standby_takes_over_when_the_leader_stops() -> None:
    async def main(api: ApiServer, kube: Kube) -> None:
        async with trio.open_nursery() as nursery:
            first = settings()
            leader_scope = trio.CancelScope()

            async def leader(task_status: trio.TaskStatus[int]) -> None:
                with leader_scope:
                    await run_controller(kube, first, task_status=task_status)

            await nursery.start(leader)

            async def standby() -> None:
                await run_controller(kube, replace(first, identity="controller-b"))

            nursery.start_soon(standby)
            await trio.sleep(1.0)
            lease = api.get("Lease", "coxswain-controller", NAMESPACE)
            assert lease is not None
            assert lease["spec"]["holderIdentity"] == "controller-a"
            leader_scope.cancel()  # a leader that stops hands the Lease back at once
            await eventually(
                lambda: (
                    (api.get("Lease", "coxswain-controller", NAMESPACE) or {})
                    .get("spec", {})
                    .get("holderIdentity")
                    == "controller-b"
                ),
                "the standby leads within the lease time",
            )
            nursery.cancel_scope.cancel()

    run(main)


def test_faults_are_survived_and_the_vip_address_is_reported() -> None:
    """A watch history compacted (410 on re-watch: a new list), every watch dropped, and the
    API server unreachable for a while: the controller keeps serving its last snapshot and
    catches up afterwards. The VIP Service's load-balancer address is the Gateway's."""

    async def main(api: ApiServer, kube: Kube) -> None:
        api.install_crds(GATEWAY_API_CRDS)
        async with trio.open_nursery() as nursery:
            backend = await nursery.start(serve_echo, "echo")
            for body in [*objects(backend), *gateway_objects()]:
                api.put_object(body)
            await nursery.start(run_controller, kube, settings())
            vip = await eventually_value(
                lambda: next(
                    (
                        s
                        for s in api.objects("Service", NAMESPACE)
                        if s["metadata"].get("labels", {}).get("coxswain-labs.dev/role")
                        == "shared-vip"
                    ),
                    None,
                ),
                "the VIP Service",
            )
            api.put_object(
                {**vip, "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}
            )
            await eventually(
                lambda: (
                    (api.get("Gateway", "web", "app") or {}).get("status", {}).get("addresses")
                    == [{"type": "IPAddress", "value": "203.0.113.7"}]
                ),
                "the Gateway reports its VIP's address",
            )
            lists = _route_lists(api)
            api.expire()  # every watch again from a version too old: 410, then a new list
            await eventually(
                lambda: (
                    len([r for r in api.requests if r.method == "GET" and "watch" not in r.query])
                    > lists
                ),
                "informers list again after 410 Gone",
            )
            with api.outage():
                await trio.sleep(1.0)
            route = gateway_objects()[2]
            route["spec"]["hostnames"] = ["after.example.com"]
            api.put_object(route)
            await eventually(
                lambda: (
                    (api.get("Gateway", "web", "app") or {})
                    .get("status", {})
                    .get("listeners", [{}])[0]
                    .get("attachedRoutes")
                    == 1
                    and _route_generation(api) == 2
                ),
                "the controller caught up after the outage",
            )
            nursery.cancel_scope.cancel()

    run(main)


def _route_lists(api: ApiServer) -> int:
    """How many times the HTTPRoute informer has listed (a GET of the collection, no watch)."""
    return sum(
        1
        for r in api.requests
        if r.method == "GET" and r.path.endswith("/httproutes") and "watch" not in r.query
    )


def _route_generation(api: ApiServer) -> object:
    body = api.get("HTTPRoute", "shop", "app") or {}
    parents = (body.get("status") or {}).get("parents") or [{"conditions": [{}]}]
    return parents[0]["conditions"][0].get("observedGeneration")


async def eventually_value(check: Callable[[], Any], what: str) -> Any:
    await eventually(lambda: check() is not None, what)
    return check()
