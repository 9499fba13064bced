"""route.paths at its edges: the boundaries mutation testing found unpinned (docs/quality.md).

Each case pins one comparison or constant: a path of exactly three segments keeps its trailing
slash, only the first ``#`` starts the fragment, and only slashes are stripped before the
element prefixes are taken.
"""

from __future__ import annotations

import pytest

from coxswain.route.paths import element_prefixes, normalize_path, split_target


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/a/.", "/a/"),
        ("/a/..", "/"),
        ("/%61/", "/a/"),
        ("/a//", "/a/"),
    ],
)
def test_a_one_element_path_keeps_its_trailing_slash(raw, expected):
    assert normalize_path(raw) == expected


def test_only_the_first_hash_starts_the_fragment():
    assert split_target("/p?q#f#g") == ("/p", "?q")
    assert split_target("/p#f?q#g") == ("/p", "")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/X", ["/X", "/"]),
        ("/aX/bX", ["/aX/bX", "/aX", "/"]),
        ("/x/", ["/x", "/"]),
    ],
)
def test_element_prefixes_strip_only_slashes(path, expected):
    assert list(element_prefixes(path)) == expected
