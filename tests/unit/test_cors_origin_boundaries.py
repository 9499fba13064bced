"""Which origins a CORS filter allows (``compile.cors.origin_allowed``; Gateway API
``HTTPCORSFilter.allowOrigins``): a wildcard host stands for at least one label, and every
pattern is tried, whatever the scheme or port of those before it."""

from __future__ import annotations

import pytest

from coxswain.compile.cors import origin_allowed


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
