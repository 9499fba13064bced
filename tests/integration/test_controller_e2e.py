"""The controller end to end with real processes.

The API emulator (in this process, real HTTP), ``coxswain controller`` as a process with a
kubeconfig, a shared proxy with the certificate the controller put in its Secret, and a
dedicated proxy started with the arguments of the Deployment the controller provisioned (its
Secret's files standing in for the mounted volume). Objects are created through the API and
traffic flows; status is written; VIP Services and identities are created, relabelled and
pruned; a route with a missing backend is reported while the rest keeps working; the controller
is killed and restarted while requests keep flowing, none failing. TCP and UDP listeners
(TCPRoute, UDPRoute) carry their traffic on both the shared pool and a dedicated proxy.

Each proxy binds its own loopback address: the shared pool's internal ports are fixed.
"""

from __future__ import annotations

import base64
import signal
import socket
from typing import TYPE_CHECKING, Any

import pytest
import trio

from tests.apiserver import COXSWAIN_CRDS, GATEWAY_API_CRDS, ApiServer

from .e2e_harness import coxswain, get
from .e2e_harness import served_by as served_by_eventually
from .manifests import (
    backend,
    gateway,
    gateway_class,
    http_route,
    ingress_class,
    own_infrastructure,
    own_parameters,
)
from .proxy_harness import free_port, reaped, serve_echo
from .streams_harness import read_exactly, tcp_backend, udp_backend

pytestmark = pytest.mark.fixed_ports  # the shared pool's internal ports (tests/conftest.py)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

NAMESPACE = "coxswain-system"
SHARED, DEDICATED = "127.0.0.6", "127.0.0.7"
INTERNAL = 30001  # the shared pool's port for app/web (app/edge, first in order, has 30000)
TIMEOUT = 30
TLS_MOUNT = "/etc/coxswain/discovery"
GATEWAY = "coxswain-labs.dev/gateway"  # the annotation naming an owned object's Gateway


def route(name: str, parent: str, backend: str) -> dict[str, Any]:
    return http_route(name, parent, backend, hostnames=[f"{name}.example.com"])


def cluster_objects(ports: dict[str, int], edge_port: int) -> list[dict[str, Any]]:
    return [
        *backend("one", ports["one"]),
        *backend("two", ports["two"]),
        ingress_class(),
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "site", "namespace": "app"},
            "spec": {
                "ingressClassName": "coxswain",
                "rules": [
                    {
                        "host": "site.example.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": "one", "port": {"number": 80}}},
                                }
                            ]
                        },
                    }
                ],
            },
        },
        gateway_class(),
        own_parameters({"replicas": 1}),
        gateway("web", 80),
        gateway("edge", edge_port, infrastructure=own_infrastructure()),
        route("shop", "web", "two"),
        route("fast", "edge", "one"),
        route("broken", "web", "missing"),
    ]


async def served_by(address: str, port: int, host: str, backend: str) -> None:
    with trio.fail_after(TIMEOUT):
        await served_by_eventually(address, port, host, backend)


async def eventually(
    check: Callable[[], object], what: str, show: Callable[[], object] = lambda: None
) -> Any:
    """Poll the emulator's store until ``check()`` is truthy; returns it. On time-out the
    failure names ``what`` and shows ``show()``."""
    with trio.move_on_after(TIMEOUT):
        while not (value := check()):  # noqa: ASYNC110 - the store has no event to wait on
            await trio.sleep(0.05)
    assert value, f"timed out waiting for {what}: {show()}"
    return value


def conditions(body: dict[str, Any] | None) -> dict[str, str]:
    status = (body or {}).get("status") or {}
    return {c["type"]: c["status"] for c in status.get("conditions") or []}


def secret_files(api: ApiServer, namespace: str, name: str, folder: Path) -> Path | None:
    secret = api.get("Secret", name, namespace)
    if secret is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for key, value in secret["data"].items():
        (folder / key).write_bytes(base64.b64decode(value))
    return folder


def _role(body: dict[str, Any]) -> str | None:
    return (body["metadata"].get("labels") or {}).get("coxswain-labs.dev/role")


