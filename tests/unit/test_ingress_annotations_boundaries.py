"""ingress-nginx's annotations at their edges (``compile.ingress.annotations.parse_options``;
docs/migrating-from-ingress-nginx.md): the length and range bounds of values, the CORS
annotations beside ``enable-cors``, the retry annotations, ``server-alias``, and the exact
finding for each value refused."""

from __future__ import annotations

import pytest

from coxswain.compile.ingress.annotations import (
    MAX_SECONDS,
    MAX_TRIES,
    MAX_VALUE,
    IngressOptions,
    parse_options,
)
from coxswain.compile.snapshot import IngressActions
from tests.unit.ingress_world import annotated


def options(annotations: dict[str, str]) -> tuple[IngressOptions, list[str]]:
    """The options of one Ingress with these annotations, and each finding's message."""
    only, _ = annotated(annotations)
    read, found = parse_options(only)
    return read, [d.message for d in found]


def actions(annotations: dict[str, str]) -> tuple[IngressActions, list[str]]:
    read, found = options(annotations)
    assert read.actions is not None
    return read.actions, found


def test_an_ingress_without_annotations_has_no_actions():
    assert options({}) == (IngressOptions(), [])


def test_a_value_of_the_longest_length_is_kept_and_a_longer_one_refused_with_its_start():
    longest = "/" + "a" * (MAX_VALUE - 1)
    assert actions({"app-root": longest}) == (IngressActions(app_root=longest), [])
    longer = longest + "a"
    assert options({"app-root": longer}) == (
        IngressOptions(),
        [f"{longer[:80]!r} longer than {MAX_VALUE} characters; the annotation is not applied"],
    )


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("0.5", 0.5), ("1", 1.0), (str(MAX_SECONDS), float(MAX_SECONDS))],
)
def test_seconds_above_zero_to_a_week_are_kept(value, seconds):
    assert actions({"proxy-read-timeout": value}) == (IngressActions(read_timeout=seconds), [])


@pytest.mark.parametrize(
    "value", ["0", "-1", str(MAX_SECONDS + 1), "nan", "12345678901234567890123"]
)
def test_other_seconds_are_refused_and_none_apply(value):
    assert options({"proxy-connect-timeout": value}) == (
        IngressOptions(),
        [f"{value[:20]!r} is not a number of seconds from 0 to {MAX_SECONDS}"],
    )


def test_a_permanent_redirect_code_without_the_redirect_is_not_read():
    assert options({"permanent-redirect-code": "200"}) == (IngressOptions(), [])


def test_the_forwarded_prefix_applies_only_with_a_rewrite():
    assert options({"x-forwarded-prefix": "/p"}) == (IngressOptions(), [])
    read, found = actions({"rewrite-target": "/", "x-forwarded-prefix": "/p"})
    assert (read.rewrite_target, read.x_forwarded_prefix, found) == ("/", "/p", [])


def test_cors_annotations_beside_enable_cors():
    read, found = actions(
        {
            "enable-cors": "true",
            "cors-allow-origin": "https://A.example, https://b.example",
            "cors-allow-methods": "get, POST",
            "cors-allow-headers": "X-One",
            "cors-expose-headers": "X-Two, X-Three",
            "cors-allow-credentials": "false",
            "cors-max-age": "600",
        }
    )
    assert found == []
    assert read.cors is not None
    assert list(read.cors.allow_origins) == ["https://A.example", "https://b.example"]
    assert list(read.cors.allow_methods) == ["GET", "POST"]
    assert list(read.cors.allow_headers) == ["x-one"]
    assert list(read.cors.expose_headers) == ["x-two", "x-three"]
    assert read.cors.allow_credentials is False
    assert read.cors.max_age == 600


@pytest.mark.parametrize(
    ("value", "max_age"),
    [("123456789", 123456789), ("1234567890", 1728000), ("-5", 1728000), ("1h", 1728000)],
)
def test_a_cors_max_age_of_nine_digits_at_most_is_kept_else_the_default(value, max_age):
    read, _ = actions({"enable-cors": "true", "cors-max-age": value})
    assert read.cors is not None
    assert read.cors.max_age == max_age


def test_cors_defaults_are_ingress_nginx_s():
    read, found = actions({"enable-cors": "true"})
    assert found == []
    assert read.cors is not None
    assert list(read.cors.allow_origins) == ["*"]
    assert read.cors.allow_credentials is True
    assert list(read.cors.expose_headers) == []
    assert read.cors.max_age == 1728000


@pytest.mark.parametrize(
    ("tries", "count"), [("0", MAX_TRIES), ("1", 1), ("5", 5), (str(MAX_TRIES), MAX_TRIES)]
)
def test_next_upstream_tries_to_the_bound(tries, count):
    read, found = actions({"proxy-next-upstream-tries": tries})
    assert (read.next_upstream_tries, list(read.next_upstream_codes), found) == (count, [], [])


@pytest.mark.parametrize("tries", [str(MAX_TRIES + 1), "x" * 30, "-1"])
def test_other_tries_are_refused_and_three_apply(tries):
    read, found = actions({"proxy-next-upstream-tries": tries})
    assert read.next_upstream_tries == 3
    assert found == [f"{tries[:20]!r} is not a count to {MAX_TRIES}; 3 applies"]


def test_every_case_ingress_nginx_names_is_taken_and_others_refused():
    token = "http_418_and_a_long_tail"
    read, found = actions(
        {
            "proxy-next-upstream": (
                f"error timeout invalid_header non_idempotent http_502 http_503 {token}"
            )
        }
    )
    assert list(read.next_upstream_codes) == [502, 503]
    assert found == [f"{token[:20]!r} is not a proxy-next-upstream case"]


def test_server_aliases_are_host_names_and_wildcards_at_most_64():
    names = [f"h{n}.example" for n in range(70)]
    read, found = options({"server-alias": ", ".join(["a.b", "*.a.example", *names])})
    assert read.server_aliases == ("a.b", "*.a.example", *names[:62])
    assert found == []
    read, found = options({"server-alias": "*., a..b"})
    assert read.server_aliases == ()
    assert found == [
        "'*.' is not a host name; this alias is not served",
        "'a..b' is not a host name; this alias is not served",
    ]
