"""An Ingress path's redirects and rewrite at their edges (``route.ingress_actions``;
ingress-nginx's from-to-www-redirect, permanent/temporal-redirect variables, rewrite-target's
groups and query; docs/migrating-from-ingress-nginx.md)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pyrsistent import pvector

from coxswain.compile.snapshot import (
    Backend,
    IngressActions,
    PathMatch,
    PathRule,
    RouteAction,
    RouteRef,
)
from coxswain.route.ingress_actions import Answer, answer, forwarding, rewrite_path

REF = RouteRef("Ingress", "apps", "web", "spec.rules[0].http.paths[0]")
BACKEND = Backend(namespace="apps", service="web", port=80)


@pytest.mark.parametrize(
    ("host_header", "location"),
    [
        ("shop.example.com", "http://www.shop.example.com/p"),
        ("shop.example.com:8080", "http://www.shop.example.com:8080/p"),
        ("[::1]:8080", "http://www.shop.example.com:8080/p"),
    ],
)
def test_the_www_redirect_keeps_the_port_the_client_named(host_header: str, location: str) -> None:
    actions = IngressActions(host_redirect="www.shop.example.com")
    found = answer(
        actions,
        scheme="http",
        host="shop.example.com",
        host_header=host_header,
        path="/p/",
        query="",
    )
    assert found == Answer(308, location, f"from-to-www-redirect to {location}")


@given(query=st.sampled_from(["", "?", "?a", "?a=1", "?ab"]))
@example(query="?a")
def test_redirect_variables_take_the_request_s_parts(query: str) -> None:
    actions = IngressActions(
        redirect="https://x$request_uri|$uri|$args|$is_args|$host|$http_host|$scheme|$other",
        redirect_status=301,
    )
    found = answer(
        actions,
        scheme="https",
        host="shop.example.com",
        host_header="shop:1",
        path="/p",
        query=query,
    )
    args = query[1:]
    location = (
        f"https://x/p{query}|/p|{args}|{'?' if args else ''}|shop.example.com|shop:1|https|$other"
    )
    assert found == Answer(301, location, f"redirected to {location}")


@pytest.mark.parametrize(
    ("target", "groups", "query", "rewritten"),
    [
        ("/new/$1", ("a",), "", "/new/a"),
        ("new/$1", ("a",), "?q", "/new/a?q"),
        ("/$0/$2/$3", ("a", "b"), "", "//b/"),
        ("/n?x=1", (), "?b=2", "/n?x=1&b=2"),
        ("/n?x=1", (), "?", "/n?x=1"),
        ("/n?x=1", (), "?b", "/n?x=1&b"),
        ("/n?", (), "?b", "/n"),
    ],
)
def test_rewrite_target_groups_and_query(
    target: str, groups: tuple[str, ...], query: str, rewritten: str
) -> None:
    assert rewrite_path(target, groups, query) == rewritten


def test_a_retry_forwards_to_the_path_s_own_backend() -> None:
    rule = PathRule(
        path="/",
        match=PathMatch.PREFIX,
        backend=BACKEND,
        route=REF,
        actions=IngressActions(next_upstream_tries=3, next_upstream_timeout=2.0),
    )
    sent = forwarding(rule, None, host_header="shop", path="/p", query="?q")
    assert (sent.host, sent.target) == ("shop", "/p?q")
    assert sent.action is not None
    assert sent.action == RouteAction(
        route=REF,
        backends=pvector([BACKEND]),
        retry=sent.action.retry,
        request_timeout=2.0,
    )
    assert sent.action.retry is not None
    assert sent.action.retry.attempts == 2