def shared_proxy(discovery: int, certs: Path, http_port: int) -> list[str]:
    """A one-process shared proxy on its own loopback address, with the pool's certificate."""
    return coxswain(
        "proxy", "--shared", "--discovery", f"127.0.0.1:{discovery}", "--node-id", "shared-0",
        "--bind", SHARED, "--ingress-http-port", str(http_port),
        "--ingress-https-port", str(free_port()), "--admin-port", "0", "--workers", "1",
        "--tls-cert", str(certs / "tls.crt"), "--tls-key", str(certs / "tls.key"),
        "--tls-ca", str(certs / "ca.crt"),
    )  # fmt: skip


def controller(api: ApiServer, folder: Path, discovery: int, *extra: str) -> list[str]:
    """``coxswain controller`` against the emulator, its discovery server on ``discovery``."""
    return coxswain(
        "controller", "--kubeconfig", str(api.kubeconfig(folder / "kube")),
        "--namespace", NAMESPACE, "--discovery-port", str(discovery), "--health-port", "0",
        "--discovery-address", f"127.0.0.1:{discovery}", *extra,
    )  # fmt: skip


def dedicated_command(api: ApiServer, certs: Path) -> list[str] | None:
    """The provisioned Deployment's container, as this machine can run it: the Secret's files
    for the mounted volume, a loopback address of its own, no fixed admin port."""
    deployment = api.get("Deployment", "edge-coxswain", "app")
    if deployment is None:
        return None
    args = list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])
    args = [a.replace(TLS_MOUNT, str(certs)) for a in args]
    args[args.index("--admin-port") + 1] = "0"
    # each proxy names itself in the fleet; in a cluster the pod name does (POD_NAME)
    return coxswain(*args, "--bind", DEDICATED, "--workers", "1", "--node-id", "edge-0")


def run_with_crds(main: Callable[[ApiServer], Awaitable[None]]) -> None:
    """Run ``main`` against an emulator with the coxswain and Gateway API CRDs installed."""
    with ApiServer() as api:
        api.install_crds(COXSWAIN_CRDS, GATEWAY_API_CRDS)
        trio.run(main, api)


