"""The checks of ingress-nginx's path and URL annotations at their edges
(``compile.ingress.annotations.parse_options``; docs/migrating-from-ingress-nginx.md): each value
kept as written or refused with the exact finding, and redirect statuses from 300 to their
highest."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from coxswain.compile import build_state
from coxswain.compile.ingress.annotations import parse_options
from coxswain.compile.snapshot import IngressActions
from tests.unit.ingress_world import ingress, path, rule

NGINX = "nginx.ingress.kubernetes.io/"
NOT_APPLIED = "the annotation is not applied"


def parsed(annotations: dict[str, str]) -> tuple[IngressActions, list[str]]:
    """The path actions (empty ones when none) and the message of each finding."""
    body = ingress(
        "web",
        rule("a.example", path("/", "a")),
        annotations={NGINX + k: v for k, v in annotations.items()},
    )
    (only,) = build_state([body]).ingresses.values()
    options, found = parse_options(only)
    return options.actions or IngressActions(), [d.message for d in found]


@pytest.mark.parametrize(
    ("annotation", "value", "field", "problem"),
    [
        ("app-root", "/app", "app_root", None),
        ("app-root", "app", "app_root", "does not start with /"),
        ("app-root", "/a\x01b", "app_root", "holds a space or a control character"),
        ("upstream-vhost", "svc.example:8080", "upstream_vhost", None),
        ("upstream-vhost", "a b", "upstream_vhost", "holds a space or a control character"),
        ("upstream-vhost", "a/b", "upstream_vhost", "is not a host[:port]"),
        ("upstream-vhost", "$host", "upstream_vhost", "is not a host[:port]"),
        ("upstream-vhost", "é.example", "upstream_vhost", "is not a host[:port]"),
        ("temporal-redirect", "http://b.example/x", "redirect", None),
        ("temporal-redirect", "https://b.example$request_uri", "redirect", None),
        ("temporal-redirect", "$scheme://b.example/", "redirect", None),
        ("temporal-redirect", "/elsewhere", "redirect", None),
        (
            "temporal-redirect",
            "ftp://b.example/",
            "redirect",
            "is not an http(s) URL or an absolute path",
        ),
        ("temporal-redirect", "/é", "redirect", "is not ASCII"),
        ("temporal-redirect", "/a\x7f", "redirect", "holds a space or a control character"),
        (
            "temporal-redirect",
            "https://b.example/$zz/$aa/$uri",
            "redirect",
            "names nginx variables Coxswain does not expand: aa, zz",
        ),
    ],
)
def test_a_value_is_kept_as_written_or_refused_saying_why(
    annotation: str, value: str, field: str, problem: str | None
) -> None:
    actions, found = parsed({annotation: value})
    if problem is None:
        assert (getattr(actions, field), found) == (value, [])
        return
    assert getattr(actions, field) is None
    if problem == "is not a host[:port]":
        problem += " (nginx variables are not expanded here)"
    assert found == [f"{value!r} {problem}; {NOT_APPLIED}"]


def test_an_empty_value_is_refused() -> None:
    assert parsed({"app-root": " "}) == (IngressActions(), [f"'' is empty; {NOT_APPLIED}"])


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("/p\tq", None),
        ("/p", None),
        ("/p\x01", "holds a control character"),
        ("/é", "is not ASCII"),
    ],
)
def test_x_forwarded_prefix_is_a_header_value(value: str, problem: str | None) -> None:
    actions, found = parsed({"rewrite-target": "/", "x-forwarded-prefix": value})
    if problem is None:
        assert (actions.x_forwarded_prefix, found) == (value, [])
    else:
        assert (actions.x_forwarded_prefix, found) == (
            None,
            [f"{value!r} {problem}; {NOT_APPLIED}"],
        )


@given(code=st.sampled_from(["299", "300", "301", "307", "308", "x", "3" * 25]))
@example(code="300")
@example(code="x")
@example(code="3" * 25)
def test_a_temporal_redirect_code_is_300_to_307_else_302(code: str) -> None:
    actions, found = parsed({"temporal-redirect": "/there", "temporal-redirect-code": code})
    if code.isdigit() and 300 <= int(code) <= 307:
        assert (actions.redirect_status, found) == (int(code), [])
    else:
        why = f"{code[:20]!r} is not a status from 300 to 307; 302 applies"
        assert (actions.redirect_status, found) == (302, [why])


@pytest.mark.parametrize(("code", "status"), [("300", 300), ("308", 308), ("309", 301)])
def test_a_permanent_redirect_code_is_300_to_308_else_301(code: str, status: int) -> None:
    actions, _ = parsed({"permanent-redirect": "/there", "permanent-redirect-code": code})
    assert actions.redirect_status == status
