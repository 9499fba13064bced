"""ingress-nginx canary Ingresses: their precedence per request (``route.canary``) and how
they attach to main Ingresses (``compile.ingress.canary``)."""

from __future__ import annotations

import pytest

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot import Backend, Canary, RouteRef
from coxswain.route import RequestHead, select
from coxswain.route.canary import CanaryCheck
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, service, table_of

NGINX = "nginx.ingress.kubernetes.io/"
BACKEND = Backend(namespace="apps", service="b", port=80)
REF = RouteRef("Ingress", "apps", "canary", "spec.rules[0].http.paths[0]")


def check(**rules: object) -> CanaryCheck:
    return CanaryCheck(Canary(backend=BACKEND, route=REF, **rules))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rules", "headers", "expected"),
    [
        ({"header": "X-Canary"}, [(b"x-canary", b"always")], True),
        ({"header": "X-Canary"}, [(b"X-Canary", b"never")], False),
        ({"header": "X-Canary"}, [(b"x-canary", b"maybe")], None),
        ({"header": "X-Canary", "header_value": "v2"}, [(b"x-canary", b"v2")], True),
        ({"header": "X-Canary", "header_value": "v2"}, [(b"x-canary", b"always")], None),
        ({"header": "X-Canary", "header_pattern": "^b[0-9]"}, [(b"x-canary", b"b7z")], True),
        ({"header": "X-Canary", "header_pattern": "^b[0-9]"}, [(b"x-canary", b"never")], None),
        (
            {"header": "X-Canary", "header_value": "v2", "header_pattern": "."},
            [(b"x-canary", b"v3")],
            None,
        ),
        ({"cookie": "try"}, [(b"cookie", b"a=1; try=always")], True),
        ({"cookie": "try"}, [(b"cookie", b"try=never")], False),
        ({"cookie": "try"}, [(b"cookie", b"try=x")], None),
        # the header decides before the cookie; a header that decides nothing leaves it
        (
            {"header": "X-Canary", "cookie": "try"},
            [(b"x-canary", b"never"), (b"cookie", b"try=always")],
            False,
        ),
        (
            {"header": "X-Canary", "cookie": "try"},
            [(b"x-canary", b"other"), (b"cookie", b"try=always")],
            True,
        ),
        ({"header": "X-Canary", "cookie": "try"}, [], None),
    ],
)
def test_precedence_is_ingress_nginx_s(
    rules: dict[str, object], headers: list[tuple[bytes, bytes]], expected: bool | None
) -> None:
    assert check(**rules).choice(tuple(headers)) is expected


def world(canary_annotations: dict[str, str], canary_path: str = "/") -> object:
    main = ingress("main", rule("shop.example.com", path("/", "a")))
    canary = ingress(
        "canary",
        rule("shop.example.com", path(canary_path, "b")),
        annotations={NGINX + "canary": "true", **canary_annotations},
    )
    return main, canary


def test_a_canary_weighs_the_main_path_and_serves_nothing_of_its_own() -> None:
    main, canary = world({NGINX + "canary-weight": "30", NGINX + "canary-by-header": "X-Canary"})
    table = table_of(main, canary)  # type: ignore[arg-type]
    decision = select(
        table, RequestHead(port=80, method="GET", target="/", host="shop.example.com")
    )
    assert [(b.service, b.weight) for b in decision.backends] == [("a", 70), ("b", 30)]
    assert decision.checks is not None
    assert decision.checks.canary is not None
    assert decision.checks.canary.header == "X-Canary"


def test_a_canary_without_a_main_path_is_reported_and_not_served() -> None:
    main, canary = world({NGINX + "canary-weight": "200"}, canary_path="/other")
    state = build_state([INGRESS_CLASS, main, canary, *service("a"), *service("b")])
    result = compile(state, SharedPool())
    paths = result.snapshot.ingress.hosts["shop.example.com"].paths
    assert [p.path for p in paths] == ["/"]
    assert paths[0].actions is None
    reasons = sorted(d.reason for d in result.diagnostics)
    assert reasons == ["CanaryNotAttached", "InvalidAnnotation"]