def test_the_controller_serves_provisions_and_survives_a_restart(tmp_path: Path) -> None:
    discovery, health, http_port, edge_port = free_port(), free_port(), free_port(), free_port()

    async def main(api: ApiServer) -> None:
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        controller_command = coxswain(
            "controller", "--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE,
            "--discovery-port", str(discovery), "--health-port", str(health),
            "--discovery-address", f"127.0.0.1:{discovery}",
            "--shared-vip-service-type", "ClusterIP",
        )  # fmt: skip
        async with reaped() as start, trio.open_nursery() as nursery:
            ports = {n: await nursery.start(serve_echo, n) for n in ("one", "two")}
            for body in cluster_objects(ports, edge_port):
                api.put_object(body)
            controller = await start(controller_command)
            shared_certs = await eventually(
                lambda: secret_files(
                    api, NAMESPACE, "coxswain-proxy-discovery-tls", tmp_path / "shared"
                ),
                "the shared pool's certificate Secret",
            )
            await start(shared_proxy(discovery, shared_certs, http_port))
            edge_certs = await eventually(
                lambda: secret_files(api, "app", "edge-coxswain-discovery-tls", tmp_path / "edge"),
                "the dedicated proxy's certificate Secret",
            )
            await start(await eventually(lambda: dedicated_command(api, edge_certs), "Deployment"))

            await served_by(SHARED, http_port, "site.example.com", "one")
            await served_by(SHARED, INTERNAL, "shop.example.com", "two")
            await served_by(DEDICATED, edge_port, "fast.example.com", "one")

            # status: Programmed after bind and ack; the broken route reported alone
            await eventually(
                lambda: conditions(api.get("Gateway", "web", "app")).get("Programmed") == "True",
                "web Programmed",
                lambda: api.get("Gateway", "web", "app"),
            )
            await eventually(
                lambda: conditions(api.get("Gateway", "edge", "app")).get("Programmed") == "True",
                "edge Programmed",
            )
            broken = await eventually(
                lambda: (api.get("HTTPRoute", "broken", "app") or {}).get("status"),
                "broken's status",
            )
            resolved = {c["type"]: c for c in broken["parents"][0]["conditions"]}["ResolvedRefs"]
            assert (resolved["status"], resolved["reason"]) == ("False", "BackendNotFound")

            # its metrics: statuses written, the settled statuses it keeps, one per object, and
            # the discovery server's refusals, by reason
            status, metrics = get("127.0.0.1", health, "health", "/metrics")
            assert status == 200
            samples = _samples(metrics.decode())
            assert samples["coxswain_controller_status_writes_total"] >= 3
            assert samples["coxswain_controller_status_objects"] >= 3
            refused = 'coxswain_discovery_refused_streams_total{reason="identity_streams"} 0.0'
            assert refused in metrics.decode().splitlines()
            # scopes: both compiled at least once; rounds the fleet's acks started (nothing in
            # the cluster changed) reused them
            scopes = {
                line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
                for line in metrics.decode().splitlines()
                if line.startswith("coxswain_controller_scopes_total{")
            }
            assert scopes['coxswain_controller_scopes_total{outcome="compiled"}'] >= 2
            assert scopes['coxswain_controller_scopes_total{outcome="reused"}'] >= 1

            # identities and VIPs: created, relabelled from infrastructure labels, pruned
            identities = [
                a for a in api.objects("ServiceAccount", "app") if _role(a) == "shared-identity"
            ]
            assert len(identities) == 1  # the shared Gateway's; edge has its own proxy's
            edge_identity = api.get("ServiceAccount", "edge-coxswain", "app")
            assert edge_identity is not None
            assert _role(edge_identity) == "dedicated-proxy"
            vips = await eventually(
                lambda: {
                    s["metadata"]["annotations"]["coxswain-labs.dev/gateway"]: s
                    for s in api.objects("Service", NAMESPACE)
                    if _role(s) == "shared-vip"
                },
                "the VIP Service",
            )
            assert set(vips) == {"app/web", "app/edge"}  # edge: until its proxy is ready
            web = gateway("web", 80, infrastructure={"labels": {"team": "shop"}})
            api.put_object(web)
            await eventually(
                lambda: any(
                    s["metadata"]["labels"].get("team") == "shop"
                    for s in api.objects("Service", NAMESPACE)
                ),
                "the VIP Service relabelled",
            )

            # the controller dies and comes back: requests keep flowing, none fails
            failures: list[int] = []
            stop = trio.Event()

            async def keep_asking() -> None:
                while not stop.is_set():
                    status, _ = await trio.to_thread.run_sync(
                        get, SHARED, INTERNAL, "shop.example.com"
                    )
                    if status != 200:
                        failures.append(status)
                    await trio.sleep(0.01)

            nursery.start_soon(keep_asking)
            controller.kill()
            await controller.wait()
            await trio.sleep(1.0)
            controller = await start(controller_command)
            api.put_object(route("shop", "web", "one"))  # the new controller's work arrives
            await served_by(SHARED, INTERNAL, "shop.example.com", "one")
            stop.set()
            assert failures == []

            # the Gateway goes: its VIP is pruned
            api.delete_object("Gateway", "web", "app")
            await eventually(
                lambda: (
                    not any(
                        s["metadata"]["name"] == vips["app/web"]["metadata"]["name"]
                        for s in api.objects("Service", NAMESPACE)
                    )
                ),
                "the VIP Service pruned",
            )
            nursery.cancel_scope.cancel()

    run_with_crds(main)


