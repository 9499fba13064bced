"""A conformance scenario's cluster, as the offline compiler sees it.

The upstream suite applies its base manifests and one test's manifests to a cluster whose
GatewayClass names the implementation, then creates TLS Secrets and CA ConfigMaps in code
(:mod:`.certificates`). Here the same manifests (``manifests/``, read as they are, the class
placeholders filled in at load time) are compiled with the real compiler, with these local
stand-ins for what a cluster would add:

- the GatewayClass ``coxswain`` with Coxswain's controller name (the suite's
  ``--gateway-class``), which every ``{GATEWAY_CLASS_NAME}`` names;
- no Deployments: each is one echo server on 127.0.0.1 (:mod:`.echo`), and each Service that
  selects its pods gets an EndpointSlice naming that server, the Service's ports (by name) all
  on its port; an EndpointSlice of the manifests that a test fills with a Deployment's pods
  (``fill``) gets that echo the same way;
- a Deployment with ``TLS_SERVER_CERT`` (``echo-basic`` serving HTTPS) is an echo behind TLS
  only, with the certificate of the Secret its pods mount, and, with ``TLS_CLIENT_CACERTS``,
  asking clients for a certificate of the CA ConfigMap they mount (``tls``);
- the layer-4 pods (``TCP_ECHO_SERVER``, ``UDP_ECHO_SERVER``, ``coredns``) are the stand-ins
  of :mod:`.echo_l4` (``echoes``), the gRPC pods (``GRPC_ECHO_SERVER``) that of
  :mod:`.echo_grpc`; a TCP echo with ``TLS_SERVER_CERT`` is two, the plain one
  and ``<deployment>#tls``, which the Service port targeting ``TLS_PORT`` (8443) reaches;
- a VIP Service per Gateway in the controller's namespace, as the controller provisions them
  (docs/contracts.md, "Owned objects"): it is the compiler's memory of internal ports, so each
  Gateway listener port gets a free one from the shared pool's band, and its load-balancer
  address (127.0.0.1) becomes the Gateway's ``status.addresses``; the ``externalIPs`` that
  ``provision`` gives it (a Gateway's static addresses) are applied back to it before the
  compile, as the controller applies them before the Gateway's status is read;
- the addresses the suite substitutes for a Gateway's ``PLACEHOLDER_USABLE_ADDRS`` and
  ``PLACEHOLDER_UNUSABLE_ADDRS`` (its ``--usable-network-addresses`` and
  ``--unusable-network-addresses``): ``USABLE_ADDRESS`` and ``UNUSABLE_ADDRESS``, usable when a
  scenario's ``config`` sets ``gateway_address_ranges`` to a range holding the first only.

Compiled with ``SharedPool`` scope and the scenario's configuration (:func:`scenario_config`):
the snapshot's ``listener_health`` maps each listener to the internal port the proxy listens
on, which is all the client needs.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from coxswain.compile import CompileConfig, SharedPool, build_state, compile, status
from coxswain.compile.config import DEFAULT_GATEWAY_CONTROLLER
from coxswain.compile.gateway.vip import vip_service_name
from coxswain.compile.listing import status_list
from coxswain.compile.model.manifests import parse_manifests
from coxswain.compile.provision import provision
from coxswain.compile.snapshot_json import snapshot_to_data
from tests.conformance.certificates import suite_objects
from tests.conformance.echo_l4 import TLS_SUFFIX, Echo
from tests.integration.proxy_harness import free_port

__all__ = [
    "GATEWAY_ADDRESS", "MANIFESTS", "UNUSABLE_ADDRESS", "USABLE_ADDRESS", "Compiled", "World",
    "load_world", "scenario_config",
]  # fmt: skip

MANIFESTS: Final = Path(__file__).parent / "manifests"
GATEWAY_CLASS: Final = "coxswain"
GATEWAY_ADDRESS: Final = "127.0.0.1"
CONFIG: Final = CompileConfig(gateway_api_channel="experimental")
USABLE_ADDRESS: Final = "192.0.2.10"  # TEST-NET-1 (RFC 5737)
UNUSABLE_ADDRESS: Final = "198.51.100.10"  # TEST-NET-2 (RFC 5737)
_FAKE_ADDRESS_TYPE: Final = "test/fake-invalid-type"
# The upper part of the shared pool's band (30000-32767): the suite's fixed_ports tests take
# the lowest ports of it, and the kernel's ephemeral ports start above it (32768).
_BAND: Final = range(31000, 32768)
_GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
_TLS_PORT: Final = "8443"  # echo-basic's TLS_PORT default, the TCP echo's TLS port

Body = dict[str, Any]


def _key(body: Body) -> str:
    meta = body.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _read(relative: str) -> list[Body]:
    """One manifest file, its placeholders filled as the suite's applier fills them."""
    text = (MANIFESTS / relative).read_text()
    text = text.replace("{GATEWAY_CLASS_NAME}", GATEWAY_CLASS)
    text = text.replace("{GATEWAY_CONTROLLER_NAME}", DEFAULT_GATEWAY_CONTROLLER)
    parsed = parse_manifests(text, relative)
    if not isinstance(parsed, list):
        raise TypeError(f"{relative}: {parsed}")
    bodies = [item.body for item in parsed if isinstance(item.body, dict)]
    for body in bodies:
        if body["kind"] == "Gateway" and body["spec"].get("addresses"):
            body["spec"]["addresses"] = _overlay_addresses(body["spec"]["addresses"])
    return bodies


