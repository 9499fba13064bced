"""compile.ingress.access.read_access: the backend protocols not implemented yet (matched
without regard to case) deny the paths as such, not as unknown protocols; the
``allowlist-source-range`` spelling is read as ``whitelist-source-range``
(docs/migrating-from-ingress-nginx.md)."""

from __future__ import annotations

import pytest

from coxswain.compile import SharedPool, build_state, compile
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, service

NGINX = "nginx.ingress.kubernetes.io/"


def _denied_and_allowed(annotations: dict[str, str]) -> tuple[str | None, list[str]]:
    shop = ingress("shop", rule("shop.example.com", path("/", "web")), annotations=annotations)
    snapshot = compile(build_state([INGRESS_CLASS, shop, *service("web")]), SharedPool()).snapshot
    actions = snapshot.ingress.hosts["shop.example.com"].paths[0].actions
    assert actions is not None
    return actions.denied, list(actions.allow_sources)


@pytest.mark.parametrize("protocol", ["fcgi", "FCGI", "auto_http", "AUTO_HTTP"])
def test_a_backend_protocol_not_implemented_yet_is_denied_as_such(protocol: str) -> None:
    assert _denied_and_allowed({NGINX + "backend-protocol": protocol}) == (
        f"annotation {NGINX}backend-protocol is not implemented by Coxswain yet",
        [],
    )


def test_an_unknown_backend_protocol_is_denied_as_unknown() -> None:
    assert _denied_and_allowed({NGINX + "backend-protocol": "bogus"}) == (
        f"annotation {NGINX}backend-protocol 'bogus' is not a backend protocol",
        [],
    )


def test_allowlist_source_range_is_read_as_the_whitelist() -> None:
    assert _denied_and_allowed({NGINX + "allowlist-source-range": "10.0.0.1/8"}) == (
        None,
        ["10.0.0.0/8"],
    )