def test_a_gateway_moves_to_a_dedicated_proxy_and_back_without_a_failed_request(
    tmp_path: Path,
) -> None:
    """Clients follow the Gateway as a cluster would route them: to the dedicated proxy once
    its Deployment has a ready replica (the test plays the kubelet and marks it ready when the
    proxy's /readyz says so), otherwise to the shared pool through the VIP Service's target
    port. Neither move may fail a request."""
    discovery, edge_port, edge_admin = free_port(), free_port(), free_port()
    with_params = gateway("edge", edge_port, infrastructure=own_infrastructure())

    def target(api: ApiServer) -> tuple[str, int] | None:
        deployment = api.get("Deployment", "edge-coxswain", "app")
        if deployment is not None and (deployment.get("status") or {}).get("readyReplicas"):
            return DEDICATED, edge_port
        for service in api.objects("Service", NAMESPACE):
            if service["metadata"].get("annotations", {}).get(GATEWAY) == "app/edge":
                return SHARED, int(service["spec"]["ports"][0]["targetPort"])
        return None

    async def main(api: ApiServer) -> None:
        async with reaped() as start, trio.open_nursery() as nursery:
            ports = {n: await nursery.start(serve_echo, n) for n in ("one", "two")}
            for body in cluster_objects(ports, edge_port):
                api.put_object(body)
            api.put_object(gateway("edge", edge_port))  # shared, to begin with
            await start(controller(api, tmp_path, discovery))
            shared = await eventually(
                lambda: secret_files(
                    api, NAMESPACE, "coxswain-proxy-discovery-tls", tmp_path / "shared"
                ),
                "the shared pool's certificate",
            )
            await start(shared_proxy(discovery, shared, free_port()))
            where = await eventually(lambda: target(api), "the VIP Service")
            await served_by(*where, "fast.example.com", "one")

            answered: list[int] = []
            stop = trio.Event()

            async def keep_asking() -> None:
                while not stop.is_set():
                    place = target(api)
                    status = 0
                    if place is not None:
                        status, _ = await trio.to_thread.run_sync(get, *place, "fast.example.com")
                    answered.append(status)
                    await trio.sleep(0.01)

            nursery.start_soon(keep_asking)
            # to a dedicated proxy: it starts, becomes ready, then the pool lets go
            api.put_object(with_params)
            certs = await eventually(
                lambda: secret_files(api, "app", "edge-coxswain-discovery-tls", tmp_path / "e"),
                "the dedicated proxy's certificate",
            )
            command = await eventually(lambda: dedicated_command(api, certs), "Deployment")
            command[command.index("--admin-port") + 1] = str(edge_admin)
            await start(command)
            await eventually(
                lambda: get(DEDICATED, edge_admin, "admin", "/readyz")[0] == 200, "its /readyz"
            )
            deployment = api.get("Deployment", "edge-coxswain", "app")
            assert deployment is not None
            api.put_object({**deployment, "status": {"replicas": 1, "readyReplicas": 1}})
            await eventually(lambda: target(api) == (DEDICATED, edge_port), "the move")
            await eventually(
                lambda: (
                    not any(
                        s["metadata"].get("annotations", {}).get(GATEWAY) == "app/edge"
                        for s in api.objects("Service", NAMESPACE)
                    )
                ),
                "the shared pool letting go (its VIP Service pruned)",
            )
            # and back: the pool serves it again before the dedicated proxy is pruned
            api.put_object(gateway("edge", edge_port))
            await eventually(
                lambda: api.get("Deployment", "edge-coxswain", "app") is None,
                "the dedicated proxy pruned",
            )
            await served_by(*(target(api) or ("", 0)), "fast.example.com", "one")
            stop.set()
            assert len(answered) > 20
            assert set(answered) == {200}, [s for s in answered if s != 200]
            nursery.cancel_scope.cancel()

    run_with_crds(main)


def l4_gateway(name: str, tcp: int, udp: int, **spec: Any) -> list[dict[str, Any]]:
    """A Gateway ``app/name`` with a TCP and a UDP listener, a TCPRoute and a UDPRoute to the
    Services ``tcp`` and ``udp``."""

    def route(kind: str, section: str) -> dict[str, Any]:
        return {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": f"{name}-{section}", "namespace": "app"},
            "spec": {
                "parentRefs": [{"name": name, "sectionName": section}],
                "rules": [{"backendRefs": [{"name": section, "port": 80}]}],
            },
        }

    body = gateway(name, tcp, **spec)
    body["spec"]["listeners"] = [
        {"name": "tcp", "port": tcp, "protocol": "TCP"},
        {"name": "udp", "port": udp, "protocol": "UDP"},
    ]
    return [body, route("TCPRoute", "tcp"), route("UDPRoute", "udp")]


async def carries_tcp_and_udp(address: str, tcp: int, udp: int) -> None:
    """A TCP connection through ``address:tcp`` reaches the TCP echo and a datagram through
    ``address:udp`` the UDP echo, trying again until both do (the proxy may still be
    binding), within the test's timeout."""
    with trio.fail_after(TIMEOUT):
        while True:
            try:
                stream = await trio.open_tcp_stream(address, tcp)
            except OSError:
                await trio.sleep(0.1)
                continue
            async with stream:
                await stream.send_all(b"ping")
                if await read_exactly(stream, 8) == b"tcp:ping":
                    break
        client = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with client:
            await client.connect((address, udp))
            while True:
                await client.send(b"ping")
                with trio.move_on_after(0.5):
                    if await client.recv(100) == b"udp:ping":
                        return


