"""The chart's RBAC is exactly what the controller uses: every verb it needs, and no
other (docs/install.md, "Permissions").

The controller runs against the API emulator through a scenario that exercises every kind of
request it makes: informers, leadership (take, renew, hand back), the discovery CA and proxy
certificates, status, server-side apply of VIP Services, identities, a dedicated proxy and its
autoscaler, and pruning when that Gateway moves back to the shared pool. Every request it made
must be allowed by the ClusterRole and Role the chart renders, and every verb they grant must
have been used: a grant nothing needs is as much a failure as a request that would be refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import pytest
import trio

from coxswain.shell.control.kube import Kube
from coxswain.shell.controller import run_controller
from coxswain.shell.dataplane.server import ProxyConfig
from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer, RequestRecord
from tests.unit.helm_render import render

from .controller_harness import settings as controller_settings
from .controller_harness import start_shared_proxy
from .manifests import (
    backend_tls_policy,
    default_ingress,
    gateway,
    gateway_class,
    grpc_route,
    http_route,
    ingress_class,
    listener_set,
    own_infrastructure,
    own_parameters,
    stream_route,
)
from .proxy_harness import free_port

if TYPE_CHECKING:
    from collections.abc import Callable

NAMESPACE = "coxswain-system"
TIMEOUT = 30
Grant = tuple[str, str, str]  # API group, resource (or resource/subresource), verb


def requested(record: RequestRecord) -> tuple[str | None, Grant, str | None] | None:
    """The namespace and grant a request needs, and the object a ``get`` names (which a rule's
    resourceNames may restrict it to); None for discovery documents."""
    parts = record.path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return None  # /api, /apis, /apis/<group>/<version>, /version
    namespace = None
    if len(rest) > 2 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    query = parse_qs(record.query)
    verb = {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
    }.get(record.method)
    if verb is None:
        if query.get("watch", [""])[0] in ("true", "1"):
            verb = "watch"
        else:
            verb = "get" if len(rest) > 1 else "list"
    name = rest[1] if verb == "get" and len(rest) == 2 else None
    return namespace, (group, resource, verb), name


def grants(role: dict[str, Any]) -> set[tuple[Grant, str | None]]:
    """Each grant, with the one object it is restricted to (None: any)."""
    return {
        ((group, resource, verb), name)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames") or [None]
    }


def granting(granted: set[tuple[Grant, str | None]], grant: Grant, name: str | None) -> object:
    """The rule entry that allows a request, or None."""
    for entry in ((grant, name), (grant, None)):
        if entry in granted:
            return entry
    return None


def objects(gateway_api: bool) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [ingress_class(), default_ingress("web")]
    if gateway_api:
        found += [
            gateway_class(),
            own_parameters({"autoscaling": {"minReplicas": 1, "maxReplicas": 3}}),
            edge(dedicated=True),
            http_route("r", "edge", "web", hostnames=["www.example.com"]),
            grpc_route(  # its status is written (Accepted)
                "rpc",
                "edge",
                {"backendRefs": [{"name": "web", "port": 80}]},
                hostnames=["rpc.example.com"],
            ),
            listener_set("extra", "edge", 8080),  # its status is written (NotAllowed)
            backend_tls_policy("to-web", "web"),  # its status is written (an ancestor: edge)
            # each status written (NotAllowedByListeners: edge has an HTTP listener only)
            *(
                stream_route(k, k.lower(), "edge", "web")
                for k in ("TLSRoute", "TCPRoute", "UDPRoute")
            ),
        ]
    return found


def edge(*, dedicated: bool) -> dict[str, Any]:
    if dedicated:
        return gateway("edge", 80, infrastructure=own_infrastructure())
    return gateway("edge", 80)


async def eventually(check: Callable[[], object], what: str) -> None:
    with trio.move_on_after(TIMEOUT):
        while not check():  # noqa: ASYNC110 - the store has no event to wait on
            await trio.sleep(0.05)
    assert check(), f"timed out waiting for {what}"


@pytest.mark.parametrize("gateway_api", [True, False], ids=["full", "ingress-only"])
def test_the_chart_grants_exactly_the_requests_the_controller_makes(gateway_api: bool) -> None:
    settings = controller_settings(gateway_api=gateway_api)

    async def main(api: ApiServer, kube: Kube) -> None:
        async with trio.open_nursery() as nursery:
            for body in objects(gateway_api):
                api.put_object(body)
            scope = trio.CancelScope()

            async def controller(task_status: trio.TaskStatus[int]) -> None:
                with scope:
                    await run_controller(kube, settings, task_status=task_status)

            discovery = await nursery.start(controller)
            await trio.sleep(1.5)  # a lease renewal
            if gateway_api:
                await eventually(lambda: api.get("Deployment", "edge-coxswain", "app"), "proxy")
                autoscaler = api.get("HorizontalPodAutoscaler", "edge-coxswain", "app")
                assert autoscaler is not None
                assert autoscaler["spec"]["scaleTargetRef"] == {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "edge-coxswain",
                }
                # back to the shared pool: pruned once a shared proxy has acked the Gateway
                config = ProxyConfig(
                    bind="127.0.0.8", ingress_http_port=free_port(), ingress_https_port=free_port()
                )
                await start_shared_proxy(nursery, api, discovery, config)
                api.put_object(edge(dedicated=False))
                await eventually(
                    lambda: api.get("Deployment", "edge-coxswain", "app") is None, "pruning"
                )
                # deleted after the Deployment, by a request of its own
                await eventually(
                    lambda: api.get("HorizontalPodAutoscaler", "edge-coxswain", "app") is None,
                    "the autoscaler pruned",
                )
                await eventually(
                    lambda: api.get("Secret", "edge-coxswain-discovery-tls", "app") is None,
                    "its certificate Secret deleted once the proxy is gone",
                )
            else:
                await eventually(
                    lambda: api.get("Secret", "coxswain-proxy-discovery-tls", NAMESPACE), "cert"
                )
            scope.cancel()  # hands the Lease back
            await trio.sleep(0.1)
            nursery.cancel_scope.cancel()

    with ApiServer() as api, api.client() as client:
        api.install_crds(COXSWAIN_CRDS)
        if gateway_api:
            api.install_crds(GATEWAY_API_CRDS)
        trio.run(main, api, Kube(client))
        made = [found for record in api.requests if (found := requested(record))]

    chart = render({"gatewayAPI": {"enabled": gateway_api}})
    cluster = grants(chart.get("ClusterRole", f"coxswain-controller-{NAMESPACE}"))
    local = grants(chart.get("Role", "coxswain-controller"))
    refused = {
        (namespace, grant, name)
        for namespace, grant, name in made
        if not granting(cluster, grant, name)
        and not (namespace == NAMESPACE and granting(local, grant, name))
    }
    assert refused == set()
    used = {granting(cluster, g, n) for _, g, n in made} | {
        granting(local, g, n) for ns, g, n in made if ns == NAMESPACE
    }
    assert cluster - used == set(), "granted cluster-wide, never used"
    assert local - used == set(), "granted in the namespace, never used"


def test_request_paths_map_to_grants() -> None:
    def grant(method: str, path: str, query: str = "") -> object:
        return requested(RequestRecord(method, path, query, None))

    assert grant("GET", "/api/v1/services", "watch=true") == (
        None,
        ("", "services", "watch"),
        None,
    )
    assert grant("GET", "/api/v1/namespaces/a/secrets/x") == ("a", ("", "secrets", "get"), "x")
    assert grant("PATCH", "/apis/gateway.networking.k8s.io/v1/namespaces/a/gateways/g/status") == (
        "a",
        ("gateway.networking.k8s.io", "gateways/status", "patch"),
        None,
    )
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/httproutes.x"
    assert grant("GET", crd) == (
        None,
        ("apiextensions.k8s.io", "customresourcedefinitions", "get"),
        "httproutes.x",
    )
    assert grant("GET", "/apis/apps/v1") is None
    assert grant("GET", "/api") is None