def _overlay_addresses(addresses: list[Body]) -> list[Body]:
    """The suite's address overlay (``prepareGateway``): the ``test/fake-invalid-type``
    entries kept, then the unusable address if asked for, then the usable one."""
    values = {a.get("value") for a in addresses}
    overlay = [a for a in addresses if a.get("type") == _FAKE_ADDRESS_TYPE]
    for placeholder, value in (
        ("PLACEHOLDER_UNUSABLE_ADDRS", UNUSABLE_ADDRESS),
        ("PLACEHOLDER_USABLE_ADDRS", USABLE_ADDRESS),
    ):
        if placeholder in values:
            overlay.append({"type": "IPAddress", "value": value})
    return overlay


def scenario_config(overrides: dict[str, Any]) -> CompileConfig:
    """The compile configuration of a scenario: ``CONFIG`` with its ``config`` fields set (a
    list becomes the tuple ``CompileConfig`` holds)."""
    return dataclasses.replace(
        CONFIG, **{k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
    )


def band_port() -> int:
    """A port of the band nothing is bound to right now on 127.0.0.1, never one handed out
    before in this process."""
    return free_port(_BAND)


@dataclass(frozen=True, slots=True)
class Compiled:
    """What the compiler made of a world: the snapshot document, every status (the object
    with its ``metadata.generation`` and ``status``) by ``(kind, namespace/name)``, and the
    objects the controller would own (``provision``)."""

    snapshot: Body
    statuses: dict[tuple[str, str], Body]
    provisioned: tuple[Body, ...]

    def target_port(self, gateway: str, listener: str) -> int:
        """The internal port of one Gateway listener (``listener_health``)."""
        for health in self.snapshot["listener_health"]:
            if health["gateway"] == gateway and health["listener"] == listener:
                return int(health["target_port"])
        raise LookupError(f"no listener {gateway} {listener} in the snapshot")


@dataclass(slots=True)
class World:
    """The objects of one scenario, the Deployments taken out: ``deployments`` holds the pod
    labels of each by ``namespace/name``; ``fill`` names the Deployment whose pods a test puts
    in an EndpointSlice of its manifests, by the slice's ``namespace/name``; ``tls`` the
    echoes that serve TLS, with the Secret they serve and the CA ConfigMap they check
    clients with (None: they ask for no client certificate); ``echoes`` every echo to run, by
    name (a Deployment's ``namespace/name``, or that and ``#tls``); ``external_ips`` the
    static addresses the controller gave each Gateway's VIP Service."""

    objects: list[Body]
    deployments: dict[str, dict[str, str]]
    fill: dict[str, str]
    tls: dict[str, tuple[str, str | None]]
    echoes: dict[str, Echo]
    config: CompileConfig = CONFIG
    external_ips: dict[str, list[str]] = field(default_factory=dict)

    def apply(self, relative: str) -> None:
        """Apply one more manifest file: its objects replace those of the same kind and name."""
        added = _read(relative)
        names = {(b["kind"], _key(b)) for b in added}
        self.objects = [b for b in self.objects if (b["kind"], _key(b)) not in names] + added

    def compile(
        self, echo_ports: dict[str, int], vip_ports: dict[tuple[str, int], int]
    ) -> Compiled:
        """Compile with the echoes on ``echo_ports`` (by Deployment) and each Gateway listener
        port on ``vip_ports[(gateway, port)]``, once the VIP Services carry the static
        addresses ``provision`` gives them."""
        while True:
            state = build_state(self._bodies(echo_ports, vip_ports))
            provisioned = tuple(json.loads(o.body) for o in provision(state, self.config).objects)
            applied = {
                gateway: ips
                for gateway, _ in vip_ports
                if (ips := _external_ips(provisioned, gateway, self.config.namespace))
            }
            if applied == self.external_ips:
                break
            self.external_ips = applied
        result = compile(state, SharedPool(), self.config)
        statuses = {
            (item["kind"], _key(item)): item
            for item in status_list(status(state, self.config))["items"]
        }
        return Compiled(snapshot_to_data(result.snapshot), statuses, provisioned)

    def _bodies(
        self, echo_ports: dict[str, int], vip_ports: dict[tuple[str, int], int]
    ) -> list[Body]:
        """The objects to compile: the world's, the suite's, and the stand-ins."""
        return [
            *(
                b
                for b in self.objects
                if not (b["kind"] == "EndpointSlice" and _key(b) in self.fill)
            ),
            *suite_objects(),
            {
                "apiVersion": f"{_GATEWAY_GROUP}/v1",
                "kind": "GatewayClass",
                "metadata": {"name": GATEWAY_CLASS},
                "spec": {"controllerName": DEFAULT_GATEWAY_CONTROLLER},
            },
            *self._endpoint_slices(echo_ports),
            *_vip_services(vip_ports, self.external_ips, self.config.namespace),
        ]

    def copy(self, kind: str, name: str, to: str) -> None:
        """Create (or replace) ``to`` as a copy of an object of the world or of the suite's
        setup, as a test creates one from another's data."""
        source = next(
            b for b in [*self.objects, *suite_objects()] if (b["kind"], _key(b)) == (kind, name)
        )
        namespace, new_name = to.split("/")
        body = copy.deepcopy(source)
        body["metadata"] = {"namespace": namespace, "name": new_name}
        self.objects = [b for b in self.objects if (b["kind"], _key(b)) != (kind, to)] + [body]

    def delete(self, kind: str, name: str) -> None:
        """Delete one object."""
        self.objects = [b for b in self.objects if (b["kind"], _key(b)) != (kind, name)]

    def patch(self, kind: str, name: str, field: list[str | int], value: object) -> None:
        """Set one field of an object (a last ``-`` appends to a list, as in JSON Patch), its
        generation bumped as the API server bumps it on a change of ``spec``."""
        for body in self.objects:
            if body["kind"] == kind and _key(body) == name:
                parent = body
                for step in field[:-1]:
                    parent = parent[step]
                if field[-1] == "-":
                    parent.append(value)
                else:
                    parent[field[-1]] = value
                body["metadata"]["generation"] = body["metadata"].get("generation", 1) + 1
                return
        raise LookupError(f"no {kind} {name}")

    def listener(self, gateway: str, name: str | None) -> tuple[str, int]:
        """The name and port of a Gateway's listener: the one named, else its first, as the
        suite picks the port of a Gateway's address (``WaitForGatewayAddress``)."""
        for body in self.objects:
            if body["kind"] == "Gateway" and _key(body) == gateway:
                listeners = body["spec"]["listeners"]
                found = [x for x in listeners if x["name"] == name] or listeners[:1]
                return found[0]["name"], int(found[0]["port"])
        raise LookupError(f"no Gateway {gateway}")

    def listener_ports(self) -> set[tuple[str, int]]:
        """Every (Gateway, listener port) of the Gateways and ListenerSets, for VIP ports."""
        pairs: set[tuple[str, int]] = set()
        for body in self.objects:
            spec = body.get("spec") or {}
            if body["kind"] == "Gateway":
                owner = _key(body)
            elif body["kind"] == "ListenerSet":
                parent = spec.get("parentRef") or {}
                namespace = parent.get("namespace") or body["metadata"].get("namespace", "")
                owner = f"{namespace}/{parent.get('name', '')}"
            else:
                continue
            pairs.update((owner, int(listener["port"])) for listener in spec.get("listeners", []))
        return pairs

    def _endpoint_slices(self, echo_ports: dict[str, int]) -> list[Body]:
        """A slice per Service that selects a Deployment's pods, and the slices to fill."""
        slices = [
            {
                **body,
                "endpoints": [_endpoint()],
                "ports": [{**p, "port": echo_ports[self.fill[_key(body)]]} for p in body["ports"]],
            }
            for body in self.objects
            if body["kind"] == "EndpointSlice" and _key(body) in self.fill
        ]
        for body in self.objects:
            deployment = self._selected(body) if body["kind"] == "Service" else None
            if deployment is None:
                continue
            namespace, name = _key(body).split("/")
            secured = deployment + TLS_SUFFIX
            slices.append(
                {
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "namespace": namespace,
                        "name": f"{name}-local",
                        "labels": {"kubernetes.io/service-name": name},
                    },
                    "addressType": "IPv4",
                    "endpoints": [_endpoint()],
                    "ports": [
                        {
                            "name": p.get("name", ""),
                            "port": echo_ports[
                                secured
                                if secured in self.echoes
                                and str(p.get("targetPort", p["port"])) == _TLS_PORT
                                else deployment
                            ],
                            "protocol": p.get("protocol", "TCP"),
                        }
                        for p in body["spec"].get("ports", [])
                    ],
                }
            )
        return slices

    def _selected(self, service: Body) -> str | None:
        """The Deployment whose pods the Service selects, if any."""
        selector = service["spec"].get("selector") or {}
        namespace = service["metadata"]["namespace"]
        for key, labels in self.deployments.items():
            same = key.startswith(f"{namespace}/")
            if same and selector and all(labels.get(k) == v for k, v in selector.items()):
                return key
        return None


