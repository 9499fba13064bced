"""route.target at its edges: each request-target form, and the reason a refused one gets
(docs/quality.md: pinned where mutation testing found nothing noticed)."""

from __future__ import annotations

import pytest

from coxswain.route.target import Target, origin_form

NOT_A_FORM = "the request target is not origin-form, absolute-form or asterisk-form"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/a?b", Target("/a?b", None)),
        ("*", Target("*", None)),
        ("http://c.example/x?y", Target("/x?y", "c.example")),
        ("HTTPS://c.example:8443", Target("/", "c.example:8443")),
        ("http://c.example?q", Target("/?q", "c.example")),
        ("http://c.example#f", Target("/#f", "c.example")),
        ("http://c.example/p://q", Target("/p://q", "c.example")),
        ("http://c.example?a/b", Target("/?a/b", "c.example")),
        ("http://c.example#a?b/c", Target("/#a?b/c", "c.example")),
    ],
)
def test_each_form_gives_its_origin_form_and_authority(target, expected):
    assert origin_form(target) == expected


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("a.example/x", NOT_A_FORM),
        ("**", NOT_A_FORM),
        ("", NOT_A_FORM),
        ("ftp://c.example/x", "the request target's scheme 'ftp' is not http or https"),
        ("Ftp://c.example/x", "the request target's scheme 'Ftp' is not http or https"),
        ("http:///x", "the request target's authority '' is empty or has userinfo"),
        (
            "http://u@c.example/x",
            "the request target's authority 'u@c.example' is empty or has userinfo",
        ),
        ("http://?x", "the request target's authority '' is empty or has userinfo"),
    ],
)
def test_a_target_that_cannot_be_served_says_why(target, reason):
    assert origin_form(target) == reason


def test_the_authority_ends_only_at_a_slash_question_mark_or_hash() -> None:
    assert origin_form("http://aXb/p") == Target("/p", "aXb")