def test_tcp_and_udp_routes_carry_traffic_on_the_shared_pool_and_a_dedicated_proxy(
    tmp_path: Path,
) -> None:
    discovery = free_port()
    ports = {name: free_port() for name in ("pool_tcp", "pool_udp", "edge_tcp", "edge_udp")}

    def internal(api: ApiServer, gateway: str) -> dict[str, int] | None:
        """The VIP Service's target port by protocol: the shared pool's internal ports."""
        for service in api.objects("Service", NAMESPACE):
            if service["metadata"].get("annotations", {}).get(GATEWAY) == gateway:
                found = {
                    p.get("protocol", "TCP"): int(p["targetPort"]) for p in service["spec"]["ports"]
                }
                return found if len(found) == 2 else None
        return None

    async def main(api: ApiServer) -> None:
        async with reaped() as start, trio.open_nursery() as nursery:
            for body in [
                *backend("tcp", await tcp_backend(nursery, "tcp")),
                *backend("udp", await udp_backend(nursery, "udp")),
                gateway_class(),
                own_parameters({"replicas": 1}),
                *l4_gateway("pool", ports["pool_tcp"], ports["pool_udp"]),
                *l4_gateway(
                    "edge", ports["edge_tcp"], ports["edge_udp"],
                    infrastructure=own_infrastructure(),
                ),
            ]:  # fmt: skip
                api.put_object(body)
            await start(
                controller(api, tmp_path, discovery, "--shared-vip-service-type", "ClusterIP")
            )
            shared_certs = await eventually(
                lambda: secret_files(
                    api, NAMESPACE, "coxswain-proxy-discovery-tls", tmp_path / "shared"
                ),
                "the shared pool's certificate Secret",
            )
            await start(shared_proxy(discovery, shared_certs, free_port()))
            edge_certs = await eventually(
                lambda: secret_files(api, "app", "edge-coxswain-discovery-tls", tmp_path / "edge"),
                "the dedicated proxy's certificate Secret",
            )
            await start(await eventually(lambda: dedicated_command(api, edge_certs), "Deployment"))
            pool = await eventually(lambda: internal(api, "app/pool"), "the pool's VIP ports")
            await carries_tcp_and_udp(SHARED, pool["TCP"], pool["UDP"])
            await carries_tcp_and_udp(DEDICATED, ports["edge_tcp"], ports["edge_udp"])
            for name in ("pool", "edge"):
                await eventually(
                    lambda name=name: (
                        conditions(api.get("Gateway", name, "app")).get("Programmed") == "True"
                    ),
                    f"{name} Programmed",
                    lambda name=name: api.get("Gateway", name, "app"),
                )
            nursery.cancel_scope.cancel()

    run_with_crds(main)


def test_gateway_api_installed_after_start_then_sigterm_hands_the_lease_back(
    tmp_path: Path,
) -> None:
    """An Ingress-only cluster gets the Gateway API CRDs while the controller runs: it starts
    serving Gateways without a restart. Then SIGTERM: it exits 0 and hands the Lease back."""
    health = free_port()

    async def main(api: ApiServer) -> None:
        command = coxswain(
            "controller", "--kubeconfig", str(api.kubeconfig(tmp_path / "kube")),
            "--namespace", NAMESPACE, "--discovery-port", str(free_port()),
            "--health-port", str(health), "--crd-probe-interval", "0.2",
        )  # fmt: skip
        process = await trio.lowlevel.open_process(command)
        try:
            await eventually(
                lambda: get("127.0.0.1", health, "health", "/readyz")[0] == 200, "leading"
            )
            api.install_crds(COXSWAIN_CRDS, GATEWAY_API_CRDS)
            for body in cluster_objects({"one": 1, "two": 2}, free_port()):
                api.put_object(body)
            await eventually(
                lambda: conditions(api.get("Gateway", "web", "app")).get("Accepted") == "True",
                "the Gateway accepted without a restart",
            )
            lease = api.get("Lease", "coxswain-controller", NAMESPACE)
            assert lease is not None
            assert lease["spec"]["holderIdentity"]
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(TIMEOUT):
                assert await process.wait() == 0
            lease = api.get("Lease", "coxswain-controller", NAMESPACE)
            assert lease is not None
            assert lease["spec"]["holderIdentity"] is None  # a standby may lead at once
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    with ApiServer() as api:
        trio.run(main, api)


def _samples(exposition: str) -> dict[str, float]:
    """Prometheus text exposition: the value of each sample without labels."""
    return {
        name: float(value)
        for line in exposition.splitlines()
        if line and not line.startswith("#") and "{" not in line
        for name, value in [line.rsplit(" ", 1)]
    }