def _endpoint() -> Body:
    return {"addresses": [GATEWAY_ADDRESS], "conditions": {"ready": True}}


def _vip_services(
    vip_ports: dict[tuple[str, int], int], external_ips: dict[str, list[str]], namespace: str
) -> list[Body]:
    by_gateway: dict[str, list[tuple[int, int]]] = {}
    for (gateway, port), target in vip_ports.items():
        by_gateway.setdefault(gateway, []).append((port, target))
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"namespace": namespace, "name": vip_service_name(*gateway.split("/"))},
            "spec": {
                "type": "LoadBalancer",
                "ports": [
                    {"name": f"port-{port}", "port": port, "targetPort": target, "protocol": "TCP"}
                    for port, target in sorted(ports)
                ],
                "externalIPs": external_ips.get(gateway, []),
            },
            "status": {"loadBalancer": {"ingress": [{"ip": GATEWAY_ADDRESS}]}},
        }
        for gateway, ports in by_gateway.items()
    ]


def _external_ips(provisioned: tuple[Body, ...], gateway: str, namespace: str) -> list[str]:
    """The ``externalIPs`` ``provision`` gives the VIP Service of ``gateway``."""
    name = vip_service_name(*gateway.split("/"))
    for body in provisioned:
        if body["kind"] == "Service" and _key(body) == f"{namespace}/{name}":
            return list(body["spec"].get("externalIPs", []))
    return []


