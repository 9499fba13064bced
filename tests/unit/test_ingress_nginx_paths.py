"""ingress-nginx's path and redirect annotations, compiled and decided by ``route.select``
(docs/migrating-from-ingress-nginx.md; the live proxy runs them in
tests/integration/test_ingress_nginx_live.py)."""

from __future__ import annotations

import pytest

from coxswain.compile import SharedPool, build_state, compile
from coxswain.route import Decision, RequestHead, RouteTable, select
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, table_of

NGINX = "nginx.ingress.kubernetes.io/"
OURS = "coxswain-labs.dev/"


def decide(table: RouteTable, host: str, target: str, *, tls: bool = False) -> Decision:
    head = RequestHead(port=80, method="GET", target=target, host=host, tls=tls, sni=None)
    return select(table, head)


def annotated(annotations: dict[str, str], *paths: dict[str, object]) -> RouteTable:
    return table_of(
        ingress("shop", rule("shop.example.com", *paths), annotations=annotations),
        ingress("other", rule("shop.example.com", path("/static", "b"))),
    )


@pytest.mark.parametrize("prefix", [NGINX, OURS])
def test_rewrite_target_replaces_the_path_with_capture_groups_and_keeps_the_query(
    prefix: str,
) -> None:
    table = annotated(
        {prefix + "rewrite-target": "/$2/x/$1"},
        path("/api/(v[0-9]+)/(.*)", "a", "ImplementationSpecific"),
    )
    decision = decide(table, "shop.example.com", "/API/v2/users/7?q=1")
    assert (decision.status, decision.backends[0].service) == (None, "a")
    assert decision.path == "/users/7/x/v2?q=1"


def test_use_regex_matches_from_the_start_case_insensitively_before_prefixes() -> None:
    table = annotated(
        {NGINX + "use-regex": "true"}, path("/st[a-z]+/[0-9]+$", "a", "ImplementationSpecific")
    )
    assert decide(table, "shop.example.com", "/STatic/42").backends[0].service == "a"
    assert decide(table, "shop.example.com", "/static/42/x").backends[0].service == "b"
    assert decide(table, "shop.example.com", "/x/static/42").status == 404
    # without a rewrite the path is forwarded as received
    assert decide(table, "shop.example.com", "/STatic/42").path == "/STatic/42"


def test_a_target_with_a_query_puts_the_request_query_after_it() -> None:
    table = annotated({NGINX + "rewrite-target": "/n?a=$1"}, path("/(.*)", "a", "Prefix"))
    assert decide(table, "shop.example.com", "/k?b=2").path == "/n?a=k&b=2"
    table = annotated({NGINX + "rewrite-target": "/n?"}, path("/(.*)", "a", "Prefix"))
    assert decide(table, "shop.example.com", "/k?b=2").path == "/n"


def test_x_forwarded_prefix_is_sent_with_a_rewrite_and_upstream_vhost_replaces_host() -> None:
    table = annotated(
        {
            NGINX + "rewrite-target": "/$1",
            NGINX + "x-forwarded-prefix": "/shop",
            NGINX + "upstream-vhost": "internal.svc",
        },
        path("/shop/(.*)", "a", "ImplementationSpecific"),
    )
    decision = decide(table, "shop.example.com", "/shop/cart")
    assert (decision.path, decision.host) == ("/cart", "internal.svc")
    assert decision.action is not None
    assert decision.action.request_headers is not None
    assert list(decision.action.request_headers.set) == [("x-forwarded-prefix", "/shop")]


def test_app_root_redirects_only_the_root() -> None:
    table = annotated({NGINX + "app-root": "/app1"}, path("/", "a"))
    root = decide(table, "shop.example.com", "/")
    assert (root.status, root.redirect) == (302, "http://shop.example.com/app1")
    assert decide(table, "shop.example.com", "/page").status is None


@pytest.mark.parametrize(
    ("annotations", "status", "location"),
    [
        ({"permanent-redirect": "https://new.example.com"}, 301, "https://new.example.com"),
        (
            {
                "permanent-redirect": "https://new.example.com$request_uri",
                "permanent-redirect-code": "308",
            },
            308,
            "https://new.example.com/a/b?c=1",
        ),
        ({"temporal-redirect": "https://tmp.example.com/"}, 302, "https://tmp.example.com/"),
        (
            {
                "temporal-redirect": "/elsewhere",
                "temporal-redirect-code": "307",
                "permanent-redirect": "/x",
            },
            307,
            "/elsewhere",
        ),
    ],
)
def test_permanent_and_temporal_redirects_answer_with_their_code(
    annotations: dict[str, str], status: int, location: str
) -> None:
    table = annotated({NGINX + k: v for k, v in annotations.items()}, path("/", "a"))
    decision = decide(table, "shop.example.com", "/a/b?c=1")
    assert (decision.status, decision.redirect) == (status, location)


