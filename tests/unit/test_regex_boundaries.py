"""``compile.regex`` at its edges: the length limit, the program memory limit, case, text RE2
cannot take, and the exact reasons given for a refusal (docs/quality.md, "Killing a survivor")."""

from __future__ import annotations

import re2

from coxswain.compile.regex import MAX_PATTERN_LENGTH, FullMatch, _reason, compile_pattern


def test_a_pattern_of_exactly_the_limit_compiles_and_one_more_character_is_refused():
    assert isinstance(compile_pattern("a" * MAX_PATTERN_LENGTH), FullMatch)
    assert compile_pattern("a" * (MAX_PATTERN_LENGTH + 1)) == (
        f"longer than {MAX_PATTERN_LENGTH} characters"
    )


def test_a_program_over_a_mebibyte_is_refused_though_re2_alone_would_take_it():
    """Two letter classes of up to 100 each fit RE2's default 8 MiB, not our 1 MiB."""
    assert compile_pattern("(?:\\pL{1,100}){1,2}") == "RE2: pattern too large - compile failed"


def test_matching_is_case_sensitive():
    pattern = compile_pattern("/api/[a-z]+")
    assert isinstance(pattern, FullMatch)
    assert pattern.matches("/api/users")
    assert not pattern.matches("/API/users")
    assert not pattern.matches("/api/Users")


def test_a_pattern_that_is_not_unicode_text_says_so():
    assert compile_pattern("/\ud800") == "not valid Unicode text"


def test_a_lone_surrogate_in_the_text_is_matched_as_its_bytes_never_raising():
    pattern = compile_pattern("/.+")
    assert isinstance(pattern, FullMatch)
    assert pattern.matches("/\ud800")
    exact = compile_pattern("/x")
    assert isinstance(exact, FullMatch)
    assert not exact.matches("/\ud800")


def test_a_refusal_gives_re2s_reason_and_writes_nothing(capfd):
    """RE2 would log the error to the process's stderr: the core does no I/O."""
    assert compile_pattern("[0-9") == "RE2: missing ]: [0-9"
    assert capfd.readouterr() == ("", "")


def test_the_reason_of_an_error_without_detail_or_with_bytes_that_are_not_utf8():
    assert _reason(re2.error()) == "RE2 refuses it"
    assert _reason(re2.error(b"")) == "RE2 refuses it"
    assert _reason(re2.error(b"bad \xff byte")) == "RE2: bad \ufffd byte"


def test_a_route_match_tracks_no_groups() -> None:
    # only whether it matches counts: RE2 is told so (never_capture), which makes it cheaper
    pattern = compile_pattern("(a)(b)")
    assert isinstance(pattern, FullMatch)
    assert pattern._program.groups == 0