def _serving(deployment: Body) -> tuple[str, str | None] | None:
    """The Secret an ``echo-basic`` Deployment serves TLS with and the CA ConfigMap it checks
    clients with, from the volumes its pods mount; None when it serves no TLS."""
    spec = deployment["spec"]["template"]["spec"]
    env = _env(deployment)
    if "TLS_SERVER_CERT" not in env:
        return None
    namespace = deployment["metadata"]["namespace"]
    volumes = spec.get("volumes", [])
    secret = next(v["secret"]["secretName"] for v in volumes if "secret" in v)
    ca = next((v["configMap"]["name"] for v in volumes if "configMap" in v), None)
    client_ca = f"{namespace}/{ca}" if ca and "TLS_CLIENT_CACERTS" in env else None
    return f"{namespace}/{secret}", client_ca


def _env(deployment: Body) -> dict[str, str]:
    """The environment of a Deployment's containers (a value from a field reads as "")."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return {e["name"]: str(e.get("value", "")) for c in containers for e in c.get("env", [])}


def _echoes(
    deployment: Body,
) -> tuple[dict[str, Echo], dict[str, tuple[str, str | None]]]:
    """The echoes standing in for a Deployment's pods, and those of them serving TLS."""
    key, env = _key(deployment), _env(deployment)
    service = env.get("SERVICE_NAME", "")
    serving = _serving(deployment)
    containers = deployment["spec"]["template"]["spec"]["containers"]
    images = " ".join(c.get("image", "") for c in containers)
    if "/coredns" in images:
        return {key: Echo("dns")}, {}
    if "UDP_ECHO_SERVER" in env:
        return {key: Echo("udp", service)}, {}
    if "GRPC_ECHO_SERVER" in env:
        return {key: Echo("grpc", service)}, {}
    if "TCP_ECHO_SERVER" in env:
        if serving is None:
            return {key: Echo("tcp", service)}, {}
        secured = key + TLS_SUFFIX
        return {key: Echo("tcp", service), secured: Echo("tcp", service)}, {secured: serving}
    return {key: Echo("http", service)}, {} if serving is None else {key: serving}


def load_world(
    manifests: list[str], fill: dict[str, str] | None = None, config: CompileConfig = CONFIG
) -> World:
    """The base manifests and a test's, without their Deployments."""
    objects = [body for relative in ["base/manifests.yaml", *manifests] for body in _read(relative)]
    deployments = [b for b in objects if b["kind"] == "Deployment"]
    echoes: dict[str, Echo] = {}
    tls: dict[str, tuple[str, str | None]] = {}
    for body in deployments:
        runs, serving = _echoes(body)
        echoes.update(runs)
        tls.update(serving)
    return World(
        [b for b in objects if b["kind"] != "Deployment"],
        {_key(b): b["spec"]["template"]["metadata"].get("labels", {}) for b in deployments},
        dict(fill or {}),
        tls,
        echoes,
        config,
    )
