"""Which origins a CORS filter allows (``compile.cors.origin_allowed``; Gateway API
``HTTPCORSFilter.allowOrigins``): a wildcard host stands for at least one label, and every
pattern is tried, whatever the scheme or port of those before it."""

from __future__ import annotations

import pytest

from coxswain.compile.cors import origin_allowed, parse_origin


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://a.example.com", True),
        ("https://a.b.example.com", True),
        ("https://.example.com", False),
        ("https://example.com", False),
        ("http://a.example.com", False),
        ("https://a.example.com:8443", False),
    ],
)
def test_a_wildcard_host_stands_for_one_label_or_more(origin: str, allowed: bool) -> None:
    assert origin_allowed(["https://*.example.com"], origin) is allowed


def test_every_pattern_is_tried_after_one_of_another_scheme_or_port() -> None:
    patterns = ["http://a.example.com", "https://a.example.com:8443", "https://a.example.com"]
    assert origin_allowed(patterns, "https://a.example.com")
    assert origin_allowed(patterns, "https://a.example.com:8443")
    assert not origin_allowed(patterns, "http://a.example.com:8080")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("http://a.example:1", ("http", "a.example", 1)),
        ("http://a.example:65535", ("http", "a.example", 65535)),
        ("http://a.example:065535", None),  # six digits
        ("https://X.Example", ("https", "x.example", 443)),
        ("https://a.example://b", None),  # the scheme ends at the first "://"
        ("http://[::1]]", None),  # the literal ends at the first "]"
        ("http://[::1]:8080", ("http", "[::1]", 8080)),
    ],
)
def test_an_origin_is_parsed_at_the_bounds_of_its_port_and_its_separators(
    text: str, parsed: tuple[str, str, int] | None
) -> None:
    assert parse_origin(text) == parsed