def test_force_ssl_redirect_redirects_without_a_tls_section() -> None:
    table = annotated({NGINX + "force-ssl-redirect": "true"}, path("/", "a"))
    decision = decide(table, "shop.example.com", "/p?q")
    assert (decision.status, decision.redirect) == (308, "https://shop.example.com/p?q")
    assert decide(table, "shop.example.com", "/p", tls=True).status is None


def test_from_to_www_redirect_adds_the_partner_host() -> None:
    table = annotated({NGINX + "from-to-www-redirect": "true"}, path("/", "a"))
    decision = decide(table, "www.shop.example.com", "/p/?x=1")
    assert (decision.status, decision.redirect) == (308, "http://shop.example.com/p/?x=1")
    assert decide(table, "www.shop.example.com", "/p/").redirect == "http://shop.example.com/p"
    assert decide(table, "shop.example.com", "/p").status is None


def test_server_alias_serves_the_first_host_under_more_names() -> None:
    table = annotated(
        {NGINX + "server-alias": "alias.example.com, shop.example.com"}, path("/", "a")
    )
    assert decide(table, "alias.example.com", "/static/x").backends[0].service == "b"
    assert decide(table, "alias.example.com", "/").backends[0].service == "a"


def diagnostics(annotations: dict[str, str], *paths: dict[str, object]) -> list[tuple[str, str]]:
    shop = ingress("shop", rule("shop.example.com", *paths), annotations=annotations)
    found = compile(build_state([INGRESS_CLASS, shop]), SharedPool()).diagnostics
    return [(d.reason, d.field) for d in found if d.reason != "BackendNotFound"]


def test_a_bad_value_drops_that_annotation_only() -> None:
    assert diagnostics(
        {NGINX + "permanent-redirect": "ftp://x", NGINX + "app-root": "relative"},
        path("/", "a"),
    ) == [
        ("InvalidAnnotation", f"metadata.annotations[{NGINX + 'app-root'!r}]"),
        ("InvalidAnnotation", f"metadata.annotations[{NGINX + 'permanent-redirect'!r}]"),
    ]


def test_a_pattern_re2_refuses_is_not_served_and_a_missing_group_drops_the_rewrite() -> None:
    found = diagnostics(
        {NGINX + "rewrite-target": "/$2"},
        path("/(a", "a", "ImplementationSpecific"),
        path("/(b)", "a", "ImplementationSpecific"),
    )
    assert [r for r, _ in found] == ["InvalidRegex", "InvalidAnnotation"]


def test_timeouts_and_next_upstream_become_the_decisions_policy() -> None:
    table = annotated(
        {
            NGINX + "proxy-connect-timeout": "3",
            NGINX + "proxy-read-timeout": "120",
            NGINX + "proxy-send-timeout": "7",
            NGINX + "proxy-next-upstream": "error http_502 http_504 non_idempotent",
            NGINX + "proxy-next-upstream-timeout": "9",
        },
        path("/", "a"),
    )
    decision = decide(table, "shop.example.com", "/x")
    assert decision.timeouts == (3.0, 120.0, 7.0)
    assert decision.action is not None
    retry = decision.action.retry
    assert retry is not None
    assert (list(retry.codes), retry.attempts, retry.backoff) == ([502, 504], 2, 0.0)
    assert decision.action.request_timeout == 9.0
    plain = decide(table, "shop.example.com", "/static/x")
    assert (plain.timeouts, plain.action) == (None, None)


def test_off_means_one_try_and_bad_values_are_dropped() -> None:
    table = annotated({NGINX + "proxy-next-upstream": "off"}, path("/", "a"))
    retry = decide(table, "shop.example.com", "/").action.retry  # type: ignore[union-attr]
    assert retry is not None
    assert retry.attempts == 0
    assert [
        r
        for r, _ in diagnostics(
            {
                NGINX + "proxy-read-timeout": "-1",
                NGINX + "proxy-next-upstream": "error http_999",
                NGINX + "proxy-next-upstream-tries": "many",
            },
            path("/", "a"),
        )
    ] == ["InvalidAnnotation"] * 3
