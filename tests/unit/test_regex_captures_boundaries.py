"""An Ingress regex path's captures (``compile.regex.PrefixMatch.captures``): a path the
proxy decoded with lone surrogates (bytes that are not UTF-8, ``route.paths``) is matched and
captured as it is, a group that took no part is empty."""

from __future__ import annotations

from coxswain.compile.regex import PrefixMatch, compile_prefix_pattern


def test_captures_keep_lone_surrogates_and_empty_groups() -> None:
    found = compile_prefix_pattern("/a/(x)?(.*)")
    assert isinstance(found, PrefixMatch)
    assert found.captures("/a/x\udcffy") == ("x", "\udcffy")
    assert found.captures("/a/é") == ("", "é")
    assert found.captures("/A/z/more") == ("", "z/more")
    assert found.captures("/b") is None
