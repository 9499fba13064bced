"""compile.model.manifests: the exact line named for JSON objects and for errors at the text's end.

JSON lines come from ``_json_node`` (a node per walked value, with its start line); errors
that the parsers find where the text ends name the innermost bracket still open, else the
last line that is not blank; a document nested past the JSON parser's depth names the line
where it first reaches its greatest depth.
"""

from __future__ import annotations

import pytest

from coxswain.compile.model.manifests import ManifestSyntaxError, SourcedBody, parse_manifests


def test_an_object_in_a_list_in_a_list_keeps_its_own_line() -> None:
    text = '[\n  [\n    {"kind": "A"}\n  ]\n]\n'
    assert parse_manifests(text, "in.json") == [SourcedBody({"kind": "A"}, "in.json", 3)]


def test_compact_list_items_keep_their_own_lines() -> None:
    # no space after ":" nor after ",": the members are found by their exact offsets
    text = '{"kind":"List","items":[\n{"kind":"A"},\n{"kind":"B"}\n]}'
    assert parse_manifests(text, "in.json") == [
        SourcedBody({"kind": "A"}, "in.json", 2),
        SourcedBody({"kind": "B"}, "in.json", 3),
    ]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        # a line break inside a string: the error is at the end, and no bracket is open
        ('"a\n', 1, "Invalid control character at"),
        ('\n\n"a b\n', 3, "Invalid control character at"),
        # a bracket inside a string opens nothing
        ('{\n"a": "["', 1, "the '{' opened here is never closed (Expecting ',' delimiter)"),
    ],
)
def test_a_json_error_at_the_end_names_the_open_bracket_else_the_last_line(
    text: str, line: int, message: str
) -> None:
    assert parse_manifests(text, "in.json") == ManifestSyntaxError("in.json", line, message)


def test_a_yaml_error_in_a_text_of_white_space_is_on_line_1() -> None:
    assert parse_manifests("\t", "in.yaml") == ManifestSyntaxError(
        "in.yaml",
        1,
        "while scanning for the next token, found character that cannot start any token",
    )


def test_json_nested_too_deep_names_the_line_where_it_is_first_deepest() -> None:
    # depth 1,090 after line 1, 1,101 on line 2 (the X are not brackets), 1,101 again on line 3
    text = "[" * 1100 + "]" * 10 + "\n" + "X" * 10 + "[" * 11 + "\n]["
    assert parse_manifests(text, "in.json") == ManifestSyntaxError(
        "in.json", 2, "the document nests deeper than the parser reads (about 1,000 levels)"
    )
