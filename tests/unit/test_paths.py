"""route.paths: normalisation (RFC 3986 §6.2.2, merged slashes), element prefixes, targets."""

from __future__ import annotations

import pytest

from coxswain.route.paths import element_prefixes, normalize_path, split_target


@pytest.mark.parametrize(
    "path",
    ["/", "/a", "/a/b", "/a/b/", "/api/v1/users", "/a-b_c~d.e", "/a.b/c.d", "/..a", "/a.."],
)
def test_path_is_unchanged_when_already_normal(path):
    assert normalize_path(path) == path


def test_fast_path_returns_the_same_object_when_nothing_needs_work():
    path = "/plain/path/with.dots"
    assert normalize_path(path) is path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/a/./b", "/a/b"),
        ("/a/b/../c", "/a/c"),
        ("/public/../admin", "/admin"),
        ("/../admin", "/admin"),
        ("/../../..", "/"),
        ("/a/b/..", "/a/"),
        ("/a/b/.", "/a/b/"),
        ("/a/..", "/"),
        ("/.", "/"),
        ("/..", "/"),
        ("/./", "/"),
        ("/.hidden/x", "/.hidden/x"),
        ("/a/.../b", "/a/.../b"),
    ],
)
def test_dot_segments_are_removed(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/public/%2e%2e/admin", "/admin"),
        ("/public/%2E%2E/admin", "/admin"),
        ("/public/%2e./admin", "/admin"),
        ("/a/%2e/b", "/a/b"),
        ("/%2e%2e/%2e%2e/etc", "/etc"),
    ],
)
def test_encoded_dot_segments_are_removed(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("//a", "/a"), ("/a//b", "/a/b"), ("/a///b//", "/a/b/"), ("//", "/"), ("///a/./../b", "/b")],
)
def test_runs_of_slashes_are_merged(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/%41%42%43", "/ABC"),
        ("/%61bc", "/abc"),
        ("/%7Euser", "/~user"),
        ("/%7euser", "/~user"),
        ("/a%2Db%5Fc", "/a-b_c"),
        ("/v%31", "/v1"),
        ("/%5A%7A", "/Zz"),
    ],
)
def test_unreserved_escapes_are_decoded(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "/a%2Fb",
        "/a%2fb",
        "/a%20b",
        "/a%25b",
        "/%252e%252e/x",
        "/a%3Fb",
        "/a%23b",
        "/%40",
        "/%5B%5D",
        "/%60",
        "/%7B",
        "/%C3%A9",
    ],
)
def test_reserved_and_other_escapes_are_kept_as_sent(raw):
    assert normalize_path(raw) == raw


def test_an_encoded_slash_does_not_become_a_segment_boundary():
    assert normalize_path("/public%2F..%2Fadmin") == "/public%2F..%2Fadmin"
    assert normalize_path("/public/x%2F../admin") == "/public/x%2F../admin"


def test_escapes_are_decoded_only_once():
    assert normalize_path("/%2541") == "/%2541"


@pytest.mark.parametrize(("raw", "expected"), [("/a/b/", "/a/b/"), ("/a/./b/", "/a/b/")])
def test_trailing_slash_is_kept(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    "raw", ["/a/./b/../c//d/", "/%2e%2e/x/%41/", "//a//b", "/a/b/..", "/%7e/./~"]
)
def test_normalisation_is_idempotent(raw):
    once = normalize_path(raw)
    assert normalize_path(once) == once


# --- element_prefixes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", ["/"]),
        ("/a", ["/a", "/"]),
        ("/a/", ["/a", "/"]),
        ("/a/b/c", ["/a/b/c", "/a/b", "/a", "/"]),
        ("/a/b/", ["/a/b", "/a", "/"]),
        ("/foobar", ["/foobar", "/"]),
    ],
)
def test_element_prefixes_are_whole_elements_longest_first(path, expected):
    assert list(element_prefixes(path)) == expected


def test_element_prefixes_never_split_inside_an_element():
    assert "/foo" not in list(element_prefixes("/foobar/baz"))


# --- split_target -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/a/b", ("/a/b", "")),
        ("/a?x=1&y=2", ("/a", "?x=1&y=2")),
        ("/a?", ("/a", "?")),
        ("/a?x=/../y", ("/a", "?x=/../y")),
        ("/a?x=1?2", ("/a", "?x=1?2")),
        ("/a#frag", ("/a", "")),
        ("/a?x=1#frag", ("/a", "?x=1")),
        ("/a#frag?x=1", ("/a", "")),
        ("", ("/", "")),
        ("?x=1", ("/", "?x=1")),
    ],
)
def test_split_target_separates_path_and_query_and_drops_the_fragment(target, expected):
    assert split_target(target) == expected
