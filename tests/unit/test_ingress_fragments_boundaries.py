"""``compile.ingress.fragments`` at its edges: a path whose rewrite-target is the path itself
or names groups its pattern lacks, a pattern RE2 refuses, the default backend's actions without
the rewrite, and the installation's timeouts beside an Ingress's own
(docs/migrating-from-ingress-nginx.md: rewrite-target, x-forwarded-prefix, "Global defaults")."""

from __future__ import annotations

from typing import Any

import pytest
from pyrsistent import pmap

from coxswain.compile import build_state
from coxswain.compile.backends import index_services
from coxswain.compile.config import IngressDefaults
from coxswain.compile.ingress.fragments import NO_DEFAULTS, IngressFragment, ingress_fragment
from coxswain.compile.model.decode import Decoded, decode_object
from coxswain.compile.snapshot import IngressActions
from tests.unit.ingress_world import ingress, path, rule, service

NGINX = "nginx.ingress.kubernetes.io/"
SERVICES = index_services(build_state(service("web")))


def _fragment(body: dict[str, Any], given: IngressDefaults = NO_DEFAULTS) -> IngressFragment:
    decoded = decode_object(body)
    assert isinstance(decoded, Decoded)
    return ingress_fragment(decoded.obj, SERVICES, lambda _host: False, pmap(), given)


def _one_path(p: str, annotations: dict[str, str]) -> IngressFragment:
    return _fragment(
        ingress("site", rule("a.example.com", path(p, "web")), annotations=annotations)
    )


def test_a_rewrite_target_equal_to_the_path_is_no_rewrite_nor_forwarded_prefix() -> None:
    found = _one_path(
        "/app", {NGINX + "rewrite-target": "/app", NGINX + "x-forwarded-prefix": "/p"}
    )
    assert [c.rule.actions for c in found.paths] == [IngressActions()]
    assert found.found == ()


def test_a_rewrite_naming_missing_groups_names_them_all_and_cuts_the_target() -> None:
    target = "/" + "b" * 90 + "/$2/$3"
    found = _one_path(
        "/(x)", {NGINX + "rewrite-target": target, NGINX + "x-forwarded-prefix": "/p"}
    )
    assert [c.rule.actions for c in found.paths] == [IngressActions()]
    assert [d.message for d in found.found] == [
        f"rewrite-target {target[:80]!r} names capture group(s) $2, $3 that this path's "
        "pattern has not; this path is forwarded without the rewrite"
    ]


def test_a_pattern_re2_refuses_is_named_by_its_first_80_characters() -> None:
    pattern = "/" + "a" * 100 + "("
    found = _one_path(pattern, {NGINX + "use-regex": "true"})
    assert found.paths == ()
    assert [d.message.split(" is not a regular expression")[0] for d in found.found] == [
        repr(pattern[:80])
    ]


@pytest.mark.parametrize(
    ("annotations", "actions"),
    [
        ({"rewrite-target": "/$1"}, None),
        (
            {"rewrite-target": "/$1", "x-forwarded-prefix": "/p", "proxy-connect-timeout": "5"},
            IngressActions(connect_timeout=5.0),
        ),
        ({"proxy-connect-timeout": "5"}, IngressActions(connect_timeout=5.0)),
    ],
    ids=["rewrite-only", "rewrite-and-timeout", "timeout-only"],
)
def test_the_default_backend_is_served_without_the_rewrite(
    annotations: dict[str, str], actions: IngressActions | None
) -> None:
    body = ingress(
        "site",
        default="web",
        annotations={NGINX + name: value for name, value in annotations.items()},
    )
    assert [rule.actions for _host, rule in _fragment(body).defaults] == [actions]


@pytest.mark.parametrize(
    ("annotations", "timeout"),
    [({}, 7.0), ({NGINX + "proxy-connect-timeout": "3"}, 3.0)],
    ids=["default", "annotated"],
)
def test_the_connect_timeout_default_applies_where_the_ingress_sets_none(
    annotations: dict[str, str], timeout: float
) -> None:
    found = _fragment(
        ingress("site", default="web", annotations=annotations),
        IngressDefaults(connect_timeout=7.0),
    )
    assert found.options is not None
    assert found.options.actions == IngressActions(connect_timeout=timeout)
