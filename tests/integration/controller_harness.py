"""The controller for end-to-end tests: its settings against the API emulator, and a shared proxy
in process subscribed to its discovery port with the certificate the controller issued."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import trio

from coxswain.compile import CompileConfig
from coxswain.compile.scope import SharedPool
from coxswain.shell.controller import ControllerSettings
from coxswain.shell.discovery.tls import ClientCredentials
from coxswain.shell.proxy import discovery_feed, serve_feed

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.shell.control.kube import Resource
    from coxswain.shell.dataplane.server import ProxyConfig
    from tests.apiserver import ApiServer


NAMESPACE = "coxswain-system"
PROXY = "127.0.0.5"  # the Gateway's internal port 30000 is fixed: an address of its own
TIMEOUT = 30


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Poll ``check`` (the emulator's store, read directly) until it holds."""
    with trio.fail_after(TIMEOUT):
        while not check():  # noqa: ASYNC110 - the store has no event to wait on
            await trio.sleep(0.05)
    assert check(), what


def credentials(api: ApiServer) -> ClientCredentials:
    secret = api.get("Secret", "coxswain-proxy-discovery-tls", NAMESPACE)
    assert secret is not None
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    return ClientCredentials(
        cert_pem=data["tls.crt"], key_pem=data["tls.key"], ca_pem=data["ca.crt"]
    )


async def start_shared_proxy(
    nursery: trio.Nursery, api: ApiServer, discovery: int, config: ProxyConfig
) -> None:
    """An in-process shared proxy subscribed to the controller's discovery port with the
    certificate from the pool's Secret."""
    feed = discovery_feed(
        f"127.0.0.1:{discovery}", SharedPool(), node_id="p", credentials=credentials(api)
    )
    await nursery.start(
        lambda task_status: serve_feed(
            feed, SharedPool(), config, admin_port=None, task_status=task_status
        )
    )


def settings(*, gateway_api: bool = True) -> ControllerSettings:
    return ControllerSettings(
        compile=CompileConfig(namespace=NAMESPACE, gateway_api=gateway_api),
        identity="controller-a",
        discovery_bind="127.0.0.1",
        discovery_port=0,
        health_port=None,
        debounce=(0.02, 0.2),
        crd_probe_every=0.2,
        lease_seconds=3,
    )


class EachChange:
    """An informer's sink (``informers.Sink``) that hands every change, a list page's one by
    one, to ``on_change``."""

    def __init__(
        self, on_change: Callable[[Resource, tuple[str, str], dict[str, Any] | None], None]
    ) -> None:
        self._on_change = on_change

    def event(self, resource: Resource, key: tuple[str, str], body: dict[str, Any] | None) -> None:
        self._on_change(resource, key, body)

    async def page(
        self, resource: Resource, changes: list[tuple[tuple[str, str], dict[str, Any] | None]]
    ) -> None:
        for key, body in changes:
            self._on_change(resource, key, body)
