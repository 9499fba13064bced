"""Hosts an Ingress adds (``compile.ingress.aliases``; ingress-nginx's ``server-alias`` and
``from-to-www-redirect``, docs/migrating-from-ingress-nginx.md): the www partner of each rule
host, none for wildcards, and the exact finding for an alias that is not served."""

from __future__ import annotations

from typing import Any

import pytest

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.keys import ObjectKey
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, service

NGINX = "nginx.ingress.kubernetes.io/"


def compiled(*bodies: dict[str, Any]) -> tuple[dict[str, Any], list[Diagnostic]]:
    result = compile(build_state([INGRESS_CLASS, *bodies, *service("a")]), SharedPool())
    return dict(result.snapshot.ingress.hosts), list(result.diagnostics)


@pytest.mark.parametrize(
    ("host", "partner"),
    [
        ("shop.example.com", "www.shop.example.com"),
        ("www.shop.example.com", "shop.example.com"),
        ("wwwshop.example.com", "www.wwwshop.example.com"),
    ],
)
def test_the_www_partner_redirects_to_the_rule_host(host: str, partner: str) -> None:
    www = {NGINX + "from-to-www-redirect": "true"}
    hosts, _ = compiled(ingress("shop", rule(host, path("/", "a")), annotations=www))
    assert sorted(hosts) == sorted([host, partner])
    redirect = hosts[partner].default
    assert redirect is not None
    assert redirect.actions is not None
    assert redirect.actions.host_redirect == host


def test_a_wildcard_or_catch_all_host_has_no_www_partner() -> None:
    www = {NGINX + "from-to-www-redirect": "true"}
    hosts, _ = compiled(
        ingress("wild", rule("*.example.com", path("/", "a")), annotations=www),
        ingress("any", rule(None, path("/x", "a")), annotations=www),
    )
    assert sorted(hosts) == ["*", "*.example.com"]


def test_an_alias_without_a_rule_host_to_copy_is_reported_on_its_annotation() -> None:
    body = ingress(
        "any", rule(None, path("/", "a")), annotations={NGINX + "server-alias": "b.example.com"}
    )
    hosts, found = compiled(body)
    assert "b.example.com" not in hosts
    assert [d for d in found if d.reason != "BackendNotFound"] == [
        Diagnostic(
            key=ObjectKey(kind="Ingress", namespace="apps", name="any"),
            field=f"metadata.annotations[{NGINX + 'server-alias'!r}]",
            severity=Severity.WARNING,
            reason="InvalidAnnotation",
            message="alias 'b.example.com' is not served: the Ingress has no rule host to copy",
        )
    ]
